// TH's BLAS (THBlas.h): gemm and gemv over raw column-major memory.
#include "THRuntime.h"

extern "C" {

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
