/* THC/THC.h: the CUDA tensor API of 2017-era torch.utils.ffi extensions (C),
 * over the torch tensors an extension's functions are called with.
 *
 * Legacy sources declare `extern THCState *state;` and pass it first to every
 * THC function; the runtime library defines it (kernforge_legacy/runtime/THCGeneral.cpp).
 * THCudaTensor holds float, THCudaIntTensor int32_t, THCudaLongTensor int64_t.
 * Only available in extensions built with create_extension(..., with_cuda=True). */
#ifndef KERNFORGE_LEGACY_THC_H
#define KERNFORGE_LEGACY_THC_H

/* C sources see it only in a CUDA build; CUDA sources (nvcc) always, also
 * when a Makefile of their own compiles them */
#if !defined(KERNFORGE_LEGACY_WITH_CUDA) && !defined(__CUDACC__)
#error "THC/THC.h needs a CUDA build: create_extension(..., with_cuda=True)"
#endif

/* CUDA's headers and this one's C++ parts keep C++ linkage where a C++ source
 * includes THC.h inside its own extern "C" block, as 2017 C++ code did with C
 * headers (CUDA's headers declare templates and classes). */
#ifdef __cplusplus
extern "C++" {
#endif
#include <cublas_v2.h> /* as THC's THCGeneral.h: code calling cuBLAS itself took its types from here */
#include <cuda.h> /* as THC's THCGeneral.h: CUDA_VERSION, which 2017 code tested (nnutils' atomicAdd) */
#include <cuda_runtime_api.h>
/* as THC's THCGeneral.h, for code calling cuSPARSE itself; without the
 * deprecation warnings (its own switch) that its header gives every source
 * that includes it: 2017 code calls what CUDA 12 marks deprecated */
#ifndef DISABLE_CUSPARSE_DEPRECATED
#define DISABLE_CUSPARSE_DEPRECATED
#endif
#include <cusparse.h>
#include <stdbool.h> /* THC's sortKeyValueInplace takes a bool */

#include "../TH/TH.h"
#include "kfl_removed_cuda.h" /* cudaThreadSynchronize, __shfl_down and the rest CUDA 13 / sm_70 took away */
#include "kfl_removed_cusparse.h" /* cusparseScsrmv, csrgemm and the rest CUDA 11 and 12 took away */

/* The element type of THCudaHalfTensor: in CUDA sources (nvcc) CUDA's `half`,
 * as THC's was there, so that kernels compute with what THCudaHalfTensor_data
 * returns; in C, THHalf, the same 16 bits. */
#ifdef __CUDACC__
#include <cuda_fp16.h>
#define KFL_CUDA_HALF half
#else
#define KFL_CUDA_HALF THHalf
#endif
#ifdef __cplusplus
} /* extern "C++" */
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct THCState THCState;

/* In a THC generic file (THCGenerateAllTypes.h), the names of the type being
 * generated (CReal: Cuda, CudaDouble, CudaByte, ...): THCTensor is
 * THCudaTensor, THCTensor_(add) THCudaTensor_add, THCStorage and
 * THCStorage_(NAME) likewise. Spelled as THC's headers spelled them, token
 * for token, so that extension code that defines them again in THC's words
 * (generic .cu files did) redefines them without a warning. */
// clang-format off
#define THCTensor TH_CONCAT_3(TH,CReal,Tensor)
#define THCTensor_(NAME) TH_CONCAT_4(TH,CReal,Tensor_,NAME)
#define THCStorage TH_CONCAT_3(TH,CReal,Storage)
#define THCStorage_(NAME) TH_CONCAT_4(TH,CReal,Storage_,NAME)
// clang-format on

/* The current CUDA stream of the current device (torch's, not the default). */
cudaStream_t THCState_getCurrentStream(THCState* state);
/* The current stream of `device`, the current device, the number of devices. */
cudaStream_t THCState_getCurrentStreamOnDevice(THCState* state, int device);
int THCState_getCurrentDevice(THCState* state);
int THCState_getNumDevices(THCState* state);

/* THC's streams (THCStream.h), on torch's: THCStream_new(flags) and
 * THCStream_newWithPriority(flags, priority) make a stream on the current
 * device (cudaStreamCreateWithFlags / WithPriority), reference counted by
 * THCStream_retain and THCStream_free (the last free destroys it);
 * THCStream_defaultStream(device) is the device's default stream (stream
 * NULL), never freed. THCState_setStream(state, s) makes s torch's current
 * stream of its device for this thread (NULL or a default stream: torch's
 * stream from before), so that the runtime's functions and torch's ops run on
 * it; THCState_getStream gives the current one. THCState_reserveStreams(state,
 * n, nonBlocking) makes n streams a device, indices 1..n (0: the default
 * stream), for THCState_getDeviceStream(state, device, index),
 * THCState_setCurrentStreamIndex(state, index) (of the current device; THC
 * set every device's) and
 * THCState_getCurrentStreamIndex (-1: a stream not of these). */
