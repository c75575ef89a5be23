// THC's BLAS (THCBlas.h): cuBLAS-style dot, ger, gemm, batched gemm and
// gemv over raw device memory, on torch's CUDA ops. Built into the runtime of a CUDA
// build only.
#include "THRuntime.h"

namespace {

// cuBLAS's arrays of `batch` matrices (arrays of pointers in device memory),
// read back in one synchronization: array i's j-th pointer at [i * batch + j]
std::vector<const void*> device_pointers(std::initializer_list<const void* const*> arrays,
                                         int64_t batch, const char* fn) {
  for (const void* const* array : arrays)
    if (array == nullptr)
      throw std::runtime_error(std::string(fn) +
                               ": the arrays of matrices are NULL for a batch of " +
                               std::to_string(batch));
  std::vector<const void*> ptrs(arrays.size() * static_cast<size_t>(batch));
  const cudaStream_t stream = THCState_getCurrentStream(nullptr);  // the runtime keeps no state
  const size_t bytes = sizeof(void*) * static_cast<size_t>(batch);
  size_t i = 0;
  for (const void* const* array : arrays)
    __THCudaCheck(
        cudaMemcpyAsync(ptrs.data() + batch * i++, array, bytes, cudaMemcpyDeviceToHost, stream),
        __FILE__, __LINE__);
  __THCudaCheck(cudaStreamSynchronize(stream), __FILE__, __LINE__);
  return ptrs;
}

// cuBLAS's pointer-array batch (the arrays in device memory): read back, then
// one strided baddbmm when the matrices lie at equal distances, as they
// mostly do, else one gemm each.
void gemm_pointer_batched(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
                          const void* const* a, int64_t lda, const void* const* b, int64_t ldb,
                          double beta, void* const* c, int64_t ldc, int64_t batch, size_t elem_size,
                          int32_t dtype, const char* fn) {
  if (batch <= 0) return;
  const std::vector<const void*> ptrs =
      device_pointers({a, b, const_cast<const void* const*>(c)}, batch, fn);
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

// cuBLAS's batched LU (getrfBatched, getrsBatched, getriBatched) on
// torch.linalg: n x n column-major matrices (ld >= n), pivots 1-based, n per
// matrix one after another (NULL: no pivoting), info per matrix 0 or the
// first j with U(j, j) exactly zero.
void lu_arguments(int64_t n, int64_t ld, int64_t batch, const char* fn,
                  const char* ld_name = "lda") {
  if (n < 0 || batch < 0)
    throw std::runtime_error(std::string(fn) + ": n and batchSize must be >= 0, got " +
                             std::to_string(n) + " and " + std::to_string(batch));
  if (ld < std::max<int64_t>(1, n))
    throw std::runtime_error(std::string(fn) + ": " + ld_name +
                             " must be >= max(1, n) = " + std::to_string(std::max<int64_t>(1, n)) +
                             ", got " + std::to_string(ld));
}

// A stored matrix (ld) as the tensor A; matrix j's pivots (identity where NULL)
Tensor lu_of(const void* p, int64_t n, int64_t ld, int32_t dtype, const char* fn) {
  return torch::stable::transpose(column_major_t(p, n, n, ld, dtype, true, fn), 0, 1);
}
Tensor pivots_of(const int* pivot, int64_t j, int64_t n, const char* fn) {
  if (pivot != nullptr)
    return wrap(const_cast<int*>(pivot) + j * n, {n}, {1}, aoti_torch_dtype_int32(), true, fn);
  Tensor host = empty({n}, aoti_torch_dtype_int32(), false, fn);
  for (int64_t i = 0; i < n; ++i)
    static_cast<int32_t*>(host.data_ptr())[i] = static_cast<int32_t>(i + 1);
  Tensor out = empty({n}, aoti_torch_dtype_int32(), true, fn);
  torch::stable::copy_(out, host);
  return out;
}

void getrf_batched(int64_t n, void* const* a, int64_t lda, int* pivot, int* info, int64_t batch,
                   int32_t dtype, const char* fn) {
  lu_arguments(n, lda, batch, fn);
  if (n == 0 || batch == 0) return;
  if (info == nullptr) throw std::runtime_error(std::string(fn) + ": info is NULL");
  const std::vector<const void*> p =
      device_pointers({const_cast<const void* const*>(a)}, batch, fn);
  for (int64_t j = 0; j < batch; ++j) {
    const Tensor A = lu_of(p[j], n, lda, dtype, fn);
    const std::vector<Tensor> lu =
        results(3, "aten::linalg_lu_factor_ex", "", fn, A, pivot != nullptr, false);
    Tensor stored = A;
    torch::stable::copy_(stored, lu[0]);
    if (pivot != nullptr) {
      Tensor piv = pivots_of(pivot, j, n, fn);
      torch::stable::copy_(piv, lu[1]);
    }
    Tensor status = wrap(info + j, {}, {}, aoti_torch_dtype_int32(), true, fn);
    torch::stable::copy_(status, lu[2]);
  }
}

// op(A_j) X = B_j (B_j n x nrhs, ldb) from getrf's factors; info (host memory) 0
void getrs_batched(char trans, int64_t n, int64_t nrhs, const void* const* a, int64_t lda,
                   const int* pivot, void* const* b, int64_t ldb, int* info, int64_t batch,
                   int32_t dtype, const char* fn) {
  const bool adjoint = transposed(trans, fn);
  lu_arguments(n, lda, batch, fn);
  if (nrhs < 0 || ldb < std::max<int64_t>(1, n))
    throw std::runtime_error(std::string(fn) + ": nrhs must be >= 0 and ldb >= max(1, n), got " +
                             std::to_string(nrhs) + " and " + std::to_string(ldb));
  if (info == nullptr) throw std::runtime_error(std::string(fn) + ": info is NULL");
  *info = 0;
  if (n == 0 || nrhs == 0 || batch == 0) return;
  const std::vector<const void*> p =
      device_pointers({a, const_cast<const void* const*>(b)}, batch, fn);
  for (int64_t j = 0; j < batch; ++j) {
    Tensor B =
        torch::stable::transpose(column_major_t(p[batch + j], n, nrhs, ldb, dtype, true, fn), 0, 1);
    const Tensor X = aten("aten::linalg_lu_solve", "", fn, lu_of(p[j], n, lda, dtype, fn),
                          pivots_of(pivot, j, n, fn), B, true, adjoint);
    torch::stable::copy_(B, X);
  }
}

// C_j := A_j's inverse from getrf's factors (C_j n x n, ldc)
void getri_batched(int64_t n, const void* const* a, int64_t lda, const int* pivot, void* const* c,
                   int64_t ldc, int* info, int64_t batch, int32_t dtype, const char* fn) {
  lu_arguments(n, lda, batch, fn);
  lu_arguments(n, ldc, batch, fn, "ldc");
  if (n == 0 || batch == 0) return;
  if (info == nullptr) throw std::runtime_error(std::string(fn) + ": info is NULL");
  const std::vector<const void*> p =
      device_pointers({a, const_cast<const void* const*>(c)}, batch, fn);
  Tensor eye = empty({n, n}, dtype, true, fn);
  torch::stable::zero_(eye);
  torch::stable::fill_(aten("aten::diagonal", "", fn, eye, int64_t{0}, int64_t{0}, int64_t{1}),
                       1.0);
  Tensor statuses = empty({batch}, aoti_torch_dtype_int32(), false, fn);
  auto* status = static_cast<int32_t*>(statuses.data_ptr());
  for (int64_t j = 0; j < batch; ++j) {
    const Tensor LU = lu_of(p[j], n, lda, dtype, fn);
    Tensor C = lu_of(p[batch + j], n, ldc, dtype, fn);
    torch::stable::copy_(
        C, aten("aten::linalg_lu_solve", "", fn, LU, pivots_of(pivot, j, n, fn), eye, true, false));
    const Tensor d =
        on_host(aten("aten::diagonal", "", fn, LU, int64_t{0}, int64_t{0}, int64_t{1}), fn);
    const auto* v = static_cast<const double*>(d.data_ptr());
    status[j] = 0;
    for (int64_t i = 0; i < n && status[j] == 0; ++i)
      if (v[i] == 0) status[j] = static_cast<int32_t>(i + 1);
  }
  Tensor out = wrap(info, {batch}, {1}, aoti_torch_dtype_int32(), true, fn);
  torch::stable::copy_(out, statuses);
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

#define KFL_DEFINE_CUDA_LU(P, real, dtype)                                                     \
  void THCudaBlas_##P##getrf(THCState*, int n, real** a, int lda, int* pivot, int* info,       \
                             int batchSize) {                                                  \
    getrf_batched(n, reinterpret_cast<void* const*>(a), lda, pivot, info, batchSize, dtype,    \
                  "THCudaBlas_" #P "getrf");                                                   \
  }                                                                                            \
  void THCudaBlas_##P##getrs(THCState*, char transa, int n, int nrhs, const real** a, int lda, \
                             int* pivot, real** b, int ldb, int* info, int batchSize) {        \
    getrs_batched(transa, n, nrhs, reinterpret_cast<const void* const*>(a), lda, pivot,        \
                  reinterpret_cast<void* const*>(b), ldb, info, batchSize, dtype,              \
                  "THCudaBlas_" #P "getrs");                                                   \
  }                                                                                            \
  void THCudaBlas_##P##getri(THCState*, int n, const real** a, int lda, int* pivot, real** c,  \
                             int ldc, int* info, int batchSize) {                              \
    getri_batched(n, reinterpret_cast<const void* const*>(a), lda, pivot,                      \
                  reinterpret_cast<void* const*>(c), ldc, info, batchSize, dtype,              \
                  "THCudaBlas_" #P "getri");                                                   \
  }
KFL_DEFINE_CUDA_LU(S, float, aoti_torch_dtype_float32())
KFL_DEFINE_CUDA_LU(D, double, aoti_torch_dtype_float64())

}  // extern "C"
