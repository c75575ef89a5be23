// The straight-through round op's CUDA kernels, written with Caffe's macros:
// a grid-stride loop over 16-byte packs when both pointers are 16-byte
// aligned (torch's allocations are), one element a step otherwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "caffe/cuda_macros.h"
#include "round_kernel.h"

namespace {

__device__ __forceinline__ float RoundSTE(float x) {
  return x >= 0.5f ? 1.0f : 0.0f;
}
__device__ __forceinline__ double RoundSTE(double x) {
  return x >= 0.5 ? 1.0 : 0.0;
}
__device__ __forceinline__ __half RoundSTE(__half x) {
  return __float2half(RoundSTE(__half2float(x)));
}
__device__ __forceinline__ __nv_bfloat16 RoundSTE(__nv_bfloat16 x) {
  return __float2bfloat16(RoundSTE(__bfloat162float(x)));
}

template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

// Pack i of x into pack i of y, for the npacks whole packs; the last
// n - npacks * kSize elements go to the first threads of the grid.
template <typename T>
__global__ void RoundSTEForwardPacked(const int64_t npacks, const int64_t n, const T* x, T* y) {
  using P = Pack<T>;
  CUDA_KERNEL_LOOP(i, npacks) {
    P p = reinterpret_cast<const P*>(x)[i];
#pragma unroll
    for (int k = 0; k < P::kSize; ++k) p.v[k] = RoundSTE(p.v[k]);
    reinterpret_cast<P*>(y)[i] = p;
  }
  const int64_t tail =
      npacks * P::kSize + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n) y[tail] = RoundSTE(x[tail]);
}

template <typename T>
__global__ void RoundSTEForward(const int64_t n, const T* x, T* y) {
  CUDA_KERNEL_LOOP(i, n) {
    y[i] = RoundSTE(x[i]);
  }
}

template <typename T>
void Launch(const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0) {
    const int64_t npacks = n / Pack<T>::kSize;
    RoundSTEForwardPacked<T>
        <<<CAFFE_GET_BLOCKS(npacks), CAFFE_CUDA_NUM_THREADS, 0, stream>>>(npacks, n, x, y);
  } else {
    RoundSTEForward<T><<<CAFFE_GET_BLOCKS(n), CAFFE_CUDA_NUM_THREADS, 0, stream>>>(n, x, y);
  }
  CUDA_POST_KERNEL_CHECK;
}

}  // namespace

extern "C" {

void RoundSTEForwardLauncher(const float* x, float* y, int64_t n, cudaStream_t stream) {
  Launch(x, y, n, stream);
}

void RoundSTEForwardDoubleLauncher(const double* x, double* y, int64_t n, cudaStream_t stream) {
  Launch(x, y, n, stream);
}

void RoundSTEForwardHalfLauncher(const THHalf* x, THHalf* y, int64_t n, cudaStream_t stream) {
  Launch(reinterpret_cast<const __half*>(x), reinterpret_cast<__half*>(y), n, stream);
}

void RoundSTEForwardBFloat16Launcher(const THBFloat16* x, THBFloat16* y, int64_t n,
                                     cudaStream_t stream) {
  Launch(reinterpret_cast<const __nv_bfloat16*>(x), reinterpret_cast<__nv_bfloat16*>(y), n, stream);
}

}  // extern "C"
