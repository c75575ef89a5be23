// THC's BLAS (THCBlas.h): cuBLAS-style dot, ger, gemm, batched gemm and
// gemv over raw device memory, on torch's CUDA ops. Built into the runtime of a CUDA
// build only.
#include "THRuntime.h"

namespace {

// cuBLAS's pointer-array batch (the arrays in device memory): read back, then
// one strided baddbmm when the matrices lie at equal distances, as they
// mostly do, else one gemm each.
void gemm_pointer_batched(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
                          const void* const* a, int64_t lda, const void* const* b, int64_t ldb,
                          double beta, void* const* c, int64_t ldc, int64_t batch, size_t elem_size,
                          int32_t dtype, const char* fn) {
  if (batch <= 0) return;
  if (a == nullptr || b == nullptr || c == nullptr)
    throw std::runtime_error(std::string(fn) + ": the arrays of matrices are NULL for a batch of " +
                             std::to_string(batch));
  std::vector<const void*> ptrs(3 * static_cast<size_t>(batch));
  int32_t device;
  void* stream;
  check(aoti_torch_get_current_device_index(&device), fn);
  check(aoti_torch_get_current_cuda_stream(device, &stream), fn);
  const size_t bytes = sizeof(void*) * static_cast<size_t>(batch);
  const void* const* arrays[3] = {a, b, const_cast<const void* const*>(c)};
  for (int i = 0; i < 3; i++)
    __THCudaCheck(cudaMemcpyAsync(ptrs.data() + i * batch, arrays[i], bytes, cudaMemcpyDeviceToHost,
                                  static_cast<cudaStream_t>(stream)),
                  __FILE__, __LINE__);
  __THCudaCheck(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), __FILE__, __LINE__);
  // the distance between consecutive matrices, in elements, or -1 when not one for all
  auto stride_of = [&](int which) -> int64_t {
    const auto* p = reinterpret_cast<const char* const*>(ptrs.data() + which * batch);
    if (batch == 1) return 0;
    const std::ptrdiff_t step = p[1] - p[0];
    if (step < 0 || step % static_cast<std::ptrdiff_t>(elem_size) != 0) return -1;
    for (int64_t i = 2; i < batch; i++)
      if (p[i] - p[i - 1] != step) return -1;
    return step / static_cast<std::ptrdiff_t>(elem_size);
  };
  const int64_t sa = stride_of(0), sb = stride_of(1), sc = stride_of(2);
  if (sa >= 0 && sb >= 0 && sc > 0) {
    gemm(transa, transb, m, n, k, alpha, ptrs[0], lda, ptrs[batch], ldb, beta,
         const_cast<void*>(ptrs[2 * batch]), ldc, dtype, true, fn, batch, sa, sb, sc);
    return;
  }
  for (int64_t i = 0; i < batch; i++)
    gemm(transa, transb, m, n, k, alpha, ptrs[i], lda, ptrs[batch + i], ldb, beta,
         const_cast<void*>(ptrs[2 * batch + i]), ldc, dtype, true, fn);
}
// A BLAS vector of n elements inc apart in device memory, as a tensor; inc
// < 0 reads it from its far end, as cuBLAS does
Tensor device_vector(void* p, int64_t n, int64_t inc, int32_t dtype, const char* name,
                     const char* fn) {
  if (n < 0)
    throw std::runtime_error(std::string(fn) + ": n must be >= 0, got " + std::to_string(n));
  if (n > 0 && p == nullptr)
    throw std::runtime_error(std::string(fn) + ": " + name + " is NULL for " + std::to_string(n) +
                             " elements");
  const Tensor v = wrap(p, {n}, {inc < 0 ? -inc : inc}, dtype, true, fn);
  return inc < 0 ? aten("aten::flip", "", fn, v, std::vector<int64_t>{0}) : v;
}

double device_dot(int64_t n, void* x, int64_t incx, void* y, int64_t incy, int32_t dtype,
                  const char* fn) {
  const Tensor xs = device_vector(x, n, incx, dtype, "x", fn);
  const Tensor ys = device_vector(y, n, incy, dtype, "y", fn);
  return n == 0 ? 0.0 : item(aten("aten::dot", "", fn, xs, ys), fn);
}

// A (m x n, column-major, lda) += alpha x y^T
void device_ger(int64_t m, int64_t n, double alpha, void* x, int64_t incx, void* y, int64_t incy,
                void* a, int64_t lda, int32_t dtype, const char* fn) {
  const Tensor xs = device_vector(x, m, incx, dtype, "x", fn);
  const Tensor ys = device_vector(y, n, incy, dtype, "y", fn);
  if (m == 0 || n == 0) return;
  Tensor stored_t = column_major_t(a, m, n, lda, dtype, true, fn);  // A^T, [n, m]
  torch::stable::copy_(stored_t,
                       add_scaled(stored_t, aten("aten::outer", "", fn, ys, xs), alpha, fn));
}

}  // namespace