typedef struct THCStream {
  cudaStream_t stream;
  int device;
  int refcount;
} THCStream;
THCStream* THCStream_new(int flags);
THCStream* THCStream_newWithPriority(int flags, int priority);
THCStream* THCStream_defaultStream(int device);
void THCStream_free(THCStream* self);
void THCStream_retain(THCStream* self);
THCStream* THCState_getStream(THCState* state);
void THCState_setStream(THCState* state, THCStream* stream);
void THCState_reserveStreams(THCState* state, int numStreams, int nonBlocking);
int THCState_getNumStreams(THCState* state);
cudaStream_t THCState_getDeviceStream(THCState* state, int device, int stream);
int THCState_getCurrentStreamIndex(THCState* state);
void THCState_setCurrentStreamIndex(THCState* state, int stream);

/* The properties of the current device (cudaGetDeviceProperties, read once
 * per device; the pointer stays valid). */
struct cudaDeviceProp* THCState_getCurrentDeviceProperties(THCState* state);

/* THC's library handles, for code that calls cuBLAS or cuSPARSE itself
 * (Kind Blas: cublasHandle_t, THCState_getCurrentBlasHandle, ...; Kind
 * Sparse: cusparseHandle_t, THCState_getCurrentSparseHandle, ...): handles
 * 1..n per device (n = 1, or what THCState_reserve<Kind>Handles asked for),
 * each made on first use and kept for the process, handed out on the current
 * stream of its device (code that sets another stream on it, as some did,
 * gets the current one again at its next call); the current index (1 unless
 * set) is per thread, as THC's. */
#define THC_HANDLE_API(Kind, H)                                                \
  H THCState_getCurrent##Kind##Handle(THCState* state);                        \
  H THCState_getDevice##Kind##Handle(THCState* state, int device, int handle); \
  int THCState_getNum##Kind##Handles(THCState* state);                         \
  int THCState_getCurrent##Kind##HandleIndex(THCState* state);                 \
  void THCState_reserve##Kind##Handles(THCState* state, int numHandles);       \
  void THCState_setCurrent##Kind##HandleIndex(THCState* state, int handle);
THC_HANDLE_API(Blas, cublasHandle_t)
THC_HANDLE_API(Sparse, cusparseHandle_t)
#undef THC_HANDLE_API
/* THC's scratch space: 4 floats per SM of device memory for each device and
 * reserved stream (index 0 the default stream); the current device's and
 * stream's is NULL on a stream that is not a reserved one. */
void* THCState_getCurrentDeviceScratchSpace(THCState* state);
void* THCState_getDeviceScratchSpace(THCState* state, int device, int stream);
size_t THCState_getCurrentDeviceScratchSpaceSize(THCState* state);
size_t THCState_getDeviceScratchSpaceSize(THCState* state, int device);
/* THCudaMalloc calls the GC handler once when an allocation fails, then
 * tries again; THCHeapUpdate does nothing (torch counts its memory);
 * THCMagma_init has nothing to start. */
void THCSetGCHandler(THCState* state, void (*cutorchGCFunction)(void* data), void* data);
void THCHeapUpdate(THCState* state, ptrdiff_t size);
void THCMagma_init(THCState* state);

/* THCublasCheck(status): raises a Python RuntimeError naming the cuBLAS status. */
void __THCublasCheck(cublasStatus_t status, const char* file, int line);
#define THCublasCheck(status) __THCublasCheck((status), __FILE__, __LINE__)
/* THCusparseCheck(status): the same for a cuSPARSE status. */
void __THCusparseCheck(cusparseStatus_t status, const char* file, int line);
#define THCusparseCheck(status) __THCusparseCheck((status), __FILE__, __LINE__)
/* THCudaCheck(err): raises a Python RuntimeError naming the CUDA error. */
void __THCudaCheck(cudaError_t err, const char* file, int line);
#define THCudaCheck(err) __THCudaCheck((err), __FILE__, __LINE__)
/* THCudaCheckWarn(err): prints the CUDA error to stderr and goes on. */
void __THCudaCheckWarn(cudaError_t err, const char* file, int line);
#define THCudaCheckWarn(err) __THCudaCheckWarn((err), __FILE__, __LINE__)
/* THCAssertSameGPU(THCudaTensor_checkGPU(state, n, ...)): raises (as
 * THError) unless the tensors are all on the current device. */
