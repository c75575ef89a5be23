// The recurrence of an LLTM sequence as one persistent kernel per direction,
// for float, half and bfloat16 at small batch (the persistent-RNN idea): a
// block owns the hidden units [j0, j0 + J) of the batch rows [r0, r0 + R)
// and keeps its units' slice of W_h in shared memory (as float, or as the
// tensor-core product takes it) for the whole sequence; per step it reads
// its rows of the previous h (or d_gates) from L2 (the backward's float
// rows in one bulk copy, with no thread's work), computes its units' part
// of the recurrent product (on tensor cores where it fits: the forward's,
// and the 16-bit backward's where the FMA product's plan does not)
// and their gate math, writes them, and the grid
// synchronizes once (a cooperative launch keeps every block resident).
// Splitting the batch over groups of blocks cuts what each block reads per
// step, at the price of a larger W slice a block.
//   forward,  step t:  pre = P_t + b + h_{t-1} W_h^T  (its 3J columns)
//                      -> gates_t, c_t, h_t = output_t  (its J columns)
//   backward, step t:  d_gates_t, d_c from g_t, d_c    (its J units)
//                      g_{t-1} = grad_output_{t-1} + d_gates_t W_h  (its J columns)
// The cell state and the recurrent gradients stay in float, in the block
// (but for the packed forward's cells, below).
// A packed sequence runs step t on its first B_t rows only (offsets: step
// t's rows are [offsets[t], offsets[t + 1]) of every [N, ...] tensor). The
// forward spreads each step's B_t rows evenly over the batch groups (the
// first rows run the most steps: with fixed groups, the first group's full
// share set every step's time), so its cells live in global memory; in the
// backward a row joins at its own last step with grad_output alone as its g.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "common/cuda_utils.cuh"
#include "lltm/lltm_math.h"

namespace kernforge::cuda_seq {

constexpr int kThreads = 512;
constexpr int kRows = 4;           // batch rows per thread in the recurrent product
constexpr int64_t kMaxBatch = 64;  // above it, the grid only in batch groups (see plan)
// Above it, cuBLAS per step (the GEMM is large enough).
constexpr int64_t kMaxGroupedBatch = 256;
// Above it, the 16-bit backward steps where its FMA grid does not fit,
// rather than take tensor cores (mma_plan). On an H200, one layer, fp16
// training at T = 50, F = S: stepping, (B, S) = (128, 1024) took 2108 to
// 2451 us, on tensor cores 1715 to 1739 (their product from one base
// address a lane; before that, 22 us a step made 64 the cap); bfloat16
// 2957 to 3022 against 1735 to 1742. At (256, 1024) bfloat16, T = 32, the
// grid's backward took 798 us (25 a step), the steps' kernels 10.7 a step.
constexpr int64_t kMaxMmaBackwardBatch = 128;
// The most values of K one thread multiplies a step (K over the lanes that
// share an item). Above it the step is one thread's long serial sum, and
// cuBLAS per step is faster: on an H200 at B = 64, T = 72, float, the grid's
// training step took 2.4 ms at S = 512 (backward 192 values a thread) and
// 7.8 ms at S = 640 (480; stepping 4.4), its inference 2.2 ms at S = 768
// (192; stepping 2.8) and 3.7 ms at S = 896 (224; stepping 2.8).
constexpr int64_t kMaxSerialK = 192;

// A load through L2 only: what other blocks wrote in this launch is read
// after a grid synchronization, never from a stale L1 line.
template <class T>
__device__ inline float load_l2(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return __ldcg(p);
  } else {
    const unsigned short bits = __ldcg(reinterpret_cast<const unsigned short*>(p));
    return static_cast<float>(T(bits, T::from_bits()));
  }
}

// The address of p in the block's shared-memory window (for ldmatrix,
// mbarriers and bulk copies).
__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// mbarriers (compute capability 9.0 and up). A phase completes when its
// arrivals have come and every byte they announced has landed: pushes from
// the other blocks of a cluster (lltm_sequence_cluster.cuh), or a bulk copy.
// The block's own arrival on its mbarrier, announcing `bytes`. Its release
// is to the block alone: the announced data comes with the pushes or copies
// themselves, and at cluster scope the release stalled the arriving thread
// a step behind its global stores.
__device__ inline void expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
}

// Until the phase of `parity` of the local mbarrier `bar` has completed;
// the bytes it counted are visible to the thread then.
__device__ inline void wait_phase(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "retry:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra retry;\n"
      "}" ::"r"(shared_address(bar)),
      "r"(parity)
      : "memory");
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) of
// global memory into the block's shared memory with the bulk-copy engine,
// completing them on the local mbarrier `bar`. The proxy fence puts what
// other blocks stored before a grid synchronization (generic proxy) ahead
// of the copy's reads (async proxy).
__device__ inline void bulk_load(void* to, const void* from, uint32_t bytes, uint64_t* bar) {
  asm volatile("fence.proxy.async.global;" ::: "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(shared_address(to)),
      "l"(from), "r"(bytes), "r"(shared_address(bar))
      : "memory");
}
#endif

// Whether the code being compiled can make bulk copies (compute capability 9.0 and up).
__device__ constexpr bool has_bulk_copy() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  return true;
#else
  return false;
#endif
}

// Thread 0 sets up the block's mbarrier for bulk copies, one arrival a phase.
__device__ inline void init_bulk_barrier(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
#endif
}

// `bytes` of global memory at `from` in shared memory at `to`, by one bulk
// copy that thread 0 starts, completing phase `parity` of `bar`; every
// thread waits for it (has_bulk_copy() only).
__device__ inline void bulk_stage(float* to, const void* from, uint32_t bytes, uint64_t* bar,
                                  uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    expect_bytes(bar, bytes);  // no bytes (a packed step without rows here): the phase just ends
    if (bytes > 0) bulk_load(to, from, bytes, bar);
  }
  wait_phase(bar, parity);
#endif
}

// The shape of the work of one block. K is the reduction length of the
// recurrent product: S forward, 3S backward; the block's W slice is 3J rows
// of S (forward) or J rows of 3S (backward), rows kp floats apart.
struct Plan {
  int blocks = 0, units = 0;  // grid size (a cluster's for the cluster kernels), J
  int clusters = 1;           // the cluster forward: clusters of p.rows batch rows each
  int unit_groups = 0;        // blocks per batch group (blocks / unit_groups groups)
  int rows = 0;               // batch rows per group (the last group may have fewer)
  int lanes = 0;              // threads that share one (unit, 4 rows) item: a power of 2
  int chunk = 0, stride = 0;  // staged operand: chunk values of K, stride floats per value
  int kp = 0;
  int ws = 0;              // floats of the W slice, a multiple of 4 (float4 alignment after it)
  int features = 0;        // forward: F where it multiplies x by W_x itself (0: P is given)
  int threads = kThreads;  // block size (the cluster forward may launch fewer)
  bool mma = false;        // the grid's product on tensor cores (mma_plan)
  int mrows = 0;           // mma: the W slice's rows (3J forward, J backward), padded to 16
  int grain = 1;           // mma: a warp's tiles of K come in multiples of it (mma_ksteps)
  bool fold = false;       // mma: the warps' partial sums folded into one share (mma_product_tiles)
  bool held = false;       // the cluster forward: W_h in registers (cluster_plan, kHeld)
  size_t smem = 0;         // bytes
};

// Four values of K at once (16-bit types: 8 bytes, float: 16), through L2.
template <class T>
__device__ inline float4 load4_l2(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return __ldcg(reinterpret_cast<const float4*>(p));
  } else {
    const uint2 bits = __ldcg(reinterpret_cast<const uint2*>(p));
    const auto half = [](unsigned int word, int hi) {
      return static_cast<float>(
          T(static_cast<unsigned short>(hi ? word >> 16 : word & 0xffffu), T::from_bits()));
    };
    return make_float4(half(bits.x, 0), half(bits.x, 1), half(bits.y, 0), half(bits.y, 1));
  }
}

// Two values of K at once (16-bit types: 4 bytes, float: 8), through L2.
template <class T>
__device__ inline float2 load2_l2(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return __ldcg(reinterpret_cast<const float2*>(p));
  } else {
    const unsigned int bits = __ldcg(reinterpret_cast<const unsigned int*>(p));
    return make_float2(
        static_cast<float>(T(static_cast<unsigned short>(bits & 0xffffu), T::from_bits())),
        static_cast<float>(T(static_cast<unsigned short>(bits >> 16), T::from_bits())));
  }
}

