// CUDA side of the elementwise launcher: one grid-stride kernel family for
// every elementwise op. 64-bit indices throughout; 16-byte loads and stores
// when the plan says every full-size pointer is aligned and contiguous; the
// grid is sized from the SM count; launches go on the current stream and are
// checked; nothing synchronizes the device.
#pragma once

#include <cuda_runtime.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/macros.h>

#include <algorithm>
#include <utility>

#include "cuda_utils.cuh"
#include "elementwise.h"
#include "elementwise_op.h"

namespace kernforge::cuda {

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class scalar_t, int VEC, class Plan, class F, size_t... K>
__global__ void flat_kernel(const Plan p, const F f, std::index_sequence<K...>) {
  using acc_t = opmath_t<scalar_t>;
  using pack_t = Pack<scalar_t, VEC>;
  const int64_t n = p.numel;
  const int64_t nvec = n / VEC;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  auto* out = static_cast<scalar_t*>(p.data[0]);
  [[maybe_unused]] const scalar_t* row = nullptr;
  if constexpr (Plan::kRow) row = static_cast<const scalar_t*>(p.data[Plan::kArgs - 1]);

  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < nvec;
       v += step) {
    const pack_t in[sizeof...(K) > 0 ? sizeof...(K) : 1] = {
        reinterpret_cast<const pack_t*>(p.data[K + 1])[v]...};
    pack_t o;
    if constexpr (Plan::kRow) {
      int64_t col = (v * VEC) % p.row_size;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const acc_t r = static_cast<acc_t>(row[col * p.row_stride]);
        o.v[j] = static_cast<scalar_t>(f(static_cast<acc_t>(in[K].v[j])..., r));
        col = col + 1 == p.row_size ? 0 : col + 1;
      }
    } else {
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        o.v[j] = static_cast<scalar_t>(f(static_cast<acc_t>(in[K].v[j])...));
    }
    reinterpret_cast<pack_t*>(out)[v] = o;
  }
  // The last n % VEC elements, one per thread of the first block.
  if (VEC > 1 && blockIdx.x == 0) {
    for (int64_t i = nvec * VEC + threadIdx.x; i < n; i += blockDim.x) {
      if constexpr (Plan::kRow) {
        const acc_t r = static_cast<acc_t>(row[(i % p.row_size) * p.row_stride]);
        out[i] = static_cast<scalar_t>(
            f(static_cast<acc_t>(static_cast<const scalar_t*>(p.data[K + 1])[i])..., r));
      } else {
        out[i] = static_cast<scalar_t>(
            f(static_cast<acc_t>(static_cast<const scalar_t*>(p.data[K + 1])[i])...));
      }
    }
  }
}

template <class scalar_t, class Plan, class F, size_t... K>
__global__ void strided_kernel(const Plan p, const F f, std::index_sequence<K...>) {
  using acc_t = opmath_t<scalar_t>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.numel;
       i += step) {
    int64_t off[Plan::kArgs];
    p.strided.at(i, off);
    static_cast<scalar_t*>(p.data[0])[off[0]] = static_cast<scalar_t>(
        f(static_cast<acc_t>(static_cast<const scalar_t*>(p.data[K + 1])[off[K + 1]])...));
  }
}

// Runs out = f(in...) over the plan on `device`'s current stream.
template <class scalar_t, class Plan, class F>
void elementwise(const Plan& p, int32_t device, const F& f) {
  if (p.numel == 0) return;
  constexpr int NIN = Plan::kArgs - 1;
  constexpr int kFull = Plan::kRow ? NIN - 1 : NIN;
  constexpr int kThreads = 256;
  constexpr int kVec = 16 / sizeof(scalar_t);
  const cudaStream_t stream = current_stream(device);
  const int64_t max_blocks = static_cast<int64_t>(sm_count(device)) * (2048 / kThreads);
  auto blocks_for = [&](int64_t work) {
    return static_cast<unsigned>(
        std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, max_blocks));
  };
  switch (p.path) {
    case Path::Vectorized:
      flat_kernel<scalar_t, kVec><<<blocks_for(p.numel / kVec), kThreads, 0, stream>>>(
          p, f, std::make_index_sequence<kFull>{});
      break;
    case Path::Flat:
      flat_kernel<scalar_t, 1>
          <<<blocks_for(p.numel), kThreads, 0, stream>>>(p, f, std::make_index_sequence<kFull>{});
      break;
    case Path::Strided:
      strided_kernel<scalar_t>
          <<<blocks_for(p.numel), kThreads, 0, stream>>>(p, f, std::make_index_sequence<NIN>{});
      break;
  }
  STD_CUDA_KERNEL_LAUNCH_CHECK();
}

struct Launcher {
  // Makes the tensor's device current for the launch.
  struct Guard {
    torch::stable::accelerator::DeviceGuard guard;
    explicit Guard(const Tensor& t) : guard(t.get_device_index()) {}
  };
  template <class scalar_t, class Plan, class F>
  static void elementwise(const Plan& p, const Tensor& like, const F& f) {
    cuda::elementwise<scalar_t>(p, like.get_device_index(), f);
  }
};

}  // namespace kernforge::cuda