#define THCAssertSameGPU(expr) \
  if (!(expr)) THError("arguments are located on different GPUs")
/* THCudaTensor_sizeDesc(state, t) returns TH's buffer, which THC's
 * THCTensor.h named THCDescBuff (shape checks copied from THCUNN print it). */
#define THC_DESC_BUFF_LEN TH_DESC_BUFF_LEN
typedef THDescBuff THCDescBuff;
#ifdef __cplusplus
#define THC_API extern "C"
#else
#define THC_API extern
#endif

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
#define TH_FORALL_CUDA_FLOAT_TENSORS(X)                          \
  X(THCudaTensor, THCudaStorage, float, float32)                 \
  X(THCudaDoubleTensor, THCudaDoubleStorage, double, float64)    \
  X(THCudaHalfTensor, THCudaHalfStorage, KFL_CUDA_HALF, float16) \
  X(THCudaBFloat16Tensor, THCudaBFloat16Storage, THBFloat16, bfloat16)
#define TH_FORALL_CUDA_TENSORS(X) TH_FORALL_CUDA_INT_TENSORS(X) TH_FORALL_CUDA_FLOAT_TENSORS(X)
/* by THC's short name (THCudaTensor is Float): X(Name, handle type, the other arguments) */
#define TH_FORALL_CUDA_NAMES(X, ...)         \
  X(Byte, THCudaByteTensor, __VA_ARGS__)     \
  X(Char, THCudaCharTensor, __VA_ARGS__)     \
  X(Short, THCudaShortTensor, __VA_ARGS__)   \
  X(Int, THCudaIntTensor, __VA_ARGS__)       \
  X(Long, THCudaLongTensor, __VA_ARGS__)     \
  X(Float, THCudaTensor, __VA_ARGS__)        \
  X(Double, THCudaDoubleTensor, __VA_ARGS__) \
  X(Half, THCudaHalfTensor, __VA_ARGS__)     \
  X(BFloat16, THCudaBFloat16Tensor, __VA_ARGS__)

/* The device of a CUDA tensor or storage; checkGPU(state, n, t1, ..., tn):
 * 1 when the n tensors (of the type, NULL skipped) are all on the current
 * device, else 0, as THC's THCudaTensor_checkGPU; getTextureObject: a
 * texture object over a contiguous float tensor's elements (tex1Dfetch),
 * which the caller destroys (the other types raise: THC made them of float
 * tensors). */
#define THC_TENSOR_DEVICE_API(T, S)                                   \
  cudaTextureObject_t T##_getTextureObject(THCState* state, T* self); \
  int T##_getDevice(THCState* state, const T* self);                  \
  int S##_getDevice(THCState* state, const S* storage);               \
  int T##_checkGPU(THCState* state, unsigned int n_tensors, ...);

/* The same API as TH's (TH/TH.h), each function taking the state first;
 * tensors THC makes are on the current device. */
#define TH_CUDA_TENSOR_API(T, S, real, dtype)                          \
  TH_TENSOR_API(T, S, real, THCState* state, )                         \
  TH_TENSOR_MEMORY_API(T, S, real, THCState* state, THCState* state, ) \
  THC_TENSOR_DEVICE_API(T, S)
TH_FORALL_CUDA_TENSORS(TH_CUDA_TENSOR_API)
#undef TH_CUDA_TENSOR_API
/* Outside a generic file, THCTensor and THCStorage are THCudaTensor and
 * THCudaStorage, as THTensor is THFloatTensor there (TH/TH.h). */
typedef THCudaTensor THCRealTensor;
typedef THCudaStorage THCRealStorage;
/* THC's mean (an integer: the sum divided with C's truncation), meanall
 * and dist (the p-distance, truncated) of its integer types, which TH had not */
#define TH_CUDA_INT_MATH_API(T, S, real, dtype)                           \
  TH_TENSOR_ARITH_API(T, real, int64_t, THCState* state, )                \
  void T##_mean(THCState* state, T* r, T* t, int dimension, int keepdim); \
  int64_t T##_meanall(THCState* state, T* t);                             \
  int64_t T##_dist(THCState* state, T* a, T* b, real value);
TH_FORALL_CUDA_INT_TENSORS(TH_CUDA_INT_MATH_API)
#undef TH_CUDA_INT_MATH_API
#define TH_CUDA_FLOAT_MATH_API(T, S, real, dtype)         \
  TH_TENSOR_ARITH_API(T, real, double, THCState* state, ) \
  TH_TENSOR_FLOAT_MATH_API(T, real, THCState* state, )