// vt[k][b] = v[b][k0 + k] for k < n, the batch padded with zeros to a
// multiple of kRows, Width values of K a load. Consecutive threads take
// consecutive rows b (their shared-memory stores fall on distinct banks);
// each issues kBatch loads before it stores, so that their latencies overlap.
template <int Width, class scalar_t>
__device__ inline void stage_by(float* vt, const scalar_t* v, int64_t ldv, int k0, int n, int batch,
                                const Plan& p) {
  constexpr int kBatch = 4;
  const int padded = (batch + kRows - 1) / kRows * kRows, total = n / Width * padded;
  for (int base = threadIdx.x; base < total; base += kBatch * blockDim.x) {
    float4 r[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int idx = base + u * blockDim.x, b = idx % padded, k = idx / padded * Width;
      r[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (idx < total && b < batch) {
        const scalar_t* src = v + b * ldv + k0 + k;
        if constexpr (Width == 4) {
          r[u] = load4_l2(src);
        } else if constexpr (Width == 2) {
          const float2 two = load2_l2(src);
          r[u].x = two.x;
          r[u].y = two.y;
        } else {
          r[u].x = load_l2(src);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      const int idx = base + u * blockDim.x, b = idx % padded, k = idx / padded * Width;
      if (idx >= total) break;
      float* dst = vt + k * p.stride + b;
      dst[0] = r[u].x;
      if constexpr (Width > 1) dst[p.stride] = r[u].y;
      if constexpr (Width == 4) {
        dst[2 * p.stride] = r[u].z;
        dst[3 * p.stride] = r[u].w;
      }
    }
  }
}

// stage_by four values of K a load where n, k0, the row stride and the
// address allow it, else two (an even S such as 650: a load a value had
// made the grid's inference at (B, S) = (20, 1150) on an H200 3.5 ms
// against 1.6 at (20, 1148); two a load, 2.3), else one.
template <class scalar_t>
__device__ inline void stage(float* vt, const scalar_t* v, int64_t ldv, int k0, int n, int batch,
                             const Plan& p) {
  const auto fits = [&](int w) {
    return ((n | k0 | static_cast<int>(ldv & 3)) & (w - 1)) == 0 &&
           reinterpret_cast<uintptr_t>(v) % (w * sizeof(scalar_t)) == 0;
  };
  if (fits(4))
    stage_by<4>(vt, v, ldv, k0, n, batch, p);
  else if (fits(2))
    stage_by<2>(vt, v, ldv, k0, n, batch, p);
  else
    stage_by<1>(vt, v, ldv, k0, n, batch, p);
}

// A thread's item of the recurrent product, worked out once a launch: the
// unit j, the first of its kRows batch rows, and its lane among the item's
// p.lanes threads.
struct Item {
  int j, b0, lane;
};

__device__ inline Item item_of(const Plan& p) {
  const int item = static_cast<int>(threadIdx.x) / p.lanes;
  return {item % p.units, item / p.units * kRows, static_cast<int>(threadIdx.x) % p.lanes};
}

// acc[g][r] += sum_k ws[(g J + j) kp + k0 + k] vt[k][b0 + r] over k < n for
// the thread's item (j, b0), each lane of the item taking every lanes-th k:
// Unroll values of k at once, or as the compiler chooses (0).
template <int G, int Unroll = 0>
__device__ inline void accumulate(const float* ws, const float* vt, int k0, int n, int batch,
                                  const Plan& p, const Item& it, float (&acc)[G][kRows]) {
  if (it.b0 >= batch) return;
  const auto one_k = [&](int k) {
    const float4 h = *reinterpret_cast<const float4*>(vt + k * p.stride + it.b0);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float w = ws[(g * p.units + it.j) * p.kp + k0 + k];
      acc[g][0] += w * h.x;
      acc[g][1] += w * h.y;
      acc[g][2] += w * h.z;
      acc[g][3] += w * h.w;
    }
  };
  if constexpr (Unroll > 0) {
#pragma unroll Unroll
    for (int k = it.lane; k < n; k += p.lanes) one_k(k);
  } else {
    for (int k = it.lane; k < n; k += p.lanes) one_k(k);
  }
}

// The sum over an item's lanes: every lane holds it.
template <int G>
__device__ inline void reduce_lanes(const Plan& p, float (&acc)[G][kRows]) {
  for (int off = p.lanes / 2; off > 0; off /= 2)
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
      for (int r = 0; r < kRows; ++r) acc[g][r] += __shfl_xor_sync(0xffffffffu, acc[g][r], off);
}

// acc[g][r] = sum_k ws[(g J + j) kp + k] v[b0 + r][k] over k < K for the
// thread's item (j, b0), reduced over the item's lanes: every lane holds it.
// v [batch, K] rows ldv apart, staged a chunk at a time. (K = S: a null v
// with h0 absent is given K = 0, and x's columns then start at ws's K-th:
// the grid forward passes K = S whenever it passes x.) Unroll: accumulate's.
template <int G, int Unroll = 0, class scalar_t>
__device__ inline void recurrent_product(const float* ws, float* vt, const scalar_t* v, int64_t ldv,
                                         int K, int batch, const Plan& p, const Item& it,
                                         float (&acc)[G][kRows], const scalar_t* x = nullptr,
                                         int F = 0) {
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int r = 0; r < kRows; ++r) acc[g][r] = 0.0f;
  for (int k0 = 0; k0 < K; k0 += p.chunk) {
    const int n = min(p.chunk, K - k0);
    __syncthreads();  // the previous chunk is consumed
    stage(vt, v, ldv, k0, n, batch, p);
    __syncthreads();
    accumulate<G, Unroll>(ws, vt, k0, n, batch, p, it, acc);
  }
  // plus x [batch, F] (rows F apart) times ws's columns K.. (the forward's
  // input product, where the kernel makes it: plan.features = F)
  for (int k0 = 0; k0 < F; k0 += p.chunk) {
    const int n = min(p.chunk, F - k0);
    __syncthreads();
    stage(vt, x, F, k0, n, batch, p);
    __syncthreads();
    accumulate<G, Unroll>(ws + K, vt, k0, n, batch, p, it, acc);
  }
  reduce_lanes<G>(p, acc);
}

// acc[0][r] = sum_k ws[j kp + k] vr[(b0 + r) K + k] over k < K for the
// thread's item (j, b0), reduced over the item's lanes: the backward's
// product from float rows as they lie in memory (vr [rows, padded with
// zeros to kRows][K]), four values of K a load. K and kp are multiples of 4.
__device__ inline void row_product(const float* ws, const float* vr, int K, int rows, const Plan& p,
                                   const Item& it, float (&acc)[1][kRows]) {
#pragma unroll
  for (int r = 0; r < kRows; ++r) acc[0][r] = 0.0f;
  if (it.b0 < rows) {
    const float* w = ws + it.j * p.kp;
    const float* v = vr + static_cast<int64_t>(it.b0) * K;
    for (int k = 4 * it.lane; k < K; k += 4 * p.lanes) {
      const float4 wk = *reinterpret_cast<const float4*>(w + k);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const float4 h = *reinterpret_cast<const float4*>(v + r * K + k);
        acc[0][r] += wk.x * h.x + wk.y * h.y + wk.z * h.z + wk.w * h.w;
      }
    }
  }
  reduce_lanes<1>(p, acc);
}

// The grid's recurrent product on tensor cores (plan.mma: compute
// capability 8.0 and up; mma_plan). The block keeps its W slice in shared
// memory: its 3J rows of W_h forward, or its J columns of W_h transposed
// backward (16-bit only), padded with zero rows to Mp = 16 Mt, and K (S
// forward, 3S backward) with zeros to a whole number of tiles. Each warp
// reads the rows of h_{t-1} (backward: d_gates_t) it multiplies from L2
// straight into its operands: no staging and no barrier before the
// product. With the batch rows in NT tiles of 8, warp w takes tile w % NT
// and its share of K's tiles of 16 (mma_ksteps), and leaves its partial
// sums in part[q][8 NT][Mp + 4] (q: its share; batch rows, then W's rows),
// which the gate pass adds up.
// Half and bfloat16 multiply as stored (m16n8k16), K in groups of 32 (two
// tiles) so that a lane's values of h for a group are one 16-byte load
// (mma_column), and the slice in tiles of 16 x 16 (mma_slice_index), each
// at a fixed distance from the last: every ldmatrix of a step is a lane's
// base address plus a constant. (At (B, S) = (128, 1024) float16, row tiles
// kp values apart and loads of 4 bytes took about 50 instructions a warp
// for each tile of K, the product's three HMMA among them.)
// Float multiplies in three TF32 products (m16n8k8), a b = a_hi b_hi +
// a_hi b_lo + a_lo b_hi, where a_hi is a rounded to TF32 and a_lo the
// rest rounded again: about float's precision (the a_lo b_lo term left out
// is 2^-22 of the product), where one TF32 product would keep 11 bits. Its
// slice is two, W_hi then W_lo, rows kp floats apart, each 16 values of K
// in the order tf32_column gives, so that a lane's four values of h in a
// tile of 16 are one 16-byte load. (The FMA product of recurrent_product
// issued about 1500 instructions a warp a step at (B, S) = (64, 512): on an
// H200 the packed bfloat16 forward's kernel took 736 us for 99 steps, 565
// us on tensor cores.)
constexpr int kMmaMaxTiles = 8;  // tiles of 16 of W's rows (4 accumulators each a thread)
// The backward's: its slice is J rows of 3S, and 5 tiles (J > 64, so S >
// 1024 with 16 blocks a batch group on 132 SMs) would take 480 KB.
constexpr int kMmaMaxBackwardTiles = 4;
constexpr int kMmaMaxOperands = 4;  // float: tiles of 16 values of K x 8 rows of h a warp
// 16-bit: groups of 32 values of K whose loads of h are in flight at once
// (a warp's share of K has no bound: at (128, 1024) each warp takes 16).
constexpr int kMmaGroups = 2;
// Tiles of 8 batch rows: 16-bit, whose warps take their values of K in
// chunks of kMmaGroups groups; float, whose warps hold all theirs at once
// (at most kMmaMaxOperands tiles).
constexpr int kMmaMaxRowTiles = 8;
constexpr int kMmaMaxRowTilesFloat = 4;

