// The gradients of a small LLTM sequence that are sums over all its steps,
// in one launch where cuBLAS would take three or four calls (d_W's two
// column blocks, d_x, the ones product for d_b), each costing more host
// time than its GPU work:
//   d_W [3S, S + F] = d_gates^T [h_{t-1} | x_t]   over all rows (T * B, or packed N)
//   d_b [3S]        = d_gates^T 1                  (a column of ones after x)
//   d_x [rows, F]   = d_gates W_x
// A block computes one 32 x 32 tile of d_W (with d_b) or of d_x. Its
// threads are groups of 64 (eight groups, four in double); each group sums
// its part of the reduction, a 4 x 4 patch of the tile a thread, staging
// each operand's next 16 rows in registers while it multiplies the current
// ones. The groups' partial tiles are added in a fixed order: the result
// does not depend on timing. Half and bfloat16 accumulate in float.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/cuda_utils.cuh"
#include "common/dispatch.h"

namespace kernforge::cuda_seq {

namespace grads {
constexpr int kTile = 32;                                // a block's tile is kTile x kTile outputs
constexpr int kDepth = 16;                               // reduction rows a group stages at a time
constexpr int kGroupThreads = 64;                        // 8 x 8 threads, 4 x 4 outputs each
constexpr int kStaged = kTile * kDepth / kGroupThreads;  // elements of an operand a thread stages
// A's staged rows: 16-byte aligned for the 4-wide reads, padded so that
// d_x's stores (along k) spread over the banks.
constexpr int kPadA = kTile + 4;
// Groups splitting the reduction: eight in float (more warps to hide the
// loads behind), four in double (their partial tiles fill the shared memory).
template <class acc_t>
constexpr int kGroups = sizeof(acc_t) == 8 ? 4 : 8;
template <class scalar_t>
constexpr int kBlock = kGroups<opmath_t<scalar_t>> * kGroupThreads;
// Above this many multiply-adds the products go to cuBLAS: this kernel
// reaches a fraction of its throughput, and its host saving (about one
// launch in place of three GEMMs) no longer covers the difference.
constexpr int64_t kMaxMacs = int64_t(1) << 27;

template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};
}  // namespace grads

// Outputs may be null (not asked for); h0 null is zeros. All contiguous:
// d_gates [rows, 3S], previous [rows - batch, S] (the h_{t-1} of rows
// batch.., as lltm_sequence_math.h's SeqGrads) and x [rows, F],
// W [3S, ldw]. The d_W tiles cover columns [col0, S + F + (d_b ? 1 : 0)):
// col0 is S + F when only d_b is asked for.
template <class scalar_t>
struct GradsArgs {
  const scalar_t *d_gates, *h0, *previous, *x, *W;
  scalar_t *d_W, *d_b, *d_x;
  int64_t rows, batch, state, features, ldw, col0;
  int64_t tiles_w, tiles_w_n, tiles_x_n;
};