TH_FORALL_CUDA_FLOAT_TENSORS(TH_CUDA_FLOAT_MATH_API)
#undef TH_CUDA_FLOAT_MATH_API
/* THC's LAPACK (THCTensorMathMagma.h): TH.h's, the state first */
TH_TENSOR_LAPACK_API(THCudaTensor, THCState* state, )
TH_TENSOR_LAPACK_API(THCudaDoubleTensor, THCState* state, )
/* btrifact and btrisolve (THCTensorMathBlas.h), the pivots a THCudaIntTensor */
TH_TENSOR_BATCH_LU_API(THCudaTensor, THCudaIntTensor, THCState* state, )
TH_TENSOR_BATCH_LU_API(THCudaDoubleTensor, THCudaIntTensor, THCState* state, )
/* THC's convolutions (THCTensorConv.h), float, on torch's conv2d: conv2Dmv
 * (input [I, H, W], kernel [O, I, kh, kw]) and conv2Dmm (a batch [B, I, H,
 * W]): output = beta output + the valid ('v') or full ('f') correlation
 * ('x') or convolution ('c') with strides srow, scol, type "vx" and so on
 * (THC's full form correlates the input zero-padded to ((H - 1) srow + kh -
 * 1) srow + kh rows); conv2DRevger / conv2DRevgerm: TH's Rev form (a strided
 * kernel's gradient), output [K, I, ...] = beta output + alpha ..., summed
 * over the batch for germ; conv2Dmap: output [O, ...] += for each output
 * plane its fanin pairs of (input plane, kernel) from table [O fanin, 2],
 * 1-based, strides stride_x (columns) and stride_y (rows). */
void THCudaTensor_conv2Dmv(THCState* state, THCudaTensor* output, float beta, THCudaTensor* input,
                           THCudaTensor* kernel, int64_t srow, int64_t scol, const char* type);
void THCudaTensor_conv2Dmm(THCState* state, THCudaTensor* output, float beta, THCudaTensor* input,
                           THCudaTensor* kernel, int64_t srow, int64_t scol, const char* type);
void THCudaTensor_conv2DRevger(THCState* state, THCudaTensor* output, float beta, float alpha,
                               THCudaTensor* input, THCudaTensor* kernel, int64_t srow,
                               int64_t scol);
void THCudaTensor_conv2DRevgerm(THCState* state, THCudaTensor* output, float beta, float alpha,
                                THCudaTensor* input, THCudaTensor* kernel, int64_t srow,
                                int64_t scol);
void THCudaTensor_conv2Dmap(THCState* state, THCudaTensor* output, THCudaTensor* input,
                            THCudaTensor* kernel, int64_t stride_x, int64_t stride_y,
                            THCudaTensor* table, int64_t fanin);
/* THC's for its other types raise, as THC's did: "only supported for floats and doubles" */
#define THC_OTHER_BATCH_LU_API(T, S, real, dtype) \
  TH_TENSOR_BATCH_LU_API(T, THCudaIntTensor, THCState* state, )
TH_FORALL_CUDA_INT_TENSORS(THC_OTHER_BATCH_LU_API)
THC_OTHER_BATCH_LU_API(THCudaHalfTensor, , , )
#undef THC_OTHER_BATCH_LU_API
#define TH_CUDA_INDEX_API(T, S, real, dtype)                                          \
  TH_TENSOR_INDEX_API(T, THCudaLongTensor, THCudaByteTensor, real, THCState* state, ) \
  TH_TENSOR_LOGICAL_API(T, real, THCState* state, )
TH_FORALL_CUDA_TENSORS(TH_CUDA_INDEX_API)
#undef TH_CUDA_INDEX_API
/* THC's forms whose index is a THLongTensor or whose mask a THByteTensor, on
 * the CPU (moved to the tensor's device first); sortKeyValueInplace: keys
 * sorted along dim (dir: descending), values (keys' size) permuted with
 * them; reshape as TH's; calculateAdvancedIndexingOffsets: output[i] =
 * baseOffset + the storage offset in `indexed` (up to 5-D) of the i-th
 * element of an advanced indexing, indexers[d] a 1-D index tensor for
 * dimension d (the same count for all) or NULL for a whole dimension, as
 * PyTorch 0.2's indexing called it. */
