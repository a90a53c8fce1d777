/// @file winograd_transform.h
/// Internal to the CPU Winograd algorithm: the F(MxM, 3x3) matrices (Lavin &
/// Gray) for M = 2 and 4, and `sandwich`, the one routine that applies every
/// Winograd transform (filter, input, output, gradient of output, gradient of
/// filter) as out = Lm . in . Rm^T to L independent tiles at once.
///
/// Why one routine over lanes: the transforms are tiny (at most 6x6) matrix
/// products with constant coefficients, a third of them zero. Done one tile at
/// a time they are scalar code and, at 56x56 images, cost more than the GEMMs
/// that Winograd saves. Laid out as [row][column][lane], L tiles are one
/// vector per element, each coefficient a broadcast constant, and zero
/// coefficients are skipped at compile time (the matrices are template
/// arguments, so after unrolling every coefficient is a literal).
#pragma once

namespace magmadnn::conv::winograd {

/// A constant R x C matrix usable as a template argument.
template <int R, int C>
struct Matrix {
  static constexpr int rows = R;
  static constexpr int cols = C;
  double v[R][C];

  constexpr Matrix<C, R> transposed() const {
    Matrix<C, R> t{};
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) t.v[j][i] = v[i][j];
    return t;
  }
};

/// The matrices of F(MxM, 3x3), alpha = M + 2: Y = AT [ (G g G^T) . (BT d BT^T) ] AT^T.
template <int M>
struct Matrices;
template <>
struct Matrices<2> {
  static constexpr Matrix<4, 4> BT{{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}};
  static constexpr Matrix<4, 3> G{{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}};
  static constexpr Matrix<2, 4> AT{{{1, 1, 1, 0}, {0, 1, -1, -1}}};
};
template <>
struct Matrices<4> {
  static constexpr Matrix<6, 6> BT{{{4, 0, -5, 0, 1, 0},
                                    {0, -4, -4, 1, 1, 0},
                                    {0, 4, -4, -1, 1, 0},
                                    {0, -2, -1, 2, 1, 0},
                                    {0, 2, -1, -2, 1, 0},
                                    {0, 4, 0, -5, 0, 1}}};
  static constexpr Matrix<6, 3> G{{{1.0 / 4, 0, 0},
                                   {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                   {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                   {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                   {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                   {0, 0, 1}}};
  static constexpr Matrix<4, 6> AT{
      {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
};

/// out[p][r][l] = sum_q sum_s Lm[p][q] * in[q][s][l] * Rm[r][s], for every lane l.
/// Requires: in is Lm.cols x Rm.cols x L, out is Lm.rows x Rm.rows x L.
template <auto Lm, auto Rm, typename T, int L>
inline void sandwich(const T (&in)[decltype(Lm)::cols][decltype(Rm)::cols][L],
                     T (&out)[decltype(Lm)::rows][decltype(Rm)::rows][L]) {
  constexpr int P = decltype(Lm)::rows, Q = decltype(Lm)::cols;
  constexpr int R = decltype(Rm)::rows, S = decltype(Rm)::cols;
  T tmp[P][S][L];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) {
      T acc[L] = {};
#pragma GCC unroll 8
      for (int q = 0; q < Q; ++q) {
        if (Lm.v[p][q] == 0) continue;
        const T c = static_cast<T>(Lm.v[p][q]);
        for (int l = 0; l < L; ++l) acc[l] += c * in[q][s][l];
      }
      for (int l = 0; l < L; ++l) tmp[p][s][l] = acc[l];
    }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      T acc[L] = {};
#pragma GCC unroll 8
      for (int s = 0; s < S; ++s) {
        if (Rm.v[r][s] == 0) continue;
        const T c = static_cast<T>(Rm.v[r][s]);
        for (int l = 0; l < L; ++l) acc[l] += c * tmp[p][s][l];
      }
      for (int l = 0; l < L; ++l) out[p][r][l] = acc[l];
    }
}

}  // namespace magmadnn::conv::winograd
