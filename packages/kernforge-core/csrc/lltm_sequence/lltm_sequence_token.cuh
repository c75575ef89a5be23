// One step of a small batch (a generated token: T = 1, B <= kTokenMaxBatch)
// as a matrix-vector product. A block owns one hidden unit j: its threads
// split the K = S + F columns of the unit's three rows of W (j, S + j,
// 2S + j), each reading its columns of W once and of [h0 | x] for every row,
// and after the block's reduction thread b applies the cell to row b. No
// staging of W in shared memory and no grid synchronization, as the
// persistent kernels need for many steps: the step reads W once from memory
// (or L2, where a generation loop keeps it) in an ordinary launch. A
// token's layers run in one cooperative launch where the grid fits on the
// device at once: layer k + 1 reads layer k's h after a grid synchronization.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/cuda_utils.cuh"
#include "common/dispatch.h"
#include "lltm/lltm_math.h"
#include "lltm_sequence/lltm_sequence_math.h"

namespace kernforge::cuda_seq {

constexpr int kTokenThreads = 128;
constexpr int64_t kTokenMaxBatch = 16;
constexpr int kTokenMaxLayers = 4;  // layers of one launch (more: a launch each)

// A step's buffers (TokenBuffers) and sizes: B = batch rows, S the state,
// F the input's features.
template <class scalar_t>
struct TokenArgs : TokenBuffers<scalar_t> {
  int64_t ldw;
  int batch, S, F;
};

// acc[g][b] += sum over this thread's packets of w_g[k] v_b[k], k < n (in
// packets of V), for the rows g of W at w (rows `row` apart) and the batch
// rows b of v (rows `ldv` apart). v is not __restrict__: in the layers'
// launch it is the h that other blocks wrote before the grid synchronization,
// which the read-only data path may not serve.
template <int V, int B, class scalar_t, class acc_t>
__device__ inline void token_product(const scalar_t* __restrict__ w, int64_t row, const scalar_t* v,
                                     int64_t ldv, int n, int batch, acc_t (&acc)[3][B]) {
  using P = cuda::Packet<V, scalar_t>;
#pragma unroll 2
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    P wg[3];
#pragma unroll
    for (int g = 0; g < 3; ++g) wg[g] = reinterpret_cast<const P*>(w + g * row)[k];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      if (b >= batch) break;
      const P vb = reinterpret_cast<const P*>(v + b * ldv)[k];
#pragma unroll
      for (int g = 0; g < 3; ++g)
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[g][b] += static_cast<acc_t>(wg[g].v[e]) * static_cast<acc_t>(vb.v[e]);
    }
  }
}

// Hidden unit j = blockIdx.x of one layer's step.
template <class scalar_t, int B, int V>
__device__ inline void token_step(const TokenArgs<scalar_t>& a) {
  using acc_t = opmath_t<scalar_t>;
  constexpr int kWarps = kTokenThreads / 32;
  __shared__ acc_t part[kWarps][3][B];
  const int j = blockIdx.x, S = a.S;
  const int64_t row =
      static_cast<int64_t>(S) * a.ldw;  // from unit j's row of one gate to the next's
  const scalar_t* w = a.W + static_cast<int64_t>(j) * a.ldw;
  acc_t acc[3][B];
#pragma unroll
  for (int g = 0; g < 3; ++g)
#pragma unroll
    for (int b = 0; b < B; ++b) acc[g][b] = acc_t(0);
  if (a.h0) token_product<V, B>(w, row, a.h0, S, S / V, a.batch, acc);
  token_product<V, B>(w + S, row, a.x, a.F, a.F / V, a.batch, acc);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int g = 0; g < 3; ++g)
#pragma unroll
    for (int b = 0; b < B; ++b) {
      acc_t s = acc[g][b];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) part[warp][g][b] = s;
    }
  __syncthreads();
  const int b = threadIdx.x;
  if (b >= a.batch) return;
  acc_t pre[3];
#pragma unroll
  for (int g = 0; g < 3; ++g) {
    pre[g] = static_cast<acc_t>(a.bias[g * S + j]);
#pragma unroll
    for (int u = 0; u < kWarps; ++u) pre[g] += part[u][g][b];
  }
  const int64_t e = static_cast<int64_t>(b) * S + j;
  acc_t i, o, z, cn, hn;
  lltm_cell_forward<acc_t>(pre[0], pre[1], pre[2], a.c0 ? static_cast<acc_t>(a.c0[e]) : acc_t(0), i,
                           o, z, cn, hn);
  a.output[e] = static_cast<scalar_t>(hn);
  a.c_n[e] = static_cast<scalar_t>(cn);
  if (a.h_n) a.h_n[e] = static_cast<scalar_t>(hn);
  if (a.gates) {
    scalar_t* gr = a.gates + static_cast<int64_t>(b) * 3 * S;
    gr[j] = static_cast<scalar_t>(i);
    gr[S + j] = static_cast<scalar_t>(o);
    gr[2 * S + j] = static_cast<scalar_t>(z);
  }
  if (a.cells) a.cells[e] = static_cast<typename TokenArgs<scalar_t>::cell_t>(cn);
}