__host__ __device__ inline int mma_rows(const Plan& p) {
  return p.mrows;
}

// The tiles of 16 values of K a warp multiplies, and the warps (of one row
// tile) that have any, with `row_tiles` tiles of batch rows (K = S
// forward, 3S backward); `grain` tiles at a time (16-bit: 2, a group).
__host__ __device__ inline int mma_ksteps(int K, int row_tiles, int grain) {
  const int steps = ((K + 15) / 16 + grain - 1) / grain, groups = kThreads / 32 / row_tiles;
  return (steps + groups - 1) / groups * grain;
}
__host__ __device__ inline int mma_splits(int K, int row_tiles, int grain) {
  const int ks = mma_ksteps(K, row_tiles, grain);
  return ((K + 15) / 16 + ks - 1) / ks;
}

// The shares of the warps' partial sums that the gate pass adds up: one
// where they are folded.
__host__ __device__ inline int mma_shares(const Plan& p, int K) {
  return p.fold ? 1 : mma_splits(K, p.stride / 8, p.grain);
}

// Floats of the warps' partial sums: folded, the room of all shares but the
// first (which adds them up in registers).
__host__ __device__ inline int64_t mma_partials(const Plan& p, int K) {
  const int splits = mma_splits(K, p.stride / 8, p.grain);
  return static_cast<int64_t>(p.fold ? splits - 1 : splits) * p.stride * (mma_rows(p) + 4);
}

// d += a b for one 16 x 8 tile over 16 values of K (a row-major, b as N x K).
template <class T>
__device__ inline void mma_tile(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, c10::BFloat16>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// d += a b for one 16 x 8 tile over 8 values of K in TF32.
__device__ inline void mma_tile_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                     uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// v rounded to TF32 (nearest, ties away), as the bits of a float.
__device__ inline uint32_t tf32(float v) {
  uint32_t bits = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(v));
#endif
  return bits;
}

// store(idx, load(idx)) for the block's idx of [0, count), N loads of a
// thread issued before their stores (a plain loop waits for each load before
// the next: the compiler cannot tell the shared slice from W).
template <int N, class Load, class Store>
__device__ inline void copy_in_flight(int count, const Load& load, const Store& store) {
  const int stride = blockDim.x;
  for (int base = threadIdx.x; base < count; base += N * stride) {
    decltype(load(0)) v[N];
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (base + i * stride < count) v[i] = load(base + i * stride);
#pragma unroll
    for (int i = 0; i < N; ++i)
      if (base + i * stride < count) store(base + i * stride, v[i]);
  }
}

// Values k0 to k0 + V - 1 of a row of K (zeros past K): one load where
// `vec` (every row V-aligned) and the V values lie within K.
template <int V, class T>
__device__ inline cuda::Packet<V, T> load_values(const T* row, int k0, int K, bool vec) {
  if (vec && k0 + V <= K) return *reinterpret_cast<const cuda::Packet<V, T>*>(row + k0);
  cuda::Packet<V, T> p;
#pragma unroll
  for (int e = 0; e < V; ++e) p.v[e] = k0 + e < K ? row[k0 + e] : T(0);
  return p;
}

// Whether every row of W (ldw apart) starts on a multiple of V values.
template <int V, class T>
__device__ inline bool rows_aligned(const T* W, int64_t ldw) {
  return reinterpret_cast<uintptr_t>(W) % (V * sizeof(T)) == 0 && ldw % V == 0;
}

// A kernel's staging of W's rows into its slice: store(row, k0, values) for
// each of `rows` rows and each V values of Kp (a multiple of V) from k0, the
// values those of the row at src(row) (null: zeros; zeros past K), V a load
// and N loads of a thread in flight. Row by row, V values at a time, with a
// division a V values: a loop a value at a time, dividing for its row and
// column, waited on each load and on its index arithmetic, and was most of
// a generated token's call (T = 1, float16, B = 128, S = 1024: 29 of 38.7 us
// in the grid forward, 9.2 a step).
template <int V, int N, class T, class Src, class Store>
__device__ inline void stage_rows(int rows, int Kp, int K, bool vec, const Src& src,
                                  const Store& store) {
  const int chunks = Kp / V;
  copy_in_flight<N>(
      rows * chunks,
      [&](int idx) {
        const T* row = src(idx / chunks);
        return row ? load_values<V>(row, idx % chunks * V, K, vec) : cuda::Packet<V, T>{};
      },
      [&](int idx, const cuda::Packet<V, T>& v) { store(idx / chunks, idx % chunks * V, v); });
}

// v as hi + lo, each TF32.
__device__ inline void tf32_split(float v, uint32_t& hi, uint32_t& lo) {
  hi = tf32(v);
  lo = tf32(v - __uint_as_float(hi));
}

// Float slices: the value of K at column c of each tile of 16. Lane t % 4
// of an m16n8k8 product takes the values t and t + 4 of K; so the two
// products of a tile take columns t, t + 4, t + 8 and t + 12, which hold
// the values 4t to 4t + 3: one float4 of h.
__host__ __device__ constexpr int tf32_column(int c) {
  return 4 * (c % 4) + c / 4;
}

// The A operand whose lane's row address is `address` (shared memory).
__device__ inline void load_tile_at(uint32_t (&a)[4], uint32_t address) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
               : "r"(address));
#endif
}

// The A operand of a float tile of 16 rows and 32 bytes of shared memory
// (TF32's 16 x 8), rows `ld` floats apart: lane l gives the address of row
// l % 8 + (l & 8), byte (l / 16) * 16.
__device__ inline void load_tile(uint32_t (&a)[4], const float* tile, int ld) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const int lane = static_cast<int>(threadIdx.x) % 32;
  load_tile_at(a, shared_address(tile + ((lane & 7) + (lane & 8)) * ld + (lane >> 4) * 4));
#endif
}

// 16-bit slices: the value of K (within its group of 32) at column c of
// the group's tile t (0 or 1). Lane l % 4 = i of an m16n8k16 product takes
// columns 2i, 2i + 1, 2i + 8 and 2i + 9 of a tile; these hold the values
// 8i + 4t to 8i + 4t + 3, so that the lane's values for both tiles of a
// group are 8i to 8i + 7: one 16-byte load of h.
__host__ __device__ constexpr int mma_column(int t, int c) {
  return 8 * (c % 8 / 2) + 4 * t + 2 * (c / 8) + c % 2;
}

// 16-bit slices of Mp rows: the element of row `row` and column c of tile
// kt of K. Tiles of 16 x 16 (512 bytes) lie K's tile by tile, each tile's
// Mp rows in order, so that tile m of rows of K's tile kt is (kt Mp / 16 +
// m) 512 bytes from the first. A row's two halves of 16 bytes trade places
// in rows 4 to 7 of every 8, so that the 8 rows one ldmatrix reads lie on
// distinct banks.
__host__ __device__ constexpr int mma_slice_index(int row, int kt, int c, int Mp) {
  return (kt * Mp + row) * 16 + ((c / 8) ^ (row / 4 % 2)) * 8 + c % 8;
}

// ws = the 16-bit slice of Mp rows and Kt (even) tiles of K whose value at
// row `row` and value k of K is value(row, k) (zeros past K), 16 bytes a
// store.
template <class scalar_t, class Value>
__device__ inline void load_slice_mma(scalar_t* ws, int Mp, int Kt, int K, const Value& value) {
  for (int idx = threadIdx.x; idx < Kt * Mp * 2; idx += blockDim.x) {
    const int half = idx % 2, row = idx / 2 % Mp, kt = idx / 2 / Mp;
    uint32_t words[4];
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t bits[2];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int k = kt / 2 * 32 + mma_column(kt % 2, half * 8 + 2 * w + e);
        bits[e] = k < K ? static_cast<scalar_t>(value(row, k)).x : 0u;
      }
      words[w] = bits[0] | bits[1] << 16;
    }
    *reinterpret_cast<uint4*>(ws + mma_slice_index(row, kt, half * 8, Mp)) =
        make_uint4(words[0], words[1], words[2], words[3]);
  }
}

// Values k to k + 7 of a 16-bit row of K (zeros past K) as four operand
// words, the first value of each in its low half; through L2. `vec`: K a
// multiple of 8 and the row 16-byte aligned (k is one of 8).
template <class T>
__device__ inline uint4 load8_l2(const T* row, int k, int K, bool vec) {
  if (vec) return k < K ? __ldcg(reinterpret_cast<const uint4*>(row + k)) : uint4{};
  const auto* bits = reinterpret_cast<const unsigned short*>(row);
  const auto at = [&](int i) {
    return k + i < K ? static_cast<uint32_t>(__ldcg(bits + k + i)) : 0u;
  };
  return make_uint4(at(0) | at(1) << 16, at(2) | at(3) << 16, at(4) | at(5) << 16,
                    at(6) | at(7) << 16);
}