template <class scalar_t>
__global__ void __launch_bounds__(grads::kBlock<scalar_t>)
    weight_grads_kernel(const GradsArgs<scalar_t> a) {
  using namespace grads;
  using acc_t = opmath_t<scalar_t>;
  constexpr int kG = kGroups<acc_t>;
  constexpr int kGroupStage = kDepth * (kPadA + kTile);  // a group's two staged operands
  constexpr int kSums = kG * kTile * (kTile + 1);        // the partial tiles, padded rows
  constexpr int kShared = std::max(kG * kGroupStage, kSums);
  __shared__ Four<acc_t> shared4[(kShared + 3) / 4];
  acc_t* shared = shared4[0].v;

  const int64_t S = a.state, F = a.features, G = 3 * S;
  const bool w = blockIdx.x < a.tiles_w;  // a tile of d_W (and d_b), else of d_x
  const int64_t tile = w ? blockIdx.x : blockIdx.x - a.tiles_w;
  const int64_t tiles_n = w ? a.tiles_w_n : a.tiles_x_n;
  const int64_t m0 = tile / tiles_n * kTile, n0 = (w ? a.col0 : 0) + tile % tiles_n * kTile;
  const int64_t M = w ? G : a.rows, N = w ? S + F + (a.d_b ? 1 : 0) : F, K = w ? a.rows : G;
  const int group = threadIdx.x / kGroupThreads, lane = threadIdx.x % kGroupThreads;
  // The group's share of the reduction, whole stages of kDepth rows; every
  // group takes the same number of stages (zeros past K).
  const int64_t stages = (K + kG * kDepth - 1) / (kG * kDepth);
  const int64_t k_begin = group * stages * kDepth;
  const int64_t k_end = std::min(K, k_begin + stages * kDepth);
  acc_t* As = shared + group * kGroupStage;  // [kDepth][kPadA]: A(m0 + i, k0 + kk) at kk, i
  acc_t* Bs = As + kDepth * kPadA;           // [kDepth][kTile]: B(k0 + kk, n0 + j) at kk, j

  // What a thread stages: element s of a stage is row kk(s) of the operand
  // (A: at column i(s)); consecutive lanes read consecutive addresses.
  // A is d_gates^T for d_W (a thread keeps its m, kk = lane / 32 + 2s) and
  // d_gates for d_x (it keeps its k offset, i = lane / 16 + 4s).
  const int a_kk = w ? lane / kTile : lane % kDepth, a_i = w ? lane % kTile : lane / kDepth;
  const int a_kk_step = w ? kGroupThreads / kTile : 0, a_i_step = w ? 0 : kGroupThreads / kDepth;
  // B: a thread keeps its column n (kk = lane / 32 + 2s). For d_W, column n
  // of [h_{t-1} | x_t | 1]: h_{t-1} is h0 for the first batch rows, then
  // previous; for d_x, column n of W_x^T's transpose (W's last F columns).
  const int64_t n = n0 + lane % kTile;
  enum Column { kNone, kH, kX, kOne, kW };
  const Column column = n >= N ? kNone : !w ? kW : n < S ? kH : n < S + F ? kX : kOne;
  const auto load_a = [&](int s, int64_t k0) -> acc_t {
    const int64_t m = m0 + a_i + s * a_i_step, k = k0 + a_kk + s * a_kk_step;
    if (m >= M || k >= k_end) return acc_t(0);
    return static_cast<acc_t>(w ? a.d_gates[k * G + m] : a.d_gates[m * G + k]);
  };
  const auto load_b = [&](int s, int64_t k0) -> acc_t {
    const int64_t k = k0 + lane / kTile + s * (kGroupThreads / kTile);
    if (k >= k_end) return acc_t(0);
    switch (column) {
      case kH:
        if (k >= a.batch) return static_cast<acc_t>(a.previous[(k - a.batch) * S + n]);
        return a.h0 ? static_cast<acc_t>(a.h0[k * S + n]) : acc_t(0);
      case kX: return static_cast<acc_t>(a.x[k * F + n - S]);
      case kOne: return acc_t(1);
      case kW: return static_cast<acc_t>(a.W[k * a.ldw + S + n]);
      default: return acc_t(0);
    }
  };

  acc_t ra[kStaged], rb[kStaged];
  const auto fetch = [&](int64_t k0) {
#pragma unroll
    for (int s = 0; s < kStaged; ++s) {
      ra[s] = load_a(s, k0);
      rb[s] = load_b(s, k0);
    }
  };

  // Thread (ty, tx) of its group computes rows 4 ty.. and columns 4 tx.. of the tile.
  const int ty = lane / 8, tx = lane % 8;
  acc_t acc[4][4] = {};
  fetch(k_begin);
  for (int64_t stage = 0; stage < stages; ++stage) {
#pragma unroll
    for (int s = 0; s < kStaged; ++s) {
      As[(a_kk + s * a_kk_step) * kPadA + a_i + s * a_i_step] = ra[s];
      Bs[lane + s * kGroupThreads] = rb[s];
    }
    __syncthreads();
    if (stage + 1 < stages) fetch(k_begin + (stage + 1) * kDepth);
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      const Four<acc_t> av = *reinterpret_cast<const Four<acc_t>*>(As + kk * kPadA + 4 * ty);
      const Four<acc_t> bv = *reinterpret_cast<const Four<acc_t>*>(Bs + kk * kTile + 4 * tx);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += av.v[i] * bv.v[j];
    }
    __syncthreads();
  }

  // The groups' partial tiles, then their sum in group order.
  acc_t* sums = shared;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      sums[(group * kTile + 4 * ty + i) * (kTile + 1) + 4 * tx + j] = acc[i][j];
  __syncthreads();
  for (int e = threadIdx.x; e < kTile * kTile; e += kBlock<scalar_t>) {
    const int i = e / kTile, j = e % kTile;
    const int64_t m = m0 + i, col = n0 + j;
    if (m >= M || col >= N) continue;
    acc_t total = 0;
#pragma unroll
    for (int g = 0; g < kG; ++g) total += sums[(g * kTile + i) * (kTile + 1) + j];
    if (!w)
      a.d_x[m * F + col] = static_cast<scalar_t>(total);
    else if (col < S + F)
      a.d_W[m * (S + F) + col] = static_cast<scalar_t>(total);
    else
      a.d_b[m] = static_cast<scalar_t>(total);
  }
}

// Whether weight_grads_kernel takes a sequence of this size.
inline bool weight_grads_fit(int64_t rows, int64_t state, int64_t features) {
  return rows * 3 * state * (state + 2 * features + 1) <= grads::kMaxMacs;
}

// Launches the kernel for what `a` asks for (its tile counts filled in here).
template <class scalar_t>
void launch_weight_grads(GradsArgs<scalar_t> a, int32_t device) {
  const auto tiles = [](int64_t n) { return (n + grads::kTile - 1) / grads::kTile; };
  const int64_t S = a.state, F = a.features;
  const bool w = a.d_W || a.d_b;
  a.col0 = a.d_W ? 0 : S + F;
  a.tiles_w_n = w ? tiles(S + F + (a.d_b ? 1 : 0) - a.col0) : 0;
  a.tiles_w = w ? tiles(3 * S) * a.tiles_w_n : 0;
  a.tiles_x_n = a.d_x ? tiles(F) : 0;
  const int64_t blocks = a.tiles_w + tiles(a.rows) * a.tiles_x_n;
  if (blocks == 0) return;
  weight_grads_kernel<scalar_t>
      <<<static_cast<unsigned>(blocks), grads::kBlock<scalar_t>, 0, cuda::current_stream(device)>>>(
          a);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace kernforge::cuda_seq
