/* THC/THCDeviceUtils.cuh: the small device helpers THC's and THCUNN's kernels
 * used, for CUDA sources that copied them: THCCeilDiv, THCRoundUp, doLdg and
 * the warp shuffles WARP_SHFL, WARP_SHFL_XOR, WARP_SHFL_UP, WARP_SHFL_DOWN and
 * WARP_BALLOT over the _sync intrinsics (all lanes of the warp by default, as
 * THC passed them). */
#ifndef KERNFORGE_LEGACY_THC_DEVICE_UTILS_CUH
#define KERNFORGE_LEGACY_THC_DEVICE_UTILS_CUH

#include <cuda_runtime.h>

/* ceil(a / b) and a rounded up to a multiple of b, for positive integers */
template <typename T>
__host__ __device__ __forceinline__ T THCCeilDiv(T a, T b) {
  return (a + b - 1) / b;
}
template <typename T>
__host__ __device__ __forceinline__ T THCRoundUp(T a, T b) {
  return THCCeilDiv(a, b) * b;
}

/* a read through the read-only data cache */
template <typename T>
__device__ __forceinline__ T doLdg(const T* p) {
  return __ldg(p);
}

__device__ __forceinline__ unsigned int WARP_BALLOT(int predicate,
                                                    unsigned int mask = 0xffffffffu) {
  return __ballot_sync(mask, predicate);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = warpSize,
                                       unsigned int mask = 0xffffffffu) {
  return __shfl_sync(mask, value, srcLane, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = warpSize,
                                           unsigned int mask = 0xffffffffu) {
  return __shfl_xor_sync(mask, value, laneMask, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned int delta, int width = warpSize,
                                          unsigned int mask = 0xffffffffu) {
  return __shfl_up_sync(mask, value, delta, width);
}
template <typename T>
__device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = warpSize,
                                            unsigned int mask = 0xffffffffu) {
  return __shfl_down_sync(mask, value, delta, width);
}

#endif /* KERNFORGE_LEGACY_THC_DEVICE_UTILS_CUH */
