/* THC/THC.h: the CUDA tensor API of 2017-era torch.utils.ffi extensions (C),
 * over the torch tensors an extension's functions are called with.
 *
 * Legacy sources declare `extern THCState *state;` and pass it first to every
 * THC function; the extension defines it (kernforge_legacy/runtime/compat.cpp).
 * THCudaTensor holds float, THCudaIntTensor int32_t, THCudaLongTensor int64_t.
 * Only available in extensions built with create_extension(..., with_cuda=True). */
#ifndef KERNFORGE_LEGACY_THC_H
#define KERNFORGE_LEGACY_THC_H

#ifndef KERNFORGE_LEGACY_WITH_CUDA
#error "THC/THC.h needs a CUDA build: create_extension(..., with_cuda=True)"
#endif

#include <TH/TH.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct THCState THCState;

/* The current CUDA stream of the current device (torch's, not the default). */
cudaStream_t THCState_getCurrentStream(THCState* state);
/* The current stream of `device`, the current device, the number of devices. */
cudaStream_t THCState_getCurrentStreamOnDevice(THCState* state, int device);
int THCState_getCurrentDevice(THCState* state);
int THCState_getNumDevices(THCState* state);

/* THCudaCheck(err): raises a Python RuntimeError naming the CUDA error. */
void kfl_thc_check(cudaError_t err, const char* file, int line);
#define THCudaCheck(err) kfl_thc_check((err), __FILE__, __LINE__)

/* Device memory from torch's caching allocator, on the current device and
 * stream. Both historical forms work: `ptr = THCudaMalloc(state, size)` and
 * `THCudaMalloc(state, &ptr, size)` (returns cudaSuccess, or raises). */
void* kfl_thc_malloc(THCState* state, size_t size);
cudaError_t kfl_thc_malloc_into(THCState* state, void** ptr, size_t size);
cudaError_t THCudaFree(THCState* state, void* ptr);
#define KFL_THC_PICK3(a, b, c, name, ...) name
#define THCudaMalloc(...) \
  KFL_THC_PICK3(__VA_ARGS__, kfl_thc_malloc_into, kfl_thc_malloc, unused)(__VA_ARGS__)

#define TH_FORALL_CUDA_INT_TENSORS(X)                      \
  X(THCudaByteTensor, THCudaByteStorage, uint8_t, uint8)   \
  X(THCudaCharTensor, THCudaCharStorage, int8_t, int8)     \
  X(THCudaShortTensor, THCudaShortStorage, int16_t, int16) \
  X(THCudaIntTensor, THCudaIntStorage, int32_t, int32)     \
  X(THCudaLongTensor, THCudaLongStorage, int64_t, int64)
#define TH_FORALL_CUDA_FLOAT_TENSORS(X)                       \
  X(THCudaTensor, THCudaStorage, float, float32)              \
  X(THCudaDoubleTensor, THCudaDoubleStorage, double, float64) \
  X(THCudaHalfTensor, THCudaHalfStorage, THHalf, float16)     \
  X(THCudaBFloat16Tensor, THCudaBFloat16Storage, THBFloat16, bfloat16)
#define TH_FORALL_CUDA_TENSORS(X) TH_FORALL_CUDA_INT_TENSORS(X) TH_FORALL_CUDA_FLOAT_TENSORS(X)

/* The device of a CUDA tensor; and checkGPU(state, n, t1, ..., tn): 1 when
 * the n tensors (of the type, NULL skipped) are all on the current device,
 * else 0, as THC's THCudaTensor_checkGPU. */
#define THC_TENSOR_DEVICE_API(T)                     \
  int T##_getDevice(THCState* state, const T* self); \
  int T##_checkGPU(THCState* state, unsigned int n_tensors, ...);

/* The same API as TH's (TH/TH.h), each function taking the state first;
 * tensors THC makes are on the current device. */
#define TH_CUDA_TENSOR_API(T, S, real, dtype)                          \
  TH_TENSOR_API(T, real, THCState* state, )                            \
  TH_TENSOR_MEMORY_API(T, S, real, THCState* state, THCState* state, ) \
  THC_TENSOR_DEVICE_API(T)
TH_FORALL_CUDA_TENSORS(TH_CUDA_TENSOR_API)
#undef TH_CUDA_TENSOR_API
#define TH_CUDA_TENSOR_MATH_API(T, S, real, dtype) TH_TENSOR_MATH_API(T, real, THCState* state, )
TH_FORALL_CUDA_FLOAT_TENSORS(TH_CUDA_TENSOR_MATH_API)
#undef TH_CUDA_TENSOR_MATH_API

/* THC's BLAS on device pointers of the current device, on torch's cuBLAS
 * handle and current stream (through its matmul kernels): as TH's
 * THFloatBlas_gemm / _gemv, the state first. */
void THCudaBlas_Sgemm(THCState* state, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      float alpha, float* a, int64_t lda, float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc);
void THCudaBlas_Dgemm(THCState* state, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      double alpha, double* a, int64_t lda, double* b, int64_t ldb, double beta,
                      double* c, int64_t ldc);
void THCudaBlas_Sgemv(THCState* state, char trans, int64_t m, int64_t n, float alpha, float* a,
                      int64_t lda, float* x, int64_t incx, float beta, float* y, int64_t incy);
void THCudaBlas_Dgemv(THCState* state, char trans, int64_t m, int64_t n, double alpha, double* a,
                      int64_t lda, double* x, int64_t incx, double beta, double* y, int64_t incy);

#ifdef __cplusplus
}
#endif

#endif /* KERNFORGE_LEGACY_THC_H */
