#include "magmadnn/dmath/gemm.h"

#include <optional>
#include <string>

#include "magmadnn/core/errors.h"
#include "magmadnn/dmath/operand.h"
#include "magmadnn/dmath/plan_cache_detail.h"

namespace magmadnn::distributed::dmath {

template <typename T>
GemmPlan gemm(T alpha, const DistMatrix<T>& A, bool trans_a, const DistMatrix<T>& B, bool trans_b, T beta,
              DistMatrix<T>& C, std::optional<GemmAlgorithm> force) {
  MAGMADNN_CHECK(&A.comm() == &C.comm() && &B.comm() == &C.comm(), ValueError,
                 "gemm: A, B and C must live on the same communicator");
  MAGMADNN_CHECK(!A.layout().shards() && !B.layout().shards() && !C.layout().shards(), ValueError,
                 "gemm: row_shards and col_shards layouts are not supported; redistribute to a block layout first (A "
                     << A.layout().str() << ", B " << B.layout().str() << ", C " << C.layout().str() << ")");
  const int ranks = C.comm().size();
  const std::string key = A.layout().str() + (trans_a ? " T * " : " * ") + B.layout().str() +
                          (trans_b ? " T -> " : " -> ") + C.layout().str() + " / " + std::to_string(ranks) +
                          (force ? std::string(" forced ") + gemm_algorithm_name(*force) : std::string());
  const GemmPlan plan = *detail::plan_store<GemmPlan>().get(key, [&] {
    return plan_gemm(A.layout(), trans_a, B.layout(), trans_b, C.layout(), ranks, force);
  });
  // The remapped operand is stored as the transpose of its target when
  // flagged, so that op() of it has the layout the plan asks for.
  std::optional<DistMatrix<T>> a2, b2;
  if (plan.remap_a) a2.emplace(A.redistribute(trans_a ? plan.op_a.transposed() : plan.op_a));
  if (plan.remap_b) b2.emplace(B.redistribute(trans_b ? plan.op_b.transposed() : plan.op_b));
  const detail::Operand<T> a(a2 ? *a2 : A, trans_a), b(b2 ? *b2 : B, trans_b);
  switch (plan.algorithm) {
    case GemmAlgorithm::local: detail::gemm_local(alpha, a, b, beta, C); break;
    case GemmAlgorithm::reduce: detail::gemm_reduce(alpha, a, b, beta, C); break;
    case GemmAlgorithm::summa: detail::gemm_summa(alpha, a, b, beta, C); break;
  }
  C.mark_changed();
  return plan;
}

template GemmPlan gemm<float>(float, const DistMatrix<float>&, bool, const DistMatrix<float>&, bool, float,
                              DistMatrix<float>&, std::optional<GemmAlgorithm>);
template GemmPlan gemm<double>(double, const DistMatrix<double>&, bool, const DistMatrix<double>&, bool, double,
                               DistMatrix<double>&, std::optional<GemmAlgorithm>);

}  // namespace magmadnn::distributed::dmath