extern "C" {

float THCudaBlas_Sdot(THCState*, int64_t n, float* x, int64_t incx, float* y, int64_t incy) {
  return static_cast<float>(
      device_dot(n, x, incx, y, incy, aoti_torch_dtype_float32(), "THCudaBlas_Sdot"));
}
double THCudaBlas_Ddot(THCState*, int64_t n, double* x, int64_t incx, double* y, int64_t incy) {
  return device_dot(n, x, incx, y, incy, aoti_torch_dtype_float64(), "THCudaBlas_Ddot");
}
THHalf THCudaBlas_Hdot(THCState*, int64_t n, THHalf* x, int64_t incx, THHalf* y, int64_t incy) {
  return TH_float2half(static_cast<float>(
      device_dot(n, x, incx, y, incy, aoti_torch_dtype_float16(), "THCudaBlas_Hdot")));
}
void THCudaBlas_Sger(THCState*, int64_t m, int64_t n, float alpha, float* x, int64_t incx, float* y,
                     int64_t incy, float* a, int64_t lda) {
  device_ger(m, n, alpha, x, incx, y, incy, a, lda, aoti_torch_dtype_float32(), "THCudaBlas_Sger");
}
void THCudaBlas_Dger(THCState*, int64_t m, int64_t n, double alpha, double* x, int64_t incx,
                     double* y, int64_t incy, double* a, int64_t lda) {
  device_ger(m, n, alpha, x, incx, y, incy, a, lda, aoti_torch_dtype_float64(), "THCudaBlas_Dger");
}

void THCudaBlas_Sgemm(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      float alpha, float* a, int64_t lda, float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float32(),
       true, "THCudaBlas_Sgemm");
}
void THCudaBlas_Dgemm(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      double alpha, double* a, int64_t lda, double* b, int64_t ldb, double beta,
                      double* c, int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float64(),
       true, "THCudaBlas_Dgemm");
}
void THCudaBlas_Hgemm(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      THHalf alpha, THHalf* a, int64_t lda, THHalf* b, int64_t ldb, THHalf beta,
                      THHalf* c, int64_t ldc) {
  gemm(transa, transb, m, n, k, as_double(alpha), a, lda, b, ldb, as_double(beta), c, ldc,
       aoti_torch_dtype_float16(), true, "THCudaBlas_Hgemm");
}
void THCudaBlas_SgemmStridedBatched(THCState*, char transa, char transb, int64_t m, int64_t n,
                                    int64_t k, float alpha, const float* a, int64_t lda,
                                    int64_t strideA, const float* b, int64_t ldb, int64_t strideB,
                                    float beta, float* c, int64_t ldc, int64_t strideC,
                                    int64_t batchCount) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float32(),
       true, "THCudaBlas_SgemmStridedBatched", batchCount, strideA, strideB, strideC);
}
void THCudaBlas_DgemmStridedBatched(THCState*, char transa, char transb, int64_t m, int64_t n,
                                    int64_t k, double alpha, const double* a, int64_t lda,
                                    int64_t strideA, const double* b, int64_t ldb, int64_t strideB,
                                    double beta, double* c, int64_t ldc, int64_t strideC,
                                    int64_t batchCount) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float64(),
       true, "THCudaBlas_DgemmStridedBatched", batchCount, strideA, strideB, strideC);
}
void THCudaBlas_SgemmBatched(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a[], int64_t lda, const float* b[],
                             int64_t ldb, float beta, float* c[], int64_t ldc, int64_t batchCount) {
  gemm_pointer_batched(transa, transb, m, n, k, alpha, reinterpret_cast<const void* const*>(a), lda,
                       reinterpret_cast<const void* const*>(b), ldb, beta,
                       reinterpret_cast<void* const*>(c), ldc, batchCount, sizeof(float),
                       aoti_torch_dtype_float32(), "THCudaBlas_SgemmBatched");
}
void THCudaBlas_DgemmBatched(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                             double alpha, const double* a[], int64_t lda, const double* b[],
                             int64_t ldb, double beta, double* c[], int64_t ldc,
                             int64_t batchCount) {
  gemm_pointer_batched(transa, transb, m, n, k, alpha, reinterpret_cast<const void* const*>(a), lda,
                       reinterpret_cast<const void* const*>(b), ldb, beta,
                       reinterpret_cast<void* const*>(c), ldc, batchCount, sizeof(double),
                       aoti_torch_dtype_float64(), "THCudaBlas_DgemmBatched");
}
void THCudaBlas_Sgemv(THCState*, char trans, int64_t m, int64_t n, float alpha, float* a,
                      int64_t lda, float* x, int64_t incx, float beta, float* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float32(), true,
       "THCudaBlas_Sgemv");
}
void THCudaBlas_Dgemv(THCState*, char trans, int64_t m, int64_t n, double alpha, double* a,
                      int64_t lda, double* x, int64_t incx, double beta, double* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float64(), true,
       "THCudaBlas_Dgemv");
}

}  // extern "C"