#define THC_HOST_INDEX_API(T, S, real, dtype)                                                      \
  void T##_indexCopy_long(THCState* state, T* res_, int dim, THLongTensor* indices, T* src);       \
  void T##_indexAdd_long(THCState* state, T* res_, int dim, THLongTensor* indices, T* src);        \
  void T##_indexFill_long(THCState* state, T* tensor, int dim, THLongTensor* index, real val);     \
  void T##_indexSelect_long(THCState* state, T* tensor, T* src, int dim, THLongTensor* index);     \
  void T##_maskedFillByte(THCState* state, T* tensor, THByteTensor* mask, real value);             \
  void T##_maskedCopyByte(THCState* state, T* tensor, THByteTensor* mask, T* src);                 \
  void T##_maskedSelectByte(THCState* state, T* tensor, T* src, THByteTensor* mask);               \
  void T##_sortKeyValueInplace(THCState* state, T* keys, THCudaLongTensor* values, int dim,        \
                               bool dir);                                                          \
  void T##_reshape(THCState* state, T* r, T* t, struct THLongStorage* size);                       \
  void T##_calculateAdvancedIndexingOffsets(THCState* state, THCudaLongTensor* output, T* indexed, \
                                            ptrdiff_t baseOffset, THCudaLongTensor** indexers);
TH_FORALL_CUDA_TENSORS(THC_HOST_INDEX_API)
#undef THC_HOST_INDEX_API
int THCudaByteTensor_logicalall(THCState* state, THCudaByteTensor* self);
int THCudaByteTensor_logicalany(THCState* state, THCudaByteTensor* self);
/* The integer types' products (THCTensorMathBlas.h), computed as TH's (TH.h):
 * THC raised "unimplemented data type" for them. */
#define THC_INT_BLAS_API(T, S, real, dtype)                                                   \
  void T##_addmm(THCState* state, T* r, real beta, T* t, real alpha, T* mat1, T* mat2);       \
  void T##_addmv(THCState* state, T* r, real beta, T* t, real alpha, T* mat, T* vec);         \
  void T##_addr(THCState* state, T* r, real beta, T* t, real alpha, T* vec1, T* vec2);        \
  void T##_addbmm(THCState* state, T* r, real beta, T* t, real alpha, T* batch1, T* batch2);  \
  void T##_baddbmm(THCState* state, T* r, real beta, T* t, real alpha, T* batch1, T* batch2); \
  int64_t T##_dot(THCState* state, T* t, T* src);
TH_FORALL_CUDA_INT_TENSORS(THC_INT_BLAS_API)
#undef THC_INT_BLAS_API

/* THC's random numbers, from torch's CUDA generator of the tensor's device
 * (torch.manual_seed sets it), with THC's parameters: uniform on [a, b),
 * normal (mean, stdv), logNormal (the mean and stdv of its logarithm),
 * exponential (lambda), cauchy (median, sigma), bernoulli 1 with
 * probability p, geometric i >= 1 with P(i) = p (1 - p)^(i - 1); rand and
 * randn resize r to size first. */
#define THC_TENSOR_RANDOM_API(T, S, real, dtype)                             \
  void T##_bernoulli(THCState* state, T* self, double p);                    \
  void T##_geometric(THCState* state, T* self, double p);                    \
  void T##_bernoulli_FloatTensor(THCState* state, T* self, THCudaTensor* p); \
  void T##_bernoulli_DoubleTensor(THCState* state, T* self, THCudaDoubleTensor* p);
#define THC_TENSOR_FLOAT_RANDOM_API(T, S, real, dtype)                                      \
  void T##_uniform(THCState* state, T* self, double a, double b);                           \
  void T##_normal(THCState* state, T* self, double mean, double stdv);                      \
  void T##_logNormal(THCState* state, T* self, double mean, double stdv);                   \
  void T##_exponential(THCState* state, T* self, double lambda);                            \
  void T##_cauchy(THCState* state, T* self, double median, double sigma);                   \
  void T##_rand(THCState* state, T* r, struct THLongStorage* size);                         \
  void T##_randn(THCState* state, T* r, struct THLongStorage* size);                        \
  void T##_normal_means(THCState* state, T* self, T* means, double stddev);                 \
  void T##_normal_stddevs(THCState* state, T* self, double mean, T* stddevs);               \
  void T##_normal_means_stddevs(THCState* state, T* self, T* means, T* stddevs);            \
  /* TH.h's multinomial and alias method, from torch's CUDA generator */                    \
  void T##_multinomial(THCState* state, THCudaLongTensor* self, T* prob_dist, int n_sample, \
                       int with_replacement);                                               \
  void T##_multinomialAliasSetup(THCState* state, T* probs, THCudaLongTensor* J, T* q);     \
  void T##_multinomialAliasDraw(THCState* state, THCudaLongTensor* self, THCudaLongTensor* J, T* q);
