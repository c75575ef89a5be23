// TH's BLAS (THBlas.h) over raw host memory, column-major as Fortran's:
// gemm and gemv of float and double on torch's addmm and addmv; the level-1
// calls (swap, scal, copy, axpy, dot), ger, and the integer types' gemv and
// gemm as TH's own loops did them, written once for every type.
#include "THRuntime.h"

namespace {

// A BLAS vector of n elements `inc` apart; inc < 0 reads it from its far
// end, as BLAS does. NULL with n > 0 is an error.
template <class T>
struct Strided {
  T* p;
  int64_t inc;
  T& operator[](int64_t i) const { return p[i * inc]; }
};

template <class T>
Strided<T> vec(T* p, int64_t n, int64_t inc, const char* name, const char* fn) {
  if (n > 0 && p == nullptr)
    throw std::runtime_error(std::string(fn) + ": " + name + " is NULL for " + std::to_string(n) +
                             " elements");
  return {inc < 0 && n > 0 ? p + (1 - n) * inc : p, inc};
}

void check_count(int64_t n, const char* name, const char* fn) {
  if (n < 0)
    throw std::runtime_error(std::string(fn) + ": " + name + " must be >= 0, got " +
                             std::to_string(n));
}

// A column-major rows x cols matrix at p, columns ld apart (ld >= max(1, rows))
template <class T>
T* matrix_at(T* p, int64_t rows, int64_t cols, int64_t ld, const char* name, const char* fn) {
  if (ld < std::max<int64_t>(1, rows))
    throw std::runtime_error(std::string(fn) + ": leading dimension of " + name + " " +
                             std::to_string(ld) + " is less than its " + std::to_string(rows) +
                             " rows");
  if (rows > 0 && cols > 0 && p == nullptr)
    throw std::runtime_error(std::string(fn) + ": " + name + " is NULL for a " +
                             std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  return p;
}

template <class T>
void blas_swap(int64_t n, T* x, int64_t incx, T* y, int64_t incy, const char* fn) {
  check_count(n, "n", fn);
  const Strided<T> a = vec(x, n, incx, "x", fn), b = vec(y, n, incy, "y", fn);
  for (int64_t i = 0; i < n; ++i) std::swap(a[i], b[i]);
}

template <class T>
void blas_scal(int64_t n, T alpha, T* x, int64_t incx, const char* fn) {
  check_count(n, "n", fn);
  const Strided<T> a = vec(x, n, incx, "x", fn);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<T>(alpha * a[i]);
}

template <class T>
void blas_copy(int64_t n, T* x, int64_t incx, T* y, int64_t incy, const char* fn) {
  check_count(n, "n", fn);
  const Strided<T> a = vec(x, n, incx, "x", fn), b = vec(y, n, incy, "y", fn);
  for (int64_t i = 0; i < n; ++i) b[i] = a[i];
}

template <class T>
void blas_axpy(int64_t n, T alpha, T* x, int64_t incx, T* y, int64_t incy, const char* fn) {
  check_count(n, "n", fn);
  const Strided<T> a = vec(x, n, incx, "x", fn), b = vec(y, n, incy, "y", fn);
  for (int64_t i = 0; i < n; ++i) b[i] = static_cast<T>(b[i] + alpha * a[i]);
}

template <class T>
T blas_dot(int64_t n, T* x, int64_t incx, T* y, int64_t incy, const char* fn) {
  check_count(n, "n", fn);
  const Strided<T> a = vec(x, n, incx, "x", fn), b = vec(y, n, incy, "y", fn);
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum = static_cast<T>(sum + a[i] * b[i]);
  return sum;
}

// A (m x n) += alpha x y^T
template <class T>
void blas_ger(int64_t m, int64_t n, T alpha, T* x, int64_t incx, T* y, int64_t incy, T* a,
              int64_t lda, const char* fn) {
  check_count(m, "m", fn);
  check_count(n, "n", fn);
  const Strided<T> xs = vec(x, m, incx, "x", fn), ys = vec(y, n, incy, "y", fn);
  T* A = matrix_at(a, m, n, lda, "a", fn);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i)
      A[i + j * lda] = static_cast<T>(A[i + j * lda] + alpha * xs[i] * ys[j]);
}

// y = alpha op(A) x + beta y (A m x n); beta 0 ignores what y held
template <class T>
void loop_gemv(char trans, int64_t m, int64_t n, T alpha, T* a, int64_t lda, T* x, int64_t incx,
               T beta, T* y, int64_t incy, const char* fn) {
  const bool t = transposed(trans, fn);
  check_count(m, "m", fn);
  check_count(n, "n", fn);
  const int64_t len_x = t ? m : n, len_y = t ? n : m;
  const T* A = matrix_at(a, m, n, lda, "a", fn);
  const Strided<T> xs = vec(x, len_x, incx, "x", fn), ys = vec(y, len_y, incy, "y", fn);
  for (int64_t i = 0; i < len_y; ++i) {
    T sum = 0;
    for (int64_t l = 0; l < len_x; ++l)
      sum = static_cast<T>(sum + (t ? A[l + i * lda] : A[i + l * lda]) * xs[l]);
    ys[i] = static_cast<T>(alpha * sum + (beta == 0 ? T(0) : static_cast<T>(beta * ys[i])));
  }
}

// C (m x n) = alpha op(A) op(B) + beta C; beta 0 ignores what C held
template <class T>
void loop_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, T alpha, T* a,
               int64_t lda, T* b, int64_t ldb, T beta, T* c, int64_t ldc, const char* fn) {
  const bool ta = transposed(transa, fn), tb = transposed(transb, fn);
  check_count(m, "m", fn);
  check_count(n, "n", fn);
  check_count(k, "k", fn);
  const T* A = matrix_at(a, ta ? k : m, ta ? m : k, lda, "a", fn);
  const T* B = matrix_at(b, tb ? n : k, tb ? k : n, ldb, "b", fn);
  T* C = matrix_at(c, m, n, ldc, "c", fn);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      T sum = 0;
      for (int64_t l = 0; l < k; ++l)
        sum = static_cast<T>(sum + (ta ? A[l + i * lda] : A[i + l * lda]) *
                                       (tb ? B[j + l * ldb] : B[l + j * ldb]));
      T& out = C[i + j * ldc];
      out = static_cast<T>(alpha * sum + (beta == 0 ? T(0) : static_cast<T>(beta * out)));
    }
}

}  // namespace

