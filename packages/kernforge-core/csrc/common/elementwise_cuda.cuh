// CUDA side of the elementwise launcher: one grid-stride kernel family for
// every elementwise op. 64-bit indices throughout; 16-byte loads and stores
// when the plan says every full-size pointer is aligned and contiguous; the
// grid is sized from the SM count and the kernel's occupancy; launches go on
// the current stream and are checked; nothing synchronizes the device.
#pragma once

#include <cuda_runtime.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/macros.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "cuda_utils.cuh"
#include "elementwise.h"
#include "elementwise_op.h"

namespace kernforge::cuda {

constexpr int kThreads = 256;
// Each thread handles kUnroll packs per grid-stride step and issues all their
// loads before any arithmetic. The grid holds up to kMaxWaves resident waves
// of blocks (sized from the SM count and the kernel's occupancy), so large
// tensors run as many short blocks that the block scheduler balances, and
// the grid-stride loop covers anything beyond. Measured on an H100 at 2^28
// fp32 (benchmarks/PERFORMANCE.md): 1 wave x 4 packs 1135 us, 64 waves x 4
// packs 1074 us, 256 waves x 2 packs 1072 us; eager a * b 1067-1074 us.
constexpr int kUnroll = 2;
constexpr int64_t kMaxWaves = 256;

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// K... indexes the full-size inputs (the row input, if any, comes last).
template <class scalar_t, int VEC, class Plan, class F, size_t... K>
__device__ __forceinline__ void flat_body(const Plan& p, const F& f, std::index_sequence<K...>) {
  using acc_t = opmath_t<scalar_t>;
  using pack_t = Pack<scalar_t, VEC>;
  constexpr int NLOAD = sizeof...(K);
  const int64_t n = p.numel;
  const int64_t npack = n / VEC;
  const int64_t tile = static_cast<int64_t>(blockDim.x) * kUnroll;
  auto* out = static_cast<scalar_t*>(p.data[0]);
  [[maybe_unused]] const scalar_t* row = nullptr;
  if constexpr (Plan::kRow) row = static_cast<const scalar_t*>(p.data[Plan::kArgs - 1]);

  for (int64_t base = blockIdx.x * tile; base < npack; base += gridDim.x * tile) {
    pack_t in[kUnroll][NLOAD];
    KF_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t v = base + u * blockDim.x + threadIdx.x;
      if (v < npack) ((in[u][K] = reinterpret_cast<const pack_t*>(p.data[K + 1])[v]), ...);
    }
    KF_UNROLL
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t v = base + u * blockDim.x + threadIdx.x;
      if (v >= npack) break;
      pack_t o;
      if constexpr (Plan::kRow) {
        int64_t col = (v * VEC) % p.row_size;
        KF_UNROLL
        for (int j = 0; j < VEC; ++j) {
          const acc_t r = static_cast<acc_t>(row[col * p.row_stride]);
          o.v[j] = static_cast<scalar_t>(f(static_cast<acc_t>(in[u][K].v[j])..., r));
          col = col + 1 == p.row_size ? 0 : col + 1;
        }
      } else {
        KF_UNROLL
        for (int j = 0; j < VEC; ++j)
          o.v[j] = static_cast<scalar_t>(f(static_cast<acc_t>(in[u][K].v[j])...));
      }
      reinterpret_cast<pack_t*>(out)[v] = o;
    }
  }
  // The last n % VEC elements, one per thread of the first block.
  if (VEC > 1 && blockIdx.x == 0) {
    for (int64_t i = npack * VEC + threadIdx.x; i < n; i += blockDim.x) {
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

template <class scalar_t, int VEC, class Plan, class F, int NLOAD>
__global__ void flat_kernel(const Plan p, const F f) {
  flat_body<scalar_t, VEC>(p, f, std::make_index_sequence<NLOAD>{});
}

template <class scalar_t, class Plan, class F, size_t... K>
__device__ __forceinline__ void strided_body(const Plan& p, const F& f, std::index_sequence<K...>) {
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

template <class scalar_t, class Plan, class F>
__global__ void strided_kernel(const Plan p, const F f) {
  strided_body<scalar_t>(p, f, std::make_index_sequence<Plan::kArgs - 1>{});
}

// At most kMaxWaves resident waves of kThreads-thread blocks, fewer for small inputs.
template <auto Kernel, class Plan, class F>
void launch_wave(const Plan& p, const F& f, int64_t items_per_block, int32_t device) {
  const int64_t blocks =
      std::clamp<int64_t>((p.numel + items_per_block - 1) / items_per_block, 1,
                          kMaxWaves * resident_blocks<Kernel>(kThreads, 0, device));
  Kernel<<<static_cast<unsigned>(blocks), kThreads, 0, current_stream(device)>>>(p, f);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
}

// Runs out = f(in...) over the plan on `device`'s current stream.
template <class scalar_t, class Plan, class F>
void elementwise(const Plan& p, int32_t device, const F& f) {
  if (p.numel == 0) return;
  constexpr int kFull = Plan::kRow ? Plan::kArgs - 2 : Plan::kArgs - 1;
  constexpr int kVec = 16 / sizeof(scalar_t);
  switch (p.path) {
    case Path::Vectorized:
      launch_wave<flat_kernel<scalar_t, kVec, Plan, F, kFull>>(
          p, f, int64_t{kThreads} * kUnroll * kVec, device);
      break;
    case Path::Flat:
      launch_wave<flat_kernel<scalar_t, 1, Plan, F, kFull>>(p, f, int64_t{kThreads} * kUnroll,
                                                            device);
      break;
    case Path::Strided:
      launch_wave<strided_kernel<scalar_t, Plan, F>>(p, f, int64_t{kThreads}, device);
      break;
  }
}

struct Launcher {
  // Makes the tensor's device current for the launch (a guard is created
  // only when another device is current: it costs a round trip into torch).
  struct Guard {
    std::optional<torch::stable::accelerator::DeviceGuard> guard;
    explicit Guard(const Tensor& t) {
      const int32_t want = t.get_device_index();
      int current = -1;
      STD_CUDA_CHECK(cudaGetDevice(&current));
      if (current != want) guard.emplace(want);
    }
  };
  template <class scalar_t, class Plan, class F>
  static void elementwise(const Plan& p, const Tensor& like, const F& f) {
    cuda::elementwise<scalar_t>(p, like.get_device_index(), f);
  }
};

}  // namespace kernforge::cuda