TH_FORALL_CUDA_TENSORS(THC_TENSOR_RANDOM_API)
TH_FORALL_CUDA_FLOAT_TENSORS(THC_TENSOR_FLOAT_RANDOM_API)
#undef THC_TENSOR_RANDOM_API
#undef THC_TENSOR_FLOAT_RANDOM_API

/* Copies between types and devices, as THC named them (each as T_copy in TH.h):
 *   THCudaTensor_copyDouble(state, THCudaTensor*, THDoubleTensor*)        from the CPU
 *   THCudaTensor_copyCudaDouble(state, THCudaTensor*, THCudaDoubleTensor*) between CUDA types
 *   THDoubleTensor_copyCudaFloat(state, THDoubleTensor*, THCudaTensor*)    to the CPU
 * and for one element type: THCudaTensor_copyCPU(state, THCudaTensor*, THFloatTensor*),
 * THFloatTensor_copyCuda(state, THFloatTensor*, THCudaTensor*), their Async forms
 * (ordered on the current stream like the others) and THCudaTensor_copyCuda. */
#define THC_COPY_FROM_CUDA(Name, Src, T, ...) \
  void T##_copyCuda##Name(__VA_ARGS__ T* self, Src* src);
#define THC_CUDA_COPY_API(T, S, real, dtype)                     \
  TH_FORALL_CPU_NAMES(TH_COPY_FROM, T, THCState* state, )        \
  TH_FORALL_CUDA_NAMES(THC_COPY_FROM_CUDA, T, THCState* state, ) \
  void T##_copyIgnoringOverlaps(THCState* state, T* self, T* src);
TH_FORALL_CUDA_TENSORS(THC_CUDA_COPY_API)
#undef THC_CUDA_COPY_API
#define THC_CPU_COPY_API(T, S, real, dtype) \
  TH_FORALL_CUDA_NAMES(THC_COPY_FROM_CUDA, T, THCState* state, )
TH_FORALL_CPU_TENSORS(THC_CPU_COPY_API)
#undef THC_CPU_COPY_API
/* and between storages (THCStorageCopy.h), named the same way */
#define TH_FORALL_CUDA_STORAGE_NAMES(X, ...)  \
  X(Byte, THCudaByteStorage, __VA_ARGS__)     \
  X(Char, THCudaCharStorage, __VA_ARGS__)     \
  X(Short, THCudaShortStorage, __VA_ARGS__)   \
  X(Int, THCudaIntStorage, __VA_ARGS__)       \
  X(Long, THCudaLongStorage, __VA_ARGS__)     \
  X(Float, THCudaStorage, __VA_ARGS__)        \
  X(Double, THCudaDoubleStorage, __VA_ARGS__) \
  X(Half, THCudaHalfStorage, __VA_ARGS__)     \
  X(BFloat16, THCudaBFloat16Storage, __VA_ARGS__)
/* ... and S_resize: as TH's (TH/TH.h), on the storage's device */
#define THC_CUDA_STORAGE_COPY_API(T, S, real, dtype)                     \
  TH_STORAGE_COPY_API(S, real, THCState* state, )                        \
  TH_FORALL_CUDA_STORAGE_NAMES(THC_COPY_FROM_CUDA, S, THCState* state, ) \
  int S##_elementSize(THCState* state);                                  \
  void S##_resize(THCState* state, S* self, ptrdiff_t size);
TH_FORALL_CUDA_TENSORS(THC_CUDA_STORAGE_COPY_API)
#undef THC_CUDA_STORAGE_COPY_API
#define THC_CPU_STORAGE_COPY_API(T, S, real, dtype) \
  TH_FORALL_CUDA_STORAGE_NAMES(THC_COPY_FROM_CUDA, S, THCState* state, )
TH_FORALL_CPU_TENSORS(THC_CPU_STORAGE_COPY_API)
#undef THC_CPU_STORAGE_COPY_API
/* X(CPU type, its CUDA type) for the same-type forms */
#define TH_FORALL_CPU_CUDA_PAIRS(X)     \
  X(THByteTensor, THCudaByteTensor)     \
  X(THCharTensor, THCudaCharTensor)     \
  X(THShortTensor, THCudaShortTensor)   \
  X(THIntTensor, THCudaIntTensor)       \
  X(THLongTensor, THCudaLongTensor)     \
  X(THFloatTensor, THCudaTensor)        \
  X(THDoubleTensor, THCudaDoubleTensor) \
  X(THHalfTensor, THCudaHalfTensor)     \
  X(THBFloat16Tensor, THCudaBFloat16Tensor)