// Values k to k + 3 of a float row of S (zeros past S), through L2.
// `quads`: S a multiple of 4 and the row 16-byte aligned.
__device__ inline float4 load4_l2_upto(const float* row, int k, int S, bool quads) {
  if (quads) return k < S ? __ldcg(reinterpret_cast<const float4*>(row + k)) : float4{};
  const auto at = [&](int i) { return k + i < S ? __ldcg(row + k + i) : 0.0f; };
  return make_float4(at(0), at(1), at(2), at(3));
}

// The forward's slice: row g J + j is W[g S + j0 + j] (zeros in the
// padding). 16-bit: in load_slice_mma's layout. Float: ws[row kp + k], W_hi then
// W_lo (Mp kp floats apart), K in tf32_column's order.
template <class scalar_t>
__device__ inline void load_forward_weights_mma(scalar_t* ws, const scalar_t* W, int64_t ldw, int S,
                                                int j0, int units, const Plan& p) {
  const int J = p.units, rows = mma_rows(p);
  const auto src = [&](int row) -> const scalar_t* {
    const int g = row / J, j = row - g * J;
    return g < 3 && j < units ? W + (g * S + j0 + j) * ldw : nullptr;
  };
  if constexpr (!std::is_same_v<scalar_t, float>) {
    // Values 8a to 8a + 7 of K's group of 32 hold, two by two, columns 2a,
    // 2a + 1 of both halves of both tiles (mma_column): four words.
    stage_rows<8, 4, scalar_t>(
        rows, p.kp, S, rows_aligned<8>(W, ldw), src,
        [&](int row, int k0, const cuda::Packet<8, scalar_t>& v) {
          const auto* words = reinterpret_cast<const uint32_t*>(v.v);
          const int a = k0 % 32 / 8, kt = k0 / 32 * 2;
#pragma unroll
          for (int w = 0; w < 4; ++w)
            *reinterpret_cast<uint32_t*>(
                ws + mma_slice_index(row, kt + w / 2, w % 2 * 8 + 2 * a, rows)) = words[w];
        });
  } else {
    // tf32_column is its own inverse: value k of a tile lands in column tf32_column(k).
    const auto store = [&](int row, int k0, const cuda::Packet<4, float>& v) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int k = k0 + e, c = k - k % 16 + tf32_column(k % 16);
        uint32_t hi, lo;
        tf32_split(v.v[e], hi, lo);
        ws[row * p.kp + c] = __uint_as_float(hi);
        ws[(rows + row) * p.kp + c] = __uint_as_float(lo);
      }
    };
    stage_rows<4, 4, float>(rows, (S + 15) / 16 * 16, S, rows_aligned<4>(W, ldw), src, store);
  }
}

// acc[m] += tile m of 16 of ws's rows times the warp's 8 rows of v (lane's
// row `row` of K, zeros where not `live`), over the warp's kn tiles of 16
// values of K from tile k0 (even): 16-bit, as stored, a group of two tiles
// at a time. The groups go in chunks of kMmaGroups, each chunk's values of
// v loaded while the chunk before multiplies.
template <int Mt, class scalar_t>
__device__ inline void mma_accumulate(float (&acc)[Mt][4], const scalar_t* ws, const scalar_t* row,
                                      bool live, int K, int k0, int kn) {
  constexpr int kTile = 512, kGroup = 2 * Mt * kTile;  // bytes
  const int lane = static_cast<int>(threadIdx.x) % 32, tig = lane % 4;
  const int r = (lane & 7) + (lane & 8), gn = (kn + 1) / 2;
  const bool vec = K % 8 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0;
  // the lane's ldmatrix address in tile 0 of K's tile k0 (see mma_slice_index)
  uint32_t at = shared_address(ws + mma_slice_index(r, k0, (lane >> 4) * 8, 16 * Mt));
  const int k = k0 / 2 * 32 + 8 * tig;  // the lane's first value of v
  uint4 next[kMmaGroups];
  const auto load = [&](int c) {  // the chunk of groups from c
#pragma unroll
    for (int s = 0; s < kMmaGroups; ++s)
      next[s] = live && c + s < gn ? load8_l2(row, k + (c + s) * 32, K, vec) : uint4{};
  };
  load(0);
  for (int c = 0; c < gn; c += kMmaGroups) {
    uint4 b[kMmaGroups];
#pragma unroll
    for (int s = 0; s < kMmaGroups; ++s) b[s] = next[s];
    if (c + kMmaGroups < gn) load(c + kMmaGroups);
#pragma unroll
    for (int s = 0; s < kMmaGroups; ++s) {
      if (c + s >= gn) break;
      const uint32_t bt[2][2] = {{b[s].x, b[s].y}, {b[s].z, b[s].w}};
#pragma unroll
      for (int t = 0; t < 2; ++t)
#pragma unroll
        for (int m = 0; m < Mt; ++m) {
          uint32_t a[4];
          load_tile_at(a, at + s * kGroup + (t * Mt + m) * kTile);
          mma_tile<scalar_t>(acc[m], a, bt[t]);
        }
    }
    at += kMmaGroups * kGroup;
  }
}

// The same in float: three TF32 products, the small terms first; the
// lane's values 4 tig to 4 tig + 3 of each tile of 16 (tf32_column); the
// first `tiles` of the Mt tiles of rows. (Compiled for each count of
// tiles, as 16-bit, the float forward took 128 registers and spilled.)
template <int Mt>
__device__ inline void mma_accumulate(float (&acc)[Mt][4], const float* ws, const float* row,
                                      bool live, int S, int k0, int kn, int tiles, const Plan& p) {
  const int tig = static_cast<int>(threadIdx.x) % 4;
  const bool quads = S % 4 == 0 && reinterpret_cast<uintptr_t>(row) % 16 == 0;
  float4 v[kMmaMaxOperands];
#pragma unroll
  for (int s = 0; s < kMmaMaxOperands; ++s)
    v[s] = live && s < kn ? load4_l2_upto(row, (k0 + s) * 16 + 4 * tig, S, quads) : float4{};
  const float* lo = ws + 16 * tiles * p.kp;
#pragma unroll
  for (int s = 0; s < kMmaMaxOperands; ++s) {
    if (s >= kn) break;
    uint32_t bh[4], bl[4];
    tf32_split(v[s].x, bh[0], bl[0]);
    tf32_split(v[s].y, bh[1], bl[1]);
    tf32_split(v[s].z, bh[2], bl[2]);
    tf32_split(v[s].w, bh[3], bl[3]);
#pragma unroll
    for (int m = 0; m < Mt; ++m) {
      if (m >= tiles) break;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int at = m * 16 * p.kp + (k0 + s) * 16 + half * 8;
        uint32_t ah[4], al[4];
        load_tile(ah, ws + at, p.kp);
        load_tile(al, lo + at, p.kp);
        mma_tile_tf32(acc[m], al, bh[2 * half], bh[2 * half + 1]);
        mma_tile_tf32(acc[m], ah, bl[2 * half], bl[2 * half + 1]);
        mma_tile_tf32(acc[m], ah, bh[2 * half], bh[2 * half + 1]);
      }
    }
  }
}

// The warp's partial product of the block's W slice ws (its first `tiles`
// of Mt tiles of 16 rows) and the first `rows` rows of v (h forward,
// d_gates backward: rows of K, K apart) into part (see above). With
// plan.fold (where every share's room would not fit), shares 1 and up
// store theirs in part's shares 0 and up, and after a barrier of the block
// (so every thread calls it) share 0 adds them to its own and stores the
// sum as share 0.
template <int Mt, class scalar_t>
__device__ inline void mma_product_tiles(const scalar_t* ws, float* part, const scalar_t* v, int K,
                                         int rows, int tiles, const Plan& p) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int gid = lane / 4, tig = lane % 4, ld = 16 * tiles + 4, NT = p.stride / 8;
  const int n = warp % NT, q = warp / NT, ks = mma_ksteps(K, NT, p.grain);
  const int k0 = q * ks, kn = min(ks, (K + 15) / 16 - k0);
  // (a tile of rows past this step's: nothing for the gate pass to read)
  const bool works = q < kThreads / 32 / NT && kn > 0 && n * 8 < rows;
  if (!works && !p.fold) return;
  const int r = n * 8 + gid;
  float acc[Mt][4] = {};
  const scalar_t* row = v + static_cast<int64_t>(r) * K;
  if (works) {
    if constexpr (std::is_same_v<scalar_t, float>)
      mma_accumulate<Mt>(acc, ws, row, r < rows, K, k0, kn, tiles, p);
    else
      mma_accumulate<Mt>(acc, ws, row, r < rows, K, k0, kn);
  }
  // acc[m][0], [1]: W's row m 16 + gid, batch rows 2 tig and 2 tig + 1; [2], [3]: row + 8
  float* out = part + (n * 8 + 2 * tig) * ld + gid;
  const int share = p.stride * ld;  // floats
  const auto store = [&](float* at) {
#pragma unroll
    for (int m = 0; m < Mt; ++m) {
      if (m >= tiles) break;
      at[m * 16] = acc[m][0];
      at[m * 16 + ld] = acc[m][1];
      at[m * 16 + 8] = acc[m][2];
      at[m * 16 + ld + 8] = acc[m][3];
    }
  };
  if (p.fold) {
    if (works && q > 0) store(out + (q - 1) * share);
    __syncthreads();
    if (!works || q > 0) return;
    for (int s = 0; s + 1 < mma_splits(K, NT, p.grain); ++s)
#pragma unroll
      for (int m = 0; m < Mt; ++m) {
        if (m >= tiles) break;
        const float* at = out + s * share + m * 16;
        acc[m][0] += at[0];
        acc[m][1] += at[ld];
        acc[m][2] += at[8];
        acc[m][3] += at[ld + 8];
      }
  }
  store(out + q * share);
}