template <class scalar_t, int B, int V>
__global__ void __launch_bounds__(kTokenThreads) token_forward_kernel(TokenArgs<scalar_t> a) {
  token_step<scalar_t, B, V>(a);
}

template <class scalar_t>
struct TokenLayers {
  TokenArgs<scalar_t> layer[kTokenMaxLayers];
  bool vector[kTokenMaxLayers];  // the layer's loads kTokenVector values each
  int count;
};

template <class scalar_t, int B, int V>
__global__ void __launch_bounds__(kTokenThreads) token_layers_kernel(TokenLayers<scalar_t> a) {
  for (int k = 0; k < a.count; ++k) {
    // part[] of the step before is free again: every thread passed the
    // step's __syncthreads and the grid's synchronization.
    if (k > 0) cooperative_groups::this_grid().sync();
    if (a.vector[k])
      token_step<scalar_t, B, V>(a.layer[k]);
    else
      token_step<scalar_t, B, 1>(a.layer[k]);
  }
}

// Whether a step of `batch` rows takes token_forward_kernel.
inline bool token_fits(int64_t steps, int64_t batch) {
  return steps == 1 && batch >= 1 && batch <= kTokenMaxBatch;
}

// Four values a load where every row and operand allows it.
constexpr int kTokenVector = 4;

template <class scalar_t>
bool token_vectorizes(const TokenArgs<scalar_t>& a) {
  const auto aligned = [](const void* p) {
    return p == nullptr || reinterpret_cast<uintptr_t>(p) % (kTokenVector * sizeof(scalar_t)) == 0;
  };
  return (a.S | a.F | static_cast<int>(a.ldw & 3)) % kTokenVector == 0 && aligned(a.W) &&
         aligned(a.x) && aligned(a.h0);
}

// f(batch tag) with B the least of 1, 2, 4, 8, 16 that holds `batch` rows.
template <class F>
void by_token_batch(int batch, const F& f) {
  if (batch <= 1)
    f(std::integral_constant<int, 1>{});
  else if (batch <= 2)
    f(std::integral_constant<int, 2>{});
  else if (batch <= 4)
    f(std::integral_constant<int, 4>{});
  else if (batch <= 8)
    f(std::integral_constant<int, 8>{});
  else
    f(std::integral_constant<int, 16>{});
}

// One launch for a step of a.batch <= kTokenMaxBatch rows.
template <class scalar_t>
void launch_token(const TokenArgs<scalar_t>& a, int32_t device) {
  const cudaStream_t stream = cuda::current_stream(device);
  by_token_batch(a.batch, [&](auto batch) {
    constexpr int B = decltype(batch)::value;
    if (token_vectorizes(a))
      token_forward_kernel<scalar_t, B, kTokenVector><<<a.S, kTokenThreads, 0, stream>>>(a);
    else
      token_forward_kernel<scalar_t, B, 1><<<a.S, kTokenThreads, 0, stream>>>(a);
  });
  STD_CUDA_KERNEL_LAUNCH_CHECK();
}

// Up to kTokenMaxLayers layers of one token (the same S and batch, layer
// k + 1's x layer k's output) in one cooperative launch where the S blocks
// fit on the device at once, else a launch each.
template <class scalar_t>
void launch_token_layers(TokenLayers<scalar_t>& a, int32_t device) {
  const TokenArgs<scalar_t>& first = a.layer[0];
  for (int k = 0; k < a.count; ++k) a.vector[k] = token_vectorizes(a.layer[k]);
  bool launched = false;
  by_token_batch(first.batch, [&](auto batch) {
    constexpr auto kernel = token_layers_kernel<scalar_t, decltype(batch)::value, kTokenVector>;
    if (a.count > 1 && first.S <= cuda::resident_blocks<kernel>(kTokenThreads, 0, device)) {
      void* params[] = {&a};
      STD_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel),
                                                 dim3(first.S), dim3(kTokenThreads), params, 0,
                                                 cuda::current_stream(device)));
      launched = true;
    }
  });
  if (!launched)
    for (int k = 0; k < a.count; ++k) launch_token(a.layer[k], device);
}

}  // namespace kernforge::cuda_seq
