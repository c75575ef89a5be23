// TH's raw LAPACK calls (THLapack.h) over column-major host memory, as
// Fortran's LAPACK took it, on torch.linalg, for float and double (TH built
// THLapack for those two only): gesv, getrf, getrs, getri, trtrs and syev,
// with LAPACK's outputs (the LU factors in place, 1-based pivots, info).
// An argument LAPACK would have refused (its info < 0) raises, naming it.
#include <cctype>
#include <cstring>

#include "THRuntime.h"

namespace {

template <class real>
int32_t dtype_for() {
  return std::is_same_v<real, float> ? aoti_torch_dtype_float32() : aoti_torch_dtype_float64();
}

[[noreturn]] void refuse(const char* fn, const std::string& why) {
  throw std::runtime_error(std::string(fn) + ": " + why);
}

void at_least(int64_t value, int64_t least, const char* name, const char* fn) {
  if (value < least)
    refuse(fn, std::string(name) + " must be >= " + std::to_string(least) + ", got " +
                   std::to_string(value));
}

// A LAPACK flag, upper case, one of `allowed`
char letter(char value, const char* name, const char* allowed, const char* fn) {
  const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(value)));
  if (c == 0 || std::strchr(allowed, c) == nullptr)
    refuse(fn, std::string(name) + " must be one of \"" + allowed + "\", got '" + value + "'");
  return c;
}

// The rows x cols column-major matrix at p, columns ld apart, as a tensor
// [rows, cols] over that memory
template <class real>
Tensor matrix_at(real* p, int64_t rows, int64_t cols, int64_t ld, const char* name,
                 const char* ld_name, const char* fn) {
  at_least(ld, std::max<int64_t>(1, rows), ld_name, fn);
  if (rows > 0 && cols > 0 && p == nullptr)
    refuse(fn, std::string(name) + " is NULL for a " + std::to_string(rows) + " x " +
                   std::to_string(cols) + " matrix");
  return torch::stable::transpose(column_major_t(p, rows, cols, ld, dtype_for<real>(), false, fn),
                                  0, 1);
}

// n ints at p (the pivots), as a tensor over that memory
Tensor ints_at(int* p, int64_t n, const char* name, const char* fn) {
  if (n > 0 && p == nullptr)
    refuse(fn, std::string(name) + " is NULL for " + std::to_string(n) + " pivots");
  return wrap(p, {n}, {1}, aoti_torch_dtype_int32(), false, fn);
}

int* info_at(int* info, const char* fn) {
  if (info == nullptr) refuse(fn, "info is NULL");
  *info = 0;
  return info;
}

// A's LU factors with partial pivoting in place, ipiv the 1-based pivots;
// LAPACK's getrf info: i > 0 when U(i, i) is exactly zero
template <class real>
void lu_in_place(const Tensor& A, int* ipiv, int64_t pivots, int* info, const char* fn) {
  const std::vector<Tensor> out =
      results(3, "aten::linalg_lu_factor_ex", "", fn, A, true, false);  // LU, pivots, info
  Tensor a = A, piv = ints_at(ipiv, pivots, "ipiv", fn);
  torch::stable::copy_(a, out[0]);
  torch::stable::copy_(piv, out[1]);
  *info = static_cast<int>(item(out[2], fn));
}

Tensor diagonal_of(const Tensor& A, const char* fn) {
  return aten("aten::diagonal", "", fn, A, int64_t{0}, int64_t{0}, int64_t{1});
}

// The first i (1-based) with A(i, i) == 0, or 0
int zero_diagonal(const Tensor& A, const char* fn) {
  const Tensor zero = aten("aten::eq", "Tensor", fn, diagonal_of(A, fn), scalar_like(A, 0.0));
  const Tensor found = aten("aten::nonzero", "", fn, zero);
  return sizes(found)[0] == 0 ? 0 : static_cast<int>(item(selected(found, 0, 0, fn), fn)) + 1;
}

template <class real>
void gesv(int n, int nrhs, real* a, int lda, int* ipiv, real* b, int ldb, int* info,
          const char* fn) {
  info_at(info, fn);
  at_least(n, 0, "n", fn);
  at_least(nrhs, 0, "nrhs", fn);
  const Tensor A = matrix_at(a, n, n, lda, "a", "lda", fn);
  const Tensor B = matrix_at(b, n, nrhs, ldb, "b", "ldb", fn);
  if (n == 0) return;
  lu_in_place<real>(A, ipiv, n, info, fn);
  if (*info != 0 || nrhs == 0) return;
  Tensor X = B;
  torch::stable::copy_(
      X, aten("aten::linalg_lu_solve", "", fn, A, ints_at(ipiv, n, "ipiv", fn), B, true, false));
}

template <class real>
void getrs(char trans, int n, int nrhs, real* a, int lda, int* ipiv, real* b, int ldb, int* info,
           const char* fn) {
  info_at(info, fn);
  const bool t = letter(trans, "trans", "NTC", fn) != 'N';
  at_least(n, 0, "n", fn);
  at_least(nrhs, 0, "nrhs", fn);
  const Tensor A = matrix_at(a, n, n, lda, "a", "lda", fn);
  Tensor B = matrix_at(b, n, nrhs, ldb, "b", "ldb", fn);
  if (n == 0 || nrhs == 0) return;
  torch::stable::copy_(
      B, aten("aten::linalg_lu_solve", "", fn, A, ints_at(ipiv, n, "ipiv", fn), B, true, t));
}