// The same for the plan's tiles of rows: 16-bit, each count of tiles up to
// MaxTiles compiled apart (the loops unrolled, the tiles' addresses
// constants); float, up to kMmaMaxTiles, the count read at run time.
template <int MaxTiles, class scalar_t>
__device__ inline void mma_product(const scalar_t* ws, float* part, const scalar_t* v, int K,
                                   int rows, const Plan& p) {
  static_assert(MaxTiles == 4 || MaxTiles == kMmaMaxTiles, "one case a count of tiles");
  const int tiles = mma_rows(p) / 16;
  if constexpr (std::is_same_v<scalar_t, float>) {
    mma_product_tiles<kMmaMaxTiles>(ws, part, v, K, rows, tiles, p);
  } else {
    switch (tiles) {
      case 1: return mma_product_tiles<1>(ws, part, v, K, rows, 1, p);
      case 2: return mma_product_tiles<2>(ws, part, v, K, rows, 2, p);
      case 3: return mma_product_tiles<3>(ws, part, v, K, rows, 3, p);
      case 4: return mma_product_tiles<4>(ws, part, v, K, rows, 4, p);
    }
    if constexpr (MaxTiles > 4) {
      switch (tiles) {
        case 5: return mma_product_tiles<5>(ws, part, v, K, rows, 5, p);
        case 6: return mma_product_tiles<6>(ws, part, v, K, rows, 6, p);
        case 7: return mma_product_tiles<7>(ws, part, v, K, rows, 7, p);
        default: return mma_product_tiles<8>(ws, part, v, K, rows, 8, p);
      }
    }
  }
}

// The products of the slice's rows g J + j (g < G: 3 forward, 1 backward)
// with row b of v: the warps' partial sums, in four independent sums a row
// (one dependent sum over 16 partials made the gate pass the longest part
// of a step).
template <int G>
__device__ inline void mma_sums(const float* part, int j, int b, int K, const Plan& p,
                                float (&out)[G]) {
  constexpr int kWarps = kThreads / 32;
  const int ld = mma_rows(p) + 4, splits = mma_shares(p, K);
  const float* at = part + b * ld + j;
  float v[G][4] = {};
#pragma unroll
  for (int q = 0; q < kWarps; ++q)
    if (q < splits)
#pragma unroll
      for (int g = 0; g < G; ++g) v[g][q % 4] += at[q * p.stride * ld + g * p.units];
#pragma unroll
  for (int g = 0; g < G; ++g) out[g] = (v[g][0] + v[g][1]) + (v[g][2] + v[g][3]);
}

// Packed (offsets given) and fixed-length sequences run separate
// instantiations: at fixed length every step's rows are known to be the
// batch, and the kernels compile as they did before packing (with the rows
// a step takes read at run time, the fixed-length kernels were 12% to 50%
// slower a step).
template <class scalar_t, bool Packed = false>
struct ForwardArgs {
  static constexpr bool kPacked = Packed;
  // P [T, B, 3S] = x W_x^T, or null and x [T, B, F] where plan.features =
  // F; W [3S, ldw]; h0 null: zeros
  const scalar_t *P, *x, *bias, *W, *h0;
  const float* c0;                 // null: zeros
  scalar_t *gates, *output, *c_n;  // c_n [B, S]: each row's last cell
  scalar_t* h_n;                   // null, or [B, S]: each row's last h
  float* cells;                    // null with gates: nothing kept (inference)
  const int64_t* offsets;          // packed: T + 1 row offsets; null: step t from row t * batch
  float* state;                    // packed grid: [B, S], each row's cell so far
  int64_t ldw;
  int T, batch, S;
  Plan plan;
};

template <class scalar_t, bool Packed = false>
struct BackwardArgs {
  static constexpr bool kPacked = Packed;
  const scalar_t *grad_output, *grad_hn;  // either may be null (zero)
  const scalar_t *gates, *W;
  int64_t go_t, go_b, go_s;      // grad_output's strides
  const float *grad_cn, *cells;  // grad_cn may be null (zero)
  scalar_t *d_gates, *d_h0;      // d_h0 null: not asked for
  float* d_c0;                   // null: not asked for
  scalar_t* d_b;                 // written by the cluster kernel where not null
  const int64_t* offsets;        // as the forward's; packed: go_t is 0
  int64_t ldw;
  int T, batch, S;
  Plan plan;
};

// Step t's first row and its number of rows (packed: from the offsets).
template <class Args>
__device__ inline int64_t step_row(const Args& a, int t) {
  if constexpr (Args::kPacked) return __ldg(a.offsets + t);
  return static_cast<int64_t>(t) * a.batch;
}

template <class Args>
__device__ inline int step_rows(const Args& a, int t) {
  if constexpr (Args::kPacked)
    return static_cast<int>(__ldg(a.offsets + t + 1) - __ldg(a.offsets + t));
  return a.batch;
}

