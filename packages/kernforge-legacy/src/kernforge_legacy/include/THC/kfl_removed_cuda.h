/* What 2017 CUDA code called that today's toolkits and GPUs took away, given
 * back over what replaced it:
 *
 * - the cudaThread* runtime calls, deprecated by CUDA 4.0 for their
 *   cudaDevice* names and removed by CUDA 13;
 * - the warp shuffles and votes without a mask (__shfl, __shfl_up,
 *   __shfl_down, __shfl_xor, __any, __all, __ballot), which devices of
 *   compute capability 7.0 and later do not have: here over the lanes active
 *   at the call (__activemask()), the lanes that exchanged before Volta's
 *   independent thread scheduling. Code that shuffles in diverged branches
 *   and counts on the warp having reconverged got no such promise then either.
 *
 * THC.h includes this header, and create_extension's build() puts it before
 * every .cu source it compiles; kernels that a Makefile compiles with its own
 * nvcc get it with `-include THC/kfl_removed_cuda.h` (under include_dir()).
 * A name the code defines as a macro itself is left to the code. */
#ifndef KERNFORGE_LEGACY_REMOVED_CUDA_H
#define KERNFORGE_LEGACY_REMOVED_CUDA_H

#include <cuda_runtime_api.h>

#if CUDART_VERSION >= 13000
#ifndef cudaThreadSynchronize
static inline cudaError_t cudaThreadSynchronize(void) {
  return cudaDeviceSynchronize();
}
#endif
#ifndef cudaThreadExit
static inline cudaError_t cudaThreadExit(void) {
  return cudaDeviceReset();
}
#endif
#ifndef cudaThreadSetLimit
static inline cudaError_t cudaThreadSetLimit(enum cudaLimit limit, size_t value) {
  return cudaDeviceSetLimit(limit, value);
}
#endif
#ifndef cudaThreadGetLimit
static inline cudaError_t cudaThreadGetLimit(size_t* value, enum cudaLimit limit) {
  return cudaDeviceGetLimit(value, limit);
}
#endif
#ifndef cudaThreadGetCacheConfig
static inline cudaError_t cudaThreadGetCacheConfig(enum cudaFuncCache* config) {
  return cudaDeviceGetCacheConfig(config);
}
#endif
#ifndef cudaThreadSetCacheConfig
static inline cudaError_t cudaThreadSetCacheConfig(enum cudaFuncCache config) {
  return cudaDeviceSetCacheConfig(config);
}
#endif
#endif /* CUDART_VERSION >= 13000 */

/* __any, the vote, is also a name in CUDA's C++ library: cuda::std's
 * invoke.h, which thrust and CUB include, declares a struct __any with a
 * constructor __any(...), which a function-like macro would rewrite in every
 * .cu file that includes thrust after this header. An object-like macro
 * renames the vote's calls and that struct alike, in the host pass too, so
 * that both passes see the same names. */
#if defined(__CUDACC__) && !defined(__any)
static __device__ __forceinline__ int kfl_any_active(int predicate) {
  return __any_sync(__activemask(), predicate);
}
#define __any kfl_any_active
#endif

/* The device pass for compute capability 7.0 and later, the one pass that
 * lacks them (the host pass and older devices see CUDA's own). */
#if defined(__CUDACC__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
/* __shfl(var, src_lane), __shfl_up(var, delta), __shfl_down(var, delta) and
 * __shfl_xor(var, lane_mask), each over its _sync form. */
#define KFL_SHUFFLE_WITHOUT_MASK(name, lane_type)                                  \
  template <typename T>                                                            \
  __device__ __forceinline__ T name(T var, lane_type lane, int width = warpSize) { \
    return name##_sync(__activemask(), var, lane, width);                          \
  }
#ifndef __shfl
KFL_SHUFFLE_WITHOUT_MASK(__shfl, int)
#endif
#ifndef __shfl_up
KFL_SHUFFLE_WITHOUT_MASK(__shfl_up, unsigned int)
#endif
#ifndef __shfl_down
KFL_SHUFFLE_WITHOUT_MASK(__shfl_down, unsigned int)
#endif
#ifndef __shfl_xor
KFL_SHUFFLE_WITHOUT_MASK(__shfl_xor, int)
#endif
#undef KFL_SHUFFLE_WITHOUT_MASK

/* CUDA declares __all and __ballot (and __any, above) for every device as
 * built-ins that compile to the unmasked vote, which ptxas refuses for sm_70
 * and later: macros take their calls instead (CUDA's headers are read before
 * this one). */
#ifndef __all
#define __all(predicate) __all_sync(__activemask(), (predicate))
#endif
#ifndef __ballot
#define __ballot(predicate) __ballot_sync(__activemask(), (predicate))
#endif
#endif

#endif /* KERNFORGE_LEGACY_REMOVED_CUDA_H */