extern "C" {

#define KFL_DEFINE_BLAS_LEVEL1(B, real)                                                        \
  void B##_swap(int64_t n, real* x, int64_t incx, real* y, int64_t incy) {                     \
    blas_swap(n, x, incx, y, incy, #B "_swap");                                                \
  }                                                                                            \
  void B##_scal(int64_t n, real a, real* x, int64_t incx) {                                    \
    blas_scal(n, a, x, incx, #B "_scal");                                                      \
  }                                                                                            \
  void B##_copy(int64_t n, real* x, int64_t incx, real* y, int64_t incy) {                     \
    blas_copy(n, x, incx, y, incy, #B "_copy");                                                \
  }                                                                                            \
  void B##_axpy(int64_t n, real a, real* x, int64_t incx, real* y, int64_t incy) {             \
    blas_axpy(n, a, x, incx, y, incy, #B "_axpy");                                             \
  }                                                                                            \
  real B##_dot(int64_t n, real* x, int64_t incx, real* y, int64_t incy) {                      \
    return blas_dot(n, x, incx, y, incy, #B "_dot");                                           \
  }                                                                                            \
  void B##_ger(int64_t m, int64_t n, real alpha, real* x, int64_t incx, real* y, int64_t incy, \
               real* a, int64_t lda) {                                                         \
    blas_ger(m, n, alpha, x, incx, y, incy, a, lda, #B "_ger");                                \
  }
TH_FORALL_CPU_BLAS(KFL_DEFINE_BLAS_LEVEL1)
#define KFL_DEFINE_INT_BLAS(B, real)                                                            \
  void B##_gemv(char trans, int64_t m, int64_t n, real alpha, real* a, int64_t lda, real* x,    \
                int64_t incx, real beta, real* y, int64_t incy) {                               \
    loop_gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, #B "_gemv");                  \
  }                                                                                             \
  void B##_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, real alpha, real* a, \
                int64_t lda, real* b, int64_t ldb, real beta, real* c, int64_t ldc) {           \
    loop_gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, #B "_gemm");        \
  }
TH_FORALL_CPU_INT_BLAS(KFL_DEFINE_INT_BLAS)

void THFloatBlas_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                      float* a, int64_t lda, float* b, int64_t ldb, float beta, float* c,
                      int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float32(),
       false, "THFloatBlas_gemm");
}
void THDoubleBlas_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
                       double* a, int64_t lda, double* b, int64_t ldb, double beta, double* c,
                       int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float64(),
       false, "THDoubleBlas_gemm");
}
void THFloatBlas_gemv(char trans, int64_t m, int64_t n, float alpha, float* a, int64_t lda,
                      float* x, int64_t incx, float beta, float* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float32(), false,
       "THFloatBlas_gemv");
}
void THDoubleBlas_gemv(char trans, int64_t m, int64_t n, double alpha, double* a, int64_t lda,
                       double* x, int64_t incx, double beta, double* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float64(), false,
       "THDoubleBlas_gemv");
}

}  // extern "C"