#define THC_PAIR_COPY_API(CPU, CUDA)                               \
  void CUDA##_copyCPU(THCState* state, CUDA* self, CPU* src);      \
  void CUDA##_copyAsyncCPU(THCState* state, CUDA* self, CPU* src); \
  void CPU##_copyCuda(THCState* state, CPU* self, CUDA* src);      \
  void CPU##_copyAsyncCuda(THCState* state, CPU* self, CUDA* src); \
  void CUDA##_copyCuda(THCState* state, CUDA* self, CUDA* src);
TH_FORALL_CPU_CUDA_PAIRS(THC_PAIR_COPY_API)
#undef THC_PAIR_COPY_API
/* X(CPU storage, its CUDA storage) for the same-type storage copies */
#define TH_FORALL_CPU_CUDA_STORAGE_PAIRS(X) \
  X(THByteStorage, THCudaByteStorage)       \
  X(THCharStorage, THCudaCharStorage)       \
  X(THShortStorage, THCudaShortStorage)     \
  X(THIntStorage, THCudaIntStorage)         \
  X(THLongStorage, THCudaLongStorage)       \
  X(THFloatStorage, THCudaStorage)          \
  X(THDoubleStorage, THCudaDoubleStorage)   \
  X(THHalfStorage, THCudaHalfStorage)       \
  X(THBFloat16Storage, THCudaBFloat16Storage)
#define THC_STORAGE_PAIR_COPY_API(CPU, CUDA)                  \
  void CUDA##_copyCPU(THCState* state, CUDA* self, CPU* src); \
  void CPU##_copyCuda(THCState* state, CPU* self, CUDA* src); \
  void CUDA##_copyCuda(THCState* state, CUDA* self, CUDA* src);
TH_FORALL_CPU_CUDA_STORAGE_PAIRS(THC_STORAGE_PAIR_COPY_API)
#undef THC_STORAGE_PAIR_COPY_API

/* THC's BLAS on device pointers of the current device, on torch's cuBLAS
 * handle and current stream (through its matmul kernels): as TH's
 * THFloatBlas_gemm / _gemv, the state first. */
void THCudaBlas_Sgemm(THCState* state, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      float alpha, float* a, int64_t lda, float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc);
void THCudaBlas_Dgemm(THCState* state, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      double alpha, double* a, int64_t lda, double* b, int64_t ldb, double beta,
                      double* c, int64_t ldc);
/* half precision (fp32 accumulation, as torch's): THHalf is CUDA's `half` bit for bit */
void THCudaBlas_Hgemm(THCState* state, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      THHalf alpha, THHalf* a, int64_t lda, THHalf* b, int64_t ldb, THHalf beta,
                      THHalf* c, int64_t ldc);
/* batchCount products: the matrices at a[i], b[i], c[i] (arrays of device
 * pointers, in device memory, as cuBLAS takes them), or at a + i * strideA, ... */
void THCudaBlas_SgemmBatched(THCState* state, char transa, char transb, int64_t m, int64_t n,
                             int64_t k, float alpha, const float* a[], int64_t lda,
                             const float* b[], int64_t ldb, float beta, float* c[], int64_t ldc,
                             int64_t batchCount);
void THCudaBlas_DgemmBatched(THCState* state, char transa, char transb, int64_t m, int64_t n,
                             int64_t k, double alpha, const double* a[], int64_t lda,
                             const double* b[], int64_t ldb, double beta, double* c[], int64_t ldc,
                             int64_t batchCount);
void THCudaBlas_SgemmStridedBatched(THCState* state, char transa, char transb, int64_t m, int64_t n,
                                    int64_t k, float alpha, const float* a, int64_t lda,
                                    int64_t strideA, const float* b, int64_t ldb, int64_t strideB,
                                    float beta, float* c, int64_t ldc, int64_t strideC,
                                    int64_t batchCount);
void THCudaBlas_DgemmStridedBatched(THCState* state, char transa, char transb, int64_t m, int64_t n,
                                    int64_t k, double alpha, const double* a, int64_t lda,
                                    int64_t strideA, const double* b, int64_t ldb, int64_t strideB,
                                    double beta, double* c, int64_t ldc, int64_t strideC,
                                    int64_t batchCount);
/* THCBlas.h's dot and ger over device vectors of n elements inc apart
 * (inc < 0: read from the far end, as cuBLAS reads them); a column-major
 * (m x n, lda) += alpha x y^T for ger. */
float THCudaBlas_Sdot(THCState* state, int64_t n, float* x, int64_t incx, float* y, int64_t incy);
double THCudaBlas_Ddot(THCState* state, int64_t n, double* x, int64_t incx, double* y,
                       int64_t incy);