template <class real>
void getri(int n, real* a, int lda, int* ipiv, real* work, int lwork, int* info, const char* fn) {
  info_at(info, fn);
  at_least(n, 0, "n", fn);
  if (lwork == -1) {  // the workspace query
    if (work == nullptr) refuse(fn, "work is NULL");
    work[0] = static_cast<real>(std::max(1, n));
    return;
  }
  at_least(lwork, std::max(1, n), "lwork", fn);
  Tensor A = matrix_at(a, n, n, lda, "a", "lda", fn);
  if (n == 0) return;
  if ((*info = zero_diagonal(A, fn)) != 0) return;  // singular: A left as it was
  Tensor eye = empty({n, n}, dtype_for<real>(), false, fn);
  torch::stable::zero_(eye);
  aten("aten::fill_", "Tensor", fn, diagonal_of(eye, fn), scalar_like(eye, 1.0));
  torch::stable::copy_(
      A, aten("aten::linalg_lu_solve", "", fn, A, ints_at(ipiv, n, "ipiv", fn), eye, true, false));
}

template <class real>
void trtrs(char uplo, char trans, char diag, int n, int nrhs, real* a, int lda, real* b, int ldb,
           int* info, const char* fn) {
  info_at(info, fn);
  bool upper = letter(uplo, "uplo", "UL", fn) == 'U';
  const bool t = letter(trans, "trans", "NTC", fn) != 'N';
  const bool unit = letter(diag, "diag", "NU", fn) == 'U';
  at_least(n, 0, "n", fn);
  at_least(nrhs, 0, "nrhs", fn);
  Tensor A = matrix_at(a, n, n, lda, "a", "lda", fn);
  Tensor B = matrix_at(b, n, nrhs, ldb, "b", "ldb", fn);
  if (n == 0) return;
  if (!unit && (*info = zero_diagonal(A, fn)) != 0) return;  // singular: B left as it was
  if (nrhs == 0) return;
  if (t) A = torch::stable::transpose(A, 0, 1), upper = !upper;
  torch::stable::copy_(B, aten("aten::linalg_solve_triangular", "", fn, A, B, upper, true, unit));
}

template <class real>
void syev(char jobz, char uplo, int n, real* a, int lda, real* w, real* work, int lwork, int* info,
          const char* fn) {
  info_at(info, fn);
  const bool vectors = letter(jobz, "jobz", "NV", fn) == 'V';
  const std::string triangle(1, letter(uplo, "uplo", "UL", fn));
  at_least(n, 0, "n", fn);
  const int least = std::max(1, 3 * n - 1);
  if (lwork == -1) {
    if (work == nullptr) refuse(fn, "work is NULL");
    work[0] = static_cast<real>(least);
    return;
  }
  at_least(lwork, least, "lwork", fn);
  Tensor A = matrix_at(a, n, n, lda, "a", "lda", fn);
  if (n == 0) return;
  if (w == nullptr) refuse(fn, "w is NULL for " + std::to_string(n) + " eigenvalues");
  Tensor W = wrap(w, {n}, {1}, dtype_for<real>(), false, fn);
  const std::vector<Tensor> out = results(2, "aten::linalg_eigh", "", fn, A, triangle);
  torch::stable::copy_(W, out[0]);  // ascending, as LAPACK's
  if (vectors) torch::stable::copy_(A, out[1]);
}

}  // namespace

extern "C" {

#define KFL_DEFINE_LAPACK(L, real)                                                             \
  void L##_gesv(int n, int nrhs, real* a, int lda, int* ipiv, real* b, int ldb, int* info) {   \
    gesv(n, nrhs, a, lda, ipiv, b, ldb, info, #L "_gesv");                                     \
  }                                                                                            \
  void L##_getrf(int m, int n, real* a, int lda, int* ipiv, int* info) {                       \
    const char* fn = #L "_getrf";                                                              \
    info_at(info, fn);                                                                         \
    at_least(m, 0, "m", fn);                                                                   \
    at_least(n, 0, "n", fn);                                                                   \
    const Tensor A = matrix_at(a, m, n, lda, "a", "lda", fn);                                  \
    if (m > 0 && n > 0) lu_in_place<real>(A, ipiv, std::min(m, n), info, fn);                  \
  }                                                                                            \
  void L##_getrs(char trans, int n, int nrhs, real* a, int lda, int* ipiv, real* b, int ldb,   \
                 int* info) {                                                                  \
    getrs(trans, n, nrhs, a, lda, ipiv, b, ldb, info, #L "_getrs");                            \
  }                                                                                            \
  void L##_getri(int n, real* a, int lda, int* ipiv, real* work, int lwork, int* info) {       \
    getri(n, a, lda, ipiv, work, lwork, info, #L "_getri");                                    \
  }                                                                                            \
  void L##_trtrs(char uplo, char trans, char diag, int n, int nrhs, real* a, int lda, real* b, \
                 int ldb, int* info) {                                                         \
    trtrs(uplo, trans, diag, n, nrhs, a, lda, b, ldb, info, #L "_trtrs");                      \
  }                                                                                            \
  void L##_syev(char jobz, char uplo, int n, real* a, int lda, real* w, real* work, int lwork, \
                int* info) {                                                                   \
    syev(jobz, uplo, n, a, lda, w, work, lwork, info, #L "_syev");                             \
  }
KFL_DEFINE_LAPACK(THFloatLapack, float)
KFL_DEFINE_LAPACK(THDoubleLapack, double)

}  // extern "C"
