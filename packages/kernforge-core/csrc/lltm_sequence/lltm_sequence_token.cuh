// One step of a small batch (a generated token: T = 1, B <= kTokenMaxBatch)
// as a matrix-vector product. A block owns one hidden unit j: its threads
// split the K = S + F columns of the unit's three rows of W (j, S + j,
// 2S + j), each reading its columns of W once and of [h0 | x] for every row,
// and after the block's reduction thread b applies the cell to row b. No
// staging of W in shared memory and no grid synchronization, as the
// persistent kernels need for many steps: the step reads W once from memory
// (or L2, where a generation loop keeps it) in an ordinary launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/cuda_utils.cuh"
#include "common/dispatch.h"
#include "lltm/lltm_math.h"

namespace kernforge::cuda_seq {

constexpr int kTokenThreads = 128;
constexpr int64_t kTokenMaxBatch = 8;

template <class scalar_t>
struct TokenArgs {
  using cell_t = opmath_t<scalar_t>;
  // x [B, F]; W [3S, ldw], W_h its first S columns and W_x the next F;
  // h0 [B, S] and c0 [B, S] (null: zeros)
  const scalar_t *x, *bias, *W, *h0;
  const cell_t* c0;
  scalar_t *output, *c_n, *h_n;  // [B, S]; h_n may be null
  scalar_t* gates;               // [B, 3S] (i, o, z), or null (inference)
  cell_t* cells;                 // [B, S], or null (inference)
  int64_t ldw;
  int batch, S, F;
};

// V consecutive values of T in one load (V T's aligned to V * sizeof(T)).
template <int V, class T>
struct alignas(V * sizeof(T)) Packet {
  T v[V];
};

// acc[g][b] += sum over this thread's packets of w_g[k] v_b[k], k < n (in
// packets of V), for the rows g of W at w (rows `row` apart) and the batch
// rows b of v (rows `ldv` apart).
template <int V, int B, class scalar_t, class acc_t>
__device__ inline void token_product(const scalar_t* __restrict__ w, int64_t row,
                                     const scalar_t* __restrict__ v, int64_t ldv, int n, int batch,
                                     acc_t (&acc)[3][B]) {
  using P = Packet<V, scalar_t>;
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

template <class scalar_t, int B, int V>
__global__ void __launch_bounds__(kTokenThreads) token_forward_kernel(TokenArgs<scalar_t> a) {
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

// Whether a step of `batch` rows takes token_forward_kernel.
inline bool token_fits(int64_t steps, int64_t batch) {
  return steps == 1 && batch >= 1 && batch <= kTokenMaxBatch;
}

template <class scalar_t, int B>
void launch_token_batch(const TokenArgs<scalar_t>& a, cudaStream_t stream) {
  // Four values a load where every row and operand allows it.
  constexpr int kV = 4;
  const auto aligned = [](const void* p) {
    return p == nullptr || reinterpret_cast<uintptr_t>(p) % (kV * sizeof(scalar_t)) == 0;
  };
  const bool vec = (a.S | a.F | static_cast<int>(a.ldw & 3)) % kV == 0 && aligned(a.W) &&
                   aligned(a.x) && aligned(a.h0);
  if (vec)
    token_forward_kernel<scalar_t, B, kV><<<a.S, kTokenThreads, 0, stream>>>(a);
  else
    token_forward_kernel<scalar_t, B, 1><<<a.S, kTokenThreads, 0, stream>>>(a);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
}

// One launch for a step of a.batch <= kTokenMaxBatch rows.
template <class scalar_t>
void launch_token(const TokenArgs<scalar_t>& a, int32_t device) {
  const cudaStream_t stream = cuda::current_stream(device);
  if (a.batch <= 1)
    launch_token_batch<scalar_t, 1>(a, stream);
  else if (a.batch <= 2)
    launch_token_batch<scalar_t, 2>(a, stream);
  else if (a.batch <= 4)
    launch_token_batch<scalar_t, 4>(a, stream);
  else
    launch_token_batch<scalar_t, 8>(a, stream);
}

}  // namespace kernforge::cuda_seq