KFL_CUDA_HALF THCudaBlas_Hdot(THCState* state, int64_t n, KFL_CUDA_HALF* x, int64_t incx,
                              KFL_CUDA_HALF* y, int64_t incy);
void THCudaBlas_Sger(THCState* state, int64_t m, int64_t n, float alpha, float* x, int64_t incx,
                     float* y, int64_t incy, float* a, int64_t lda);
void THCudaBlas_Dger(THCState* state, int64_t m, int64_t n, double alpha, double* x, int64_t incx,
                     double* y, int64_t incy, double* a, int64_t lda);
void THCudaBlas_Sgemv(THCState* state, char trans, int64_t m, int64_t n, float alpha, float* a,
                      int64_t lda, float* x, int64_t incx, float beta, float* y, int64_t incy);
void THCudaBlas_Dgemv(THCState* state, char trans, int64_t m, int64_t n, double alpha, double* a,
                      int64_t lda, double* x, int64_t incx, double beta, double* y, int64_t incy);
/* cuBLAS's batched LU over arrays (in device memory) of batchSize n x n
 * column-major matrices: getrf factors each in place (pivot: n 1-based
 * pivots per matrix, NULL for none; info: device memory, per matrix 0 or
 * the first j with U(j, j) exactly zero), getrs solves op(A) X = B in each
 * B (info: host memory, 0), getri writes each inverse into c (info as
 * getrf's). */
#define THC_BLAS_LU_API(P, real)                                                                \
  void THCudaBlas_##P##getrf(THCState* state, int n, real** a, int lda, int* pivot, int* info,  \
                             int batchSize);                                                    \
  void THCudaBlas_##P##getrs(THCState* state, char transa, int n, int nrhs, const real** a,     \
                             int lda, int* pivot, real** b, int ldb, int* info, int batchSize); \
  void THCudaBlas_##P##getri(THCState* state, int n, const real** a, int lda, int* pivot,       \
                             real** c, int ldc, int* info, int batchSize);
THC_BLAS_LU_API(S, float)
THC_BLAS_LU_API(D, double)
#undef THC_BLAS_LU_API

/* THCHalf.h: one value converted on the host (as TH_float2half), or len
 * values between device arrays; whether the current device has half
 * instructions (compute capability 5.3 and up) and "fast" ones (6.0 only),
 * as THC answered. */
KFL_CUDA_HALF THC_float2half(float a);
float THC_half2float(KFL_CUDA_HALF a);
void THCFloat2Half(THCState* state, KFL_CUDA_HALF* out, float* in, ptrdiff_t len);
void THCHalf2Float(THCState* state, float* out, KFL_CUDA_HALF* in, ptrdiff_t len);
int THC_nativeHalfInstructions(THCState* state);
int THC_fastHalfInstructions(THCState* state);
/* THCSleep.h: a kernel spinning `cycles` clock cycles on the current stream. */
void THC_sleep(THCState* state, int64_t cycles);
/* THCGeneral.h: the current device's free and total bytes (cudaMemGetInfo);
 * a state of one's own (every function takes any state: torch started CUDA,
 * THCudaInit and THCudaShutdown do nothing); peer access between devices
 * (get: as set, else whether the device can access the peer), the kernel
 * peer-access flag (kept, off at the start); the caching allocator (torch's:
 * 1); pinned host memory (cudaHostAlloc / cudaFreeHost). */
cudaError_t THCudaMemGetInfo(THCState* state, size_t* freeBytes, size_t* totalBytes);
THCState* THCState_alloc(void);
void THCState_free(THCState* state);
void THCudaInit(THCState* state);
void THCudaShutdown(THCState* state);
int THCState_getPeerToPeerAccess(THCState* state, int dev, int devToAccess);
void THCState_setPeerToPeerAccess(THCState* state, int dev, int devToAccess, int enable);
int THCState_getKernelPeerToPeerAccessEnabled(THCState* state);
void THCState_setKernelPeerToPeerAccessEnabled(THCState* state, int val);
int THCState_isCachingAllocatorEnabled(THCState* state);
void* THCudaHostAlloc(THCState* state, size_t size);
void THCudaHostFree(THCState* state, void* ptr);
void THCudaHostRecord(THCState* state, void* ptr);

#ifdef __cplusplus
}
extern "C++" {
#define THC_ANY_TENSOR_QUERIES(T, S, real, dtype) \
  KFL_ANY_TENSOR_QUERIES(T, (THCState * state, ), (state, ))
TH_FORALL_CUDA_TENSORS(THC_ANY_TENSOR_QUERIES)
#undef THC_ANY_TENSOR_QUERIES
}
#endif

#endif /* KERNFORGE_LEGACY_THC_H */