// The steps of a packed batch that row `row` takes part in: those whose
// batch size (offsets[t + 1] - offsets[t], not increasing over the T steps)
// exceeds it, found by bisection. The kernels (row_steps) and the host's
// plan of a split (split_steps) share it.
__host__ __device__ inline int64_t packed_row_steps(const int64_t* offsets, int64_t T,
                                                    int64_t row) {
  int64_t lo = 0, hi = T;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (offsets[mid + 1] - offsets[mid] > row)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// The steps that row `row` takes part in: packed, its sequence's length;
// else T.
template <class Args>
__device__ inline int row_steps(const Args& a, int row) {
  if constexpr (!Args::kPacked) return a.T;
  return static_cast<int>(packed_row_steps(a.offsets, a.T, row));
}

// What the grid and the cluster kernels share: the W slices a block keeps,
// and one element (batch row b, hidden unit s) of a step's gate pass.

// ws[(g J + j) kp + k] = W[g S + j0 + j][k] (k < K): the forward's 3J rows
// of W_h (K = S), or of W (K = S + F); N loads a thread in flight.
template <int N = 4, class scalar_t>
__device__ inline void load_forward_weights(float* ws, const scalar_t* W, int64_t ldw, int K, int S,
                                            int j0, int units, const Plan& p) {
  const int J = p.units;
  stage_rows<4, N, scalar_t>(
      3 * J, (K + 3) / 4 * 4, K, rows_aligned<4>(W, ldw),
      [&](int row) -> const scalar_t* {
        const int g = row / J, j = row - g * J;
        return j < units ? W + (g * S + j0 + j) * ldw : nullptr;
      },
      [&](int row, int k0, const cuda::Packet<4, scalar_t>& v) {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (k0 + e < K) ws[row * p.kp + k0 + e] = static_cast<float>(v.v[e]);
      });
}

// ws[j kp + g] = W[g][j0 + j] (g < 3S): the backward's J columns of W_h, transposed.
template <class scalar_t>
__device__ inline void load_backward_weights(float* ws, const scalar_t* W, int64_t ldw, int S,
                                             int j0, int units, const Plan& p) {
  const int J = p.units;
  for (int idx = threadIdx.x; idx < 3 * S * J; idx += blockDim.x) {
    const int g = idx / J, j = idx - g * J;
    ws[j * p.kp + g] = j < units ? static_cast<float>(W[g * ldw + j0 + j]) : 0.0f;
  }
}

// The backward's slice (16-bit, on tensor cores; load_slice_mma's): row j
// is W_h's column j0 + j, its values of K = 3S W[g][j0 + j].
template <class scalar_t>
__device__ inline void load_backward_weights_mma(scalar_t* ws, const scalar_t* W, int64_t ldw,
                                                 int S, int j0, int units, const Plan& p) {
  if constexpr (!std::is_same_v<scalar_t, float>)  // (float steps or takes the FMA grid)
    load_slice_mma(ws, mma_rows(p), p.kp / 16, 3 * S,
                   [&](int j, int g) { return j < units ? W[g * ldw + j0 + j] : scalar_t(0); });
}

// The gate pass's input P_t + b of one element, as loaded: the sums are
// taken where the pass reads them, so that the loads stay in flight until
// then (the step's recurrent product or exchange runs meanwhile).
template <class scalar_t>
struct StepInput {
  scalar_t P[3], bias[3];
  __device__ float operator[](int g) const {
    return static_cast<float>(P[g]) + static_cast<float>(bias[g]);
  }
};

// (A null P: the kernel multiplies x itself, and the input is the bias.)
template <class scalar_t, bool P>
__device__ inline void step_input(const ForwardArgs<scalar_t, P>& a, int t, int b, int s,
                                  StepInput<scalar_t>& in) {
#pragma unroll
  for (int g = 0; g < 3; ++g) {
    in.P[g] = a.P ? a.P[(step_row(a, t) + b) * 3 * a.S + g * a.S + s] : scalar_t(0);
    in.bias[g] = a.bias[g * a.S + s];
  }
}

// One element's forward gate pass: its gates, cell and h (as stored: what
// the next step multiplies).
struct ForwardElement {
  float i, o, z, c, h;
};

template <class scalar_t>
__device__ inline ForwardElement gate_forward(float p0, float p1, float p2, float c) {
  ForwardElement e;
  lltm_cell_forward<float>(p0, p1, p2, c, e.i, e.o, e.z, e.c, e.h);
  e.h = static_cast<float>(static_cast<scalar_t>(e.h));
  return e;
}

// Writes the element's gates, cell (both unless gates is null) and h at
// step t, and its h_n where asked for at the row's last step (c_n is
// written after the last step, from each row's last cell).
template <class scalar_t, bool P>
__device__ inline void store_forward(const ForwardArgs<scalar_t, P>& a, int t, int b, int s,
                                     const ForwardElement& e) {
  const int S = a.S;
  const int64_t row = step_row(a, t) + b;
  if (a.gates) {  // null: inference, nothing kept for a backward
    scalar_t* g = a.gates + row * 3 * S;
    g[s] = static_cast<scalar_t>(e.i);
    g[S + s] = static_cast<scalar_t>(e.o);
    g[2 * S + s] = static_cast<scalar_t>(e.z);
    a.cells[row * S + s] = e.c;
  }
  a.output[row * S + s] = static_cast<scalar_t>(e.h);
  if (a.h_n && (t == a.T - 1 || (P && b >= step_rows(a, t + 1))))
    a.h_n[b * S + s] = static_cast<scalar_t>(e.h);
}

// The saved gates and cell of step t.
template <class scalar_t, bool P>
__device__ inline void step_saved(const BackwardArgs<scalar_t, P>& a, int t, int b, int s,
                                  float (&in)[4]) {
  const int64_t row = step_row(a, t) + b;
#pragma unroll
  for (int g = 0; g < 3; ++g) in[g] = static_cast<float>(a.gates[row * 3 * a.S + g * a.S + s]);
  in[3] = a.cells[row * a.S + s];
}

// grad_output at step t (zero where there is none).
template <class scalar_t, bool P>
__device__ inline float step_grad_output(const BackwardArgs<scalar_t, P>& a, int t, int b, int s) {
  if (!a.grad_output) return 0.0f;
  const int64_t at = P ? (step_row(a, t) + b) * a.go_b : t * a.go_t + b * a.go_b;
  return static_cast<float>(a.grad_output[at + s * a.go_s]);
}

// The gradient of h_t from outside the recurrence: grad_output's, and
// grad_hn's too where t is row b's last step.
template <class scalar_t, bool P>
__device__ inline float step_grad_h(const BackwardArgs<scalar_t, P>& a, int t, int b, int s,
                                    bool last) {
  const float g = step_grad_output(a, t, b, s);
  return last && a.grad_hn ? g + static_cast<float>(a.grad_hn[static_cast<int64_t>(b) * a.S + s])
                           : g;
}

// One element's backward gate pass from g_t (dh), the cell's gradient and
// the saved values: d_gates_t (as stored: what the recurrent product reads)
// and the gradient for c_{t-1}.
struct BackwardElement {
  float d[3], dc;
};

template <class scalar_t>
__device__ inline BackwardElement gate_backward(float dh, float dc, const float (&in)[4]) {
  BackwardElement e;
  lltm_cell_backward<float>(dh, dc, in[0], in[1], in[2], in[3], e.d[0], e.d[1], e.d[2], e.dc);
#pragma unroll
  for (int g = 0; g < 3; ++g) e.d[g] = static_cast<float>(static_cast<scalar_t>(e.d[g]));
  return e;
}

template <class scalar_t, bool P>
__device__ inline void store_backward(const BackwardArgs<scalar_t, P>& a, int t, int b, int s,
                                      const BackwardElement& e) {
  scalar_t* out = a.d_gates + (step_row(a, t) + b) * 3 * a.S;
#pragma unroll
  for (int g = 0; g < 3; ++g) out[g * a.S + s] = static_cast<scalar_t>(e.d[g]);
}

template <class scalar_t, bool P>
__global__ void __launch_bounds__(kThreads) forward_kernel(const ForwardArgs<scalar_t, P> a) {
  extern __shared__ float4 smem4[];
  const Plan& p = a.plan;
  const int J = p.units, B = a.batch, S = a.S, RB = p.rows;
  // pre's rows are RB + 1 floats apart: the items of a warp (one row, its J
  // units) store their sums on distinct banks.
  const int PB = RB + 1;
  const int group = blockIdx.x / p.unit_groups, groups = gridDim.x / p.unit_groups;
  const int j0 = blockIdx.x % p.unit_groups * J, units = min(J, S - j0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const bool mma = p.mma;
#else
  constexpr bool mma = false;  // (the host plans none for this code)
#endif
  float* ws = reinterpret_cast<float*>(smem4);  // [3J][kp] (mma: load_forward_weights_mma's)
  float* vt = ws + p.ws;                        // [chunk][stride] (mma: none)
  float* pre = vt + p.chunk * p.stride;         // [3][J][RB + 1] (mma: the warps' partial sums)
  // [J][RB]: fixed length, the block's rows' cells
  float* c = pre + (mma ? mma_partials(p, S) : 3 * J * PB);
  auto* wm = reinterpret_cast<scalar_t*>(ws);  // (mma)
  // With plan.features = F (float, a short sequence), the block keeps its 3J
  // whole rows of W (K = S + F) and multiplies x_t itself: no GEMM makes P.
  const int F = std::is_same_v<scalar_t, float> ? p.features : 0;
  if (mma) {
    load_forward_weights_mma(wm, a.W, a.ldw, S, j0, units, p);
    __syncthreads();  // (the FMA product's staging waits for the block; this one does not)
  } else {
    load_forward_weights(ws, a.W, a.ldw, S + F, S, j0, units, p);
  }
  // The block's rows at step t, [r0, r0 + rows): at fixed length its
  // group's for good, their cells in c; packed, its group's share of the
  // step's B_t rows, their cells in a.state.
  const auto rows_at = [&](int t, int& r0) {
    if (!P) {
      r0 = group * RB;
      return min(RB, B - r0);
    }
    const int Bt = step_rows(a, t);
    const int share = ((Bt + groups - 1) / groups + kRows - 1) / kRows * kRows;
    r0 = group * share;
    return max(0, min(share, Bt - r0));
  };
  int r0 = 0;
  const int R = rows_at(0, r0);
  if (!P)
    for (int idx = threadIdx.x; idx < units * R; idx += blockDim.x) {
      const int b = idx / units, j = idx - b * units;
      c[j * RB + b] = a.c0 ? a.c0[(r0 + b) * S + j0 + j] : 0.0f;
    }
  // Packed, row b's cell before step t: c0's (null: zeros) at step 0, else
  // what step t - 1 left (written by whichever block had the row then).
  const auto cell_before = [&](int t, int b, int s) {
    if (t > 0) return __ldcg(a.state + b * S + s);
    return a.c0 ? a.c0[b * S + s] : 0.0f;
  };
  const Item it = item_of(p);
  const int lane = it.lane, jt = it.j, b0 = it.b0;
  // Elements idx = (b, j), j fastest. With one element a thread, its input
  // (packed: and its cell) loads before the recurrent product, so their
  // latency hides behind it.
  const bool one = units * (P ? RB : R) <= static_cast<int>(blockDim.x);
  // Packed, the product takes 4 values of k at once, so that the next
  // values' loads issue ahead of this one's products. At fixed length the
  // compiler's choice stays: 4 there made (32, 128, 256) 3% slower.
  constexpr int kUnroll = P ? 4 : 0;
  auto grid = cooperative_groups::this_grid();
  for (int t = 0; t < a.T; ++t) {
    const int Rt = rows_at(t, r0);
    StepInput<scalar_t> next{};
    float next_cell = 0.0f;
    if (one && static_cast<int>(threadIdx.x) < units * Rt) {
      const int b = r0 + threadIdx.x / units, s = j0 + threadIdx.x % units;
      step_input(a, t, b, s, next);
      if (P) next_cell = cell_before(t, b, s);
    }
    // A null h0 is zeros: no product at step 0.
    const scalar_t* h = t == 0 ? a.h0 : a.output + step_row(a, t - 1) * S;
    if (mma) {
      if (h && Rt > 0) mma_product<kMmaMaxTiles>(wm, pre, h + r0 * S, S, Rt, p);
    } else {
      float acc[3][kRows];
      const scalar_t* x = F > 0 ? a.x + (step_row(a, t) + r0) * F : nullptr;
      if (x && !h) {  // x's columns start at S: a zero state's product over them
        recurrent_product<3, kUnroll>(ws + S, vt, x, F, F, Rt, p, it, acc);
      } else {
        recurrent_product<3, kUnroll>(ws, vt, h ? h + r0 * S : nullptr, S, h ? S : 0, Rt, p, it,
                                      acc, x, F);
      }
      if (lane == 0 && b0 < Rt)
#pragma unroll
        for (int g = 0; g < 3; ++g)
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            if (b0 + r < Rt) pre[(g * J + jt) * PB + b0 + r] = acc[g][r];
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < units * Rt; idx += blockDim.x) {
      const int b = idx / units, j = idx - b * units, s = j0 + j;
      StepInput<scalar_t> in = next;
      float cell = next_cell;
      if (!one) {
        step_input(a, t, r0 + b, s, in);
        if (P) cell = cell_before(t, r0 + b, s);
      }
      if (!P) cell = c[j * RB + b];
      // the recurrent product of W's rows g J + j and batch row b (a null h: zero)
      float q[3] = {0.0f, 0.0f, 0.0f};
      if (!mma) {
#pragma unroll
        for (int g = 0; g < 3; ++g) q[g] = pre[(g * J + j) * PB + b];
      } else if (h) {
        mma_sums<3>(pre, j, b, S, p, q);
      }
      const ForwardElement e =
          gate_forward<scalar_t>(in[0] + q[0], in[1] + q[1], in[2] + q[2], cell);
      store_forward(a, t, r0 + b, s, e);
      if (P) {
        a.state[(r0 + b) * S + s] = e.c;
        if (t == a.T - 1 || r0 + b >= step_rows(a, t + 1))  // the row's last step
          a.c_n[(r0 + b) * S + s] = static_cast<scalar_t>(e.c);
      } else {
        c[j * RB + b] = e.c;
      }
    }
    if (t + 1 < a.T) grid.sync();
  }
  if (P) return;
  // Each row's cell at the last step.
  r0 = group * RB;
  for (int idx = threadIdx.x; idx < units * R; idx += blockDim.x) {
    const int b = idx / units, j = idx - b * units;
    a.c_n[(r0 + b) * S + j0 + j] = static_cast<scalar_t>(c[j * RB + b]);
  }
}

template <class scalar_t, bool P>
__global__ void __launch_bounds__(kThreads) backward_kernel(const BackwardArgs<scalar_t, P> a) {
  extern __shared__ float4 smem4[];
  const Plan& p = a.plan;
  const int J = p.units, B = a.batch, S = a.S, RB = p.rows;
  const int j0 = blockIdx.x % p.unit_groups * J, units = min(J, S - j0);
  const int r0 = blockIdx.x / p.unit_groups * RB, R = min(RB, B - r0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const bool mma = !std::is_same_v<scalar_t, float> && p.mma;
#else
  constexpr bool mma = false;  // (the host plans none for this code)
#endif
  float* ws = reinterpret_cast<float*>(smem4);  // [J][kp]: W_h's columns, transposed
  float* vt = ws + p.ws;                        // [chunk][stride] (mma: the warps' partial sums)
  float* dh = vt + (mma ? mma_partials(p, 3 * S) : p.chunk * p.stride);  // [J][RB]
  float* dc = dh + J * RB;                                               // [J][RB]
  uint64_t* bar = reinterpret_cast<uint64_t*>(dc + J * RB);  // completes the bulk copies
  auto* wm = reinterpret_cast<scalar_t*>(ws);                // (mma: load_backward_weights_mma's)
  // Float rows of d_gates, whole, 16-byte aligned: each step's R rows come
  // in one bulk copy, as they lie in memory (vt as [R][3S]); else staged
  // (converted and transposed by the threads, in chunks).
  const bool bulk = has_bulk_copy() && std::is_same_v<scalar_t, float> && p.chunk == 3 * S &&
                    S % 4 == 0 && p.kp % 4 == 0 && reinterpret_cast<uintptr_t>(a.d_gates) % 16 == 0;
  if (mma)
    load_backward_weights_mma(wm, a.W, a.ldw, S, j0, units, p);
  else
    load_backward_weights(ws, a.W, a.ldw, S, j0, units, p);
  // Packed, step t runs on the block's rows below B_t (Rt of them), more
  // as t goes down: a row joins at its own last step, with grad_output and
  // grad_hn as its g and grad_cn as its cell's gradient.
  const auto active = [&](int t) { return P ? max(0, min(R, step_rows(a, t) - r0)) : R; };
  if (bulk) {
    // Rows at and past a step's Rt stay zero: a bulk copy writes rows
    // below Rt only, and Rt only grows.
    for (int idx = threadIdx.x; idx < (R + kRows - 1) / kRows * kRows * 3 * S; idx += blockDim.x)
      vt[idx] = 0.0f;
    init_bulk_barrier(bar);
  }
  const int last = active(a.T - 1);
  for (int idx = threadIdx.x; idx < units * R; idx += blockDim.x) {
    const int b = idx / units, j = idx - b * units;
    dh[j * RB + b] = b < last ? step_grad_h(a, a.T - 1, r0 + b, j0 + j, true) : 0.0f;
    dc[j * RB + b] = a.grad_cn ? a.grad_cn[(r0 + b) * S + j0 + j] : 0.0f;
  }
  const Item it = item_of(p);
  const int lane = it.lane, jt = it.j, b0 = it.b0;
  // With one element a thread, the next step's saved values load before the
  // grid synchronization and the recurrent product, hiding their latency.
  const bool one = units * R <= static_cast<int>(blockDim.x);
  const bool owner = one && static_cast<int>(threadIdx.x) < units * R;
  const int ob = r0 + threadIdx.x / units, os = j0 + threadIdx.x % units;  // the owner's element
  float next[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (owner && ob - r0 < last) step_saved(a, a.T - 1, ob, os, next);
  auto grid = cooperative_groups::this_grid();
  int Rt = last;
  for (int t = a.T - 1; t >= 0; --t) {
    const int Rp = t > 0 ? active(t - 1) : 0;  // the rows of step t - 1
    __syncthreads();                           // dh is complete
    for (int idx = threadIdx.x; idx < units * Rt; idx += blockDim.x) {
      const int b = idx / units, j = idx - b * units;
      float in[4] = {next[0], next[1], next[2], next[3]};
      if (!one) step_saved(a, t, r0 + b, j0 + j, in);
      const BackwardElement e = gate_backward<scalar_t>(dh[j * RB + b], dc[j * RB + b], in);
      store_backward(a, t, r0 + b, j0 + j, e);
      dc[j * RB + b] = e.dc;
    }
    if (t == 0 && !a.d_h0) break;
    if (owner && t > 0 && ob - r0 < Rp) step_saved(a, t - 1, ob, os, next);
    float go[kRows] = {};
    if (!mma && lane == 0 && jt < units && t > 0)
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (b0 + r < Rp) go[r] = step_grad_h(a, t - 1, r0 + b0 + r, j0 + jt, b0 + r >= Rt);
    grid.sync();
    float acc[1][kRows];
    const scalar_t* d_gates = a.d_gates + (step_row(a, t) + r0) * 3 * S;
    if (mma) {
      // g_{t-1} of the rows of step t - 1 (at t = 0: d_h0's, every row):
      // the product for the rows of step t, grad_output (and grad_hn where
      // it is the row's last step) for the others
      if (Rt > 0) mma_product<kMmaMaxBackwardTiles>(wm, vt, d_gates, 3 * S, Rt, p);
      __syncthreads();
      const int rows = t > 0 ? Rp : R;
      for (int idx = threadIdx.x; idx < units * rows; idx += blockDim.x) {
        const int b = idx / units, j = idx - b * units;
        float q[1] = {0.0f};
        if (b < Rt) mma_sums<1>(vt, j, b, 3 * S, p, q);
        dh[j * RB + b] = t > 0 ? q[0] + step_grad_h(a, t - 1, r0 + b, j0 + j, b >= Rt) : q[0];
      }
      Rt = Rp;
      continue;
    }
    if (bulk) {
      bulk_stage(vt, d_gates, 4u * Rt * 3 * S, bar, (a.T - 1 - t) & 1);
      row_product(ws, vt, 3 * S, Rt, p, it, acc);
    } else {
      recurrent_product<1>(ws, vt, d_gates, 3 * S, 3 * S, Rt, p, it, acc);
    }
    if (lane == 0 && jt < units)
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (b0 + r < R) dh[jt * RB + b0 + r] = acc[0][r] + go[r];
    Rt = Rp;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < units * R; idx += blockDim.x) {
    const int b = idx / units, j = idx - b * units, s = j0 + j;
    if (a.d_c0) a.d_c0[(r0 + b) * S + s] = dc[j * RB + b];
    if (a.d_h0) a.d_h0[(r0 + b) * S + s] = static_cast<scalar_t>(dh[j * RB + b]);
  }
}

inline int max_shared_bytes(int32_t device) {
  return cuda::device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>(device);
}

// The thread layout and shared-memory shape of a block that owns J hidden
// units of `rows` batch rows (K = S forward, 3S backward): false where its
// (unit, kRows rows) items outnumber the block's threads. An item gets the
// most lanes, up to max_lanes, that the block's threads hold.
inline bool layout(int64_t J, int64_t rows, int64_t K, bool backward, Plan& p, int max_lanes = 32) {
  const int64_t items = J * ((rows + kRows - 1) / kRows);
  if (items > kThreads) return false;
  int lanes = 1;
  while (lanes < max_lanes && items * lanes * 2 <= kThreads) lanes *= 2;
  p.units = static_cast<int>(J);
  p.rows = static_cast<int>(rows);
  p.lanes = lanes;
  // The staged operand's value k of the rows lies at k * stride floats. An
  // item's lanes read a float4 (kRows rows) at values k, k + 1, ...: eight
  // lanes fall on distinct banks where stride / 4 is odd, so the padded rows
  // get 4 floats more only where their count is a multiple of 8. (4 more
  // always, as before, put lanes 0 and 4 on the same banks at 4, 12 or 20
  // rows: on an H200, T = 64, F = S, fp32 inference, (B, S) = (12, 1500)
  // took 2.3 ms against 1.7 now, (20, 650) 1.2 against 0.9.)
  const int64_t padded = (rows + kRows - 1) / kRows * kRows;
  p.stride = static_cast<int>(padded % 8 == 0 ? padded + 4 : padded);
  p.kp = static_cast<int>((K + 31) / 32 * 32 + lanes % 32);  // items of one warp on distinct banks
  p.ws = static_cast<int>(((backward ? J : 3 * J) * p.kp + 3) / 4 * 4);
  return true;
}

// Floats of a block's per-unit state: pre and c forward; dh and dc backward,
// and the mbarrier of its bulk copies (16 bytes).
__host__ __device__ inline int64_t state_floats(const Plan& p, bool backward) {
  const int64_t J = p.units;
  // forward: pre [3][J][rows + 1] and c [J][rows], a multiple of 4 floats
  return backward ? 2 * J * p.rows + 4 : (J * (4 * p.rows + 3) + 3) / 4 * 4;
}

// The plan for a direction (K = S forward, 3S backward), or blocks = 0
// where the persistent kernel does not apply: a batch above
// kMaxGroupedBatch, no layout within a block's threads and shared memory,
// or one whose threads would each sum more than kMaxSerialK values of K.
// The batch splits into the most groups (up to 8, of kRows rows or more)
// for which a block's W slice and its whole staged operand fit; else, up to
// kMaxBatch rows, one group, with the operand staged in chunks of 32 values
// of K or more (each chunk costs a round trip to L2 and two barriers). A
// packed batch of 256 at S = 256 took 4.6 ms to train by cuBLAS per step,
// its 50 steps bound by the launches.
// With `mma` (W's element size: 2 or 4), the forward's product on tensor
// cores where mma_plan fits; the backward's (16-bit only, batches up to
// kMaxMmaBackwardBatch) where the FMA product's plan does not; and the
// 16-bit forward, where neither fits, on tensor cores with the warps'
// partial sums folded (mma_plan: batches of 129 to 256 at S of about 900 to
// 1056 on 132 SMs).
inline Plan mma_plan(int64_t batch, int64_t S, bool backward, int32_t device, int bytes,
                     bool fold = false);

inline Plan plan(int64_t batch, int64_t S, bool backward, int32_t device, int64_t features = 0,
                 int mma = 0) {
  if (batch > kMaxGroupedBatch || S == 0 || batch == 0) return {};
  if (mma > 0 && !backward) {
    const Plan p = mma_plan(batch, S, false, device, mma);
    if (p.blocks > 0) return p;
  }
  const int64_t sms = cuda::sm_count(device);
  const int64_t limit = max_shared_bytes(device) / 4;
  // The forward multiplies x itself (features = F) where its W rows (K = S +
  // F) fit; each staged operand (h, then x) is of S or F values.
  for (const int64_t F : {backward ? 0 : features, int64_t{0}}) {
    const int64_t K = backward ? 3 * S : S + F, operand = backward ? 3 * S : std::max(S, F);
    for (int64_t groups = 8; groups >= 1; groups /= 2) {
      const int64_t rows =
          groups == 1 ? batch : ((batch + groups - 1) / groups + kRows - 1) / kRows * kRows;
      if ((batch + rows - 1) / rows != groups || sms / groups == 0) continue;
      if (groups == 1 && batch > kMaxBatch) break;
      const int64_t J = (S + sms / groups - 1) / (sms / groups);
      Plan p;
      if (!layout(J, rows, K, backward, p) || K > kMaxSerialK * p.lanes) continue;
      const int64_t extra = state_floats(p, backward);
      const int64_t chunk = std::min<int64_t>(operand, (limit - p.ws - extra) / p.stride / 32 * 32);
      if (groups > 1 ? chunk < operand : chunk < std::min<int64_t>(operand, 32)) continue;
      p.unit_groups = static_cast<int>((S + J - 1) / J);
      p.blocks = p.unit_groups * static_cast<int>(groups);
      p.chunk = static_cast<int>(chunk);
      p.features = static_cast<int>(F);
      p.smem = static_cast<size_t>(4 * (p.ws + chunk * p.stride + extra));
      return p;
    }
    if (F == 0) break;
  }
  if (mma != 2) return {};
  if (backward)
    return batch <= kMaxMmaBackwardBatch ? mma_plan(batch, S, true, device, mma) : Plan{};
  return mma_plan(batch, S, false, device, mma, true);
}

// The plan with the product on tensor cores (compute capability 8.0 and
// up; W's elements of `bytes` bytes: 2 half and bfloat16, 4 float in two
// TF32 slices, forward only), or blocks = 0: the batch in groups as in
// plan, the first count of groups whose block fits its W slice, the warps'
// partial sums and its state (forward, fixed length: its cells; backward:
// the gradients of h and c), with at most kMmaMaxRowTiles tiles of 8 batch
// rows (float: kMmaMaxRowTilesFloat) and kMmaMaxTiles tiles of the slice's
// rows, and in float kMmaMaxOperands tiles of h a warp. With `fold`, only
// where a warp of each row tile shares its K with others, their partial
// sums folded (mma_product_tiles): the room of one share less, for a barrier
// a step more (16-bit, (B, S) = (256, 1024): forward 57600 floats of 58112,
// where 64000 would not fit).
inline Plan mma_plan(int64_t batch, int64_t S, bool backward, int32_t device, int bytes,
                     bool fold) {
  const int64_t sms = cuda::sm_count(device), limit = max_shared_bytes(device) / 4;
  for (int64_t groups = 8; groups >= 1; groups /= 2) {
    const int64_t rows =
        groups == 1 ? batch : ((batch + groups - 1) / groups + kRows - 1) / kRows * kRows;
    if ((batch + rows - 1) / rows != groups || sms / groups == 0) continue;
    Plan p;
    p.mma = true;
    p.units = static_cast<int>((S + sms / groups - 1) / (sms / groups));
    p.rows = static_cast<int>(rows);
    p.lanes = 1;
    p.stride = static_cast<int>((rows + 7) / 8 * 8);  // batch rows of the partial sums
    p.mrows = ((backward ? 1 : 3) * p.units + 15) / 16 * 16;
    const int row_tiles = p.stride / 8, K = static_cast<int>(backward ? 3 * S : S);
    // (float: a block of fewer rows than a tile's 8 waits on its three
    // dependent products; at (B, S) = (1, 650) the FMA product was 5% faster)
    const bool fp32 = bytes == 4;
    p.grain = fp32 ? 1 : 2;
    if ((fp32 && backward) || row_tiles > (fp32 ? kMmaMaxRowTilesFloat : kMmaMaxRowTiles) ||
        mma_rows(p) / 16 > (backward ? kMmaMaxBackwardTiles : kMmaMaxTiles) || (fp32 && rows < 8) ||
        (fp32 && mma_ksteps(K, row_tiles, p.grain) > kMmaMaxOperands) ||
        (fold && mma_splits(K, row_tiles, p.grain) < 2))
      continue;
    p.fold = fold;
    // 16-bit: K in whole groups of 32 (mma_slice_index). Float: rows 16
    // bytes apart on distinct banks (ldmatrix), kp * 4 an odd multiple of 16.
    p.kp = fp32 ? (K + 15) / 16 * 16 + 4 : (K + 31) / 32 * 32;
    const int64_t values = static_cast<int64_t>(mma_rows(p)) * p.kp * (bytes == 4 ? 2 : 1);
    p.ws = static_cast<int>((values * bytes / 4 + 3) / 4 * 4);
    const int64_t state = backward ? state_floats(p, true) : static_cast<int64_t>(p.units) * p.rows;
    const int64_t floats = p.ws + mma_partials(p, K) + state;
    if (floats > limit) continue;
    p.unit_groups = static_cast<int>((S + p.units - 1) / p.units);
    p.blocks = p.unit_groups * static_cast<int>(groups);
    p.smem = static_cast<size_t>(4 * floats);
    return p;
  }
  return {};
}

template <auto Kernel, class Args>
void launch(const Args& args, int32_t device) {
  const Plan& p = args.plan;
  // The kernel's shared-memory limit, raised where a plan needs more than
  // was set on the device (a generated token pays no attribute call).
  constexpr int kCached = 64;
  static std::atomic<size_t> set[kCached];
  if (device < 0 || device >= kCached || p.smem > set[device].load(std::memory_order_relaxed)) {
    STD_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(p.smem)));
    if (device >= 0 && device < kCached) set[device].store(p.smem, std::memory_order_relaxed);
  }
  void* params[] = {const_cast<Args*>(&args)};
  STD_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(Kernel), dim3(p.blocks),
                                             dim3(kThreads), params, p.smem,
                                             cuda::current_stream(device)));
}

}  // namespace kernforge::cuda_seq
