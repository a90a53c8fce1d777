/// @file gemm.h
/// Distributed GEMM: C = alpha * op(A) * op(B) + beta * C for DistMatrix
/// operands in any layouts (dMath §3.2's layout independence), op being the
/// identity or the transpose. C keeps its layout; A and B are remapped
/// (redistribute.h) only when the algorithm chosen needs it.
///
/// Algorithms (GemmAlgorithm), chosen by plan_gemm from the layouts alone,
/// so every rank chooses the same without communicating:
///  - local:  each rank's block of C needs only the rows of op(A) and the
///            columns of op(B) it holds, whole along k (op(A) split by rows
///            like C with op(B) replicated, the mirror image over columns,
///            or both replicated): no communication at all;
///  - reduce: op(A) split by columns and op(B) by rows along the same k
///            blocks: every rank forms a partial m x n product of its k
///            slice, then one reduce-scatter into C's layout (allreduce when
///            C is replicated);
///  - summa:  C split over a Pr x Pc grid (any layout but replicated; row-
///            and column-block are P x 1 and 1 x P grids), op(A) on the same grid
///            with C's row blocks, op(B) with C's column blocks (k blocks
///            free): for each k panel, its owner column broadcasts the A
///            panel along process rows and its owner row the B panel down
///            process columns, and every rank accumulates a local product;
///            the next panel's messages are posted before this panel's
///            product (one panel of look-ahead).
/// Candidates are each algorithm on the operands as they are and on the
/// cheapest remapping of op(A) and op(B) that fits it (keeping an operand
/// already in place). Each is costed by the elements a rank receives
/// (remapping plus the algorithm's own traffic), and the cheapest that fits
/// runs; ties go to operands as they are, then to local, reduce and summa in
/// that order. `force` restricts the
/// choice to one algorithm (the cheapest way to run it), for benchmarks and
/// tests; NotSupportedError when it cannot run (summa needs a C that is not
/// replicated). A transposed operand costs nothing: the transpose of a
/// layout keeps every element on its rank (Layout::transposed), and the
/// local products take the transpose flag.
///
/// Requires: op(A) is m x k, op(B) k x n, C m x n (ShapeError otherwise);
/// the three matrices share one Communicator object (ValueError); every
/// rank calls gemm with the same layouts, flags, alpha and beta; no
/// row_shards or col_shards layout (ValueError: redistribute first).
/// Guarantees: C equals the single-process product up to the rounding of a
/// different summation order (each element is a sum of the same k products);
/// beta == 0 overwrites C without reading it. Point-to-point messages use
/// kSummaTagA/kSummaTagB and redistribute's tag; collectives are the
/// communicator's.
#pragma once

#include <cstdint>
#include <optional>

#include "magmadnn/dmath/dist_matrix.h"

namespace magmadnn::distributed::dmath {

enum class GemmAlgorithm : std::uint8_t { local = 0, reduce = 1, summa = 2 };
const char* gemm_algorithm_name(GemmAlgorithm a) noexcept;

inline constexpr int kSummaTagA = 0x6d01;
inline constexpr int kSummaTagB = 0x6d02;

/// What gemm does for given layouts: the algorithm, and the layouts that
/// op(A) and op(B) are brought to first (equal to their own when not
/// remapped). `received` estimates the elements a rank receives.
struct GemmPlan {
  GemmAlgorithm algorithm = GemmAlgorithm::local;
  Layout op_a = Layout::replicated(0, 0), op_b = Layout::replicated(0, 0);
  bool remap_a = false, remap_b = false;
  double received = 0;
};

/// The plan for layouts a, b (as stored) and c over a group of `ranks`.
/// Throws ShapeError when the shapes do not chain.
GemmPlan plan_gemm(const Layout& a, bool trans_a, const Layout& b, bool trans_b, const Layout& c, int ranks,
                   std::optional<GemmAlgorithm> force = std::nullopt);

/// C = alpha * op(A) * op(B) + beta * C. Collective. Returns the plan run.
template <typename T>
GemmPlan gemm(T alpha, const DistMatrix<T>& A, bool trans_a, const DistMatrix<T>& B, bool trans_b, T beta,
              DistMatrix<T>& C, std::optional<GemmAlgorithm> force = std::nullopt);

extern template GemmPlan gemm<float>(float, const DistMatrix<float>&, bool, const DistMatrix<float>&, bool, float,
                                     DistMatrix<float>&, std::optional<GemmAlgorithm>);
extern template GemmPlan gemm<double>(double, const DistMatrix<double>&, bool, const DistMatrix<double>&, bool,
                                      double, DistMatrix<double>&, std::optional<GemmAlgorithm>);

}  // namespace magmadnn::distributed::dmath
