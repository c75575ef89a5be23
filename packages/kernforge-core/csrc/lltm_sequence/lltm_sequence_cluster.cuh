// The recurrence of a small LLTM sequence as one thread-block cluster
// (compute capability 9.0 and up): up to 16 blocks, each owning the hidden
// units [j0, j0 + J) of every batch row with its slice of W_h in shared
// memory, as in lltm_sequence_persistent.cuh. What a step produces for the
// next is pushed straight into the blocks' shared memory (distributed shared
// memory, st.async) and each block waits on its own mbarrier until the bytes
// it expects have landed, so a step makes no round trip to L2 and needs no
// barrier across blocks.
//   forward,  step t:  pre = P_t + b + h_{t-1} W_h^T   (its 3J columns, h_{t-1} local;
//                                                        P_t = x_t W_x^T, or made here)
//                      -> gates_t, c_t, h_t; h_t to every block
//   backward, step t:  d_gates_t, d_c from g_t, d_c     (its J units)
//                      d_gates_t W_h over its 3J rows: a partial g_{t-1} of every unit,
//                      each block's J columns to that block;
//                      g_{t-1} = grad_output_{t-1} + the sum of the partials (its J units)
// Packed, step t runs on its first B_t rows (the exchanges keep their
// size): a row's cell stays in its thread after its last step, and in the
// backward a row joins at its own last step. A batch may run as several
// clusters, each on its own rows (cluster_split_plan).
// What a step receives is double-buffered by the step's parity. Two
// buffers suffice: a block can push into a buffer again only after every
// block has sent it the step in between, which each sends only after it
// has read that buffer.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "lltm_sequence/lltm_sequence_persistent.cuh"

namespace kernforge::cuda_seq {

constexpr int kMaxCluster = 16;  // blocks; above the portable 8 where the device allows
// Multiply-adds of one block's recurrent product a step (B * 3S * J) up to
// which one cluster runs the sequence; above it the grid of
// lltm_sequence_persistent.cuh, whose product spreads over every SM, is faster.
// On an H200 (one layer, fixed length, fp32 and bf16, train and inference)
// the cluster was faster at (B, S) = (8, 256), 98304 (its kernels 1.2 to
// 1.4 ms against the grid's 1.8 at T = 512), and (32, 100), 67200; the grid
// at (64, 100), 134400, and (64, 128), 196608.
constexpr int64_t kClusterWork = int64_t{1} << 17;
// The cluster forward's lanes an item, and the fewest threads a block keeps
// with them (see cluster_plan).
constexpr int kForwardLanes = 8;
constexpr int64_t kForwardThreads = 256;
// The values of K of W_h that each lane of a cluster forward item holds in
// registers (plan.held) where S is that many times the item's lanes. On an
// H200, T = 64, inference at (B, F, S) = (16, 32, 128) (8 lanes), the
// kernel took 117.1 us against 122.2 in fp32, 92.6 against 115.3 in bf16;
// unchanged at (4, 64, 256) (16 lanes), 138.4 us. With an item's lanes in
// different warps and their sums through shared memory (held_item): 116.0
// and 87.6 us against 117.1 and 92.5; 138.0 at (4, 64, 256).
constexpr int kHeld = 16;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// A block's two receive buffers each have an mbarrier (in the first 16
// bytes of shared memory). One phase of a buffer's mbarrier is one exchange
// into it: the owning block arrives once, announcing the bytes the other
// blocks will push, and each push (st.async) completes its bytes on it, so
// the phase ends when the last byte has landed, with no cluster barrier and
// no memory fence on the sender's side. A push may land before the arrival
// that announces it (the transaction count goes negative meanwhile).
// The address of the same shared-memory location in block `rank` of the cluster.
__device__ inline uint32_t in_rank(uint32_t address, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(address), "r"(rank));
  return out;
}

// Sets up the two mbarriers (thread 0) and announces the first exchange of
// each buffer whose `first` is true; a cluster barrier must follow before
// any block pushes.
__device__ inline void init_exchange(uint64_t* bars, uint32_t bytes, bool first0, bool first1) {
  if (threadIdx.x == 0) {
    for (int k = 0; k < 2; ++k)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bars + k))
                   : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    if (first0) expect_bytes(bars, bytes);
    if (first1) expect_bytes(bars + 1, bytes);
  }
}

// Stores (x, y, z, w) at the shared::cluster address `to` (of another
// block, or this one), completing its 16 bytes on the mbarrier at `bar` (of
// that block).
__device__ inline void store_async(uint32_t to, uint32_t bar, float x, float y, float z, float w) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
      "[%5];" ::"r"(to),
      "r"(__float_as_uint(x)), "r"(__float_as_uint(y)), "r"(__float_as_uint(z)),
      "r"(__float_as_uint(w)), "r"(bar)
      : "memory");
}

// Pushes n floats (n a multiple of 4, 16-byte aligned) from `from` to the
// same place in every other block of the cluster, completing on that
// block's mbarrier at `bar`'s place. Warp w serves the blocks w, w + warps,
// ... (this one left out), its lanes consecutive float4s.
__device__ inline void push(const float* from, int n, int blocks, int self, const uint64_t* bar) {
  const int lane = static_cast<int>(threadIdx.x) % 32, warps = static_cast<int>(blockDim.x) / 32;
  const uint32_t base = shared_address(from), bar_address = shared_address(bar);
  for (int r = static_cast<int>(threadIdx.x) / 32; r < blocks - 1; r += warps) {
    const uint32_t rank = static_cast<uint32_t>(r + (r >= self));
    const uint32_t to = in_rank(base, rank), to_bar = in_rank(bar_address, rank);
    for (int q = lane; q < n / 4; q += 32) {
      const float4 v = *reinterpret_cast<const float4*>(from + 4 * q);
      store_async(to + 16 * q, to_bar, v.x, v.y, v.z, v.w);
    }
  }
}
#endif

// acc[g][r] += sum_k ws[(g J + j) kp + S + k] xt[b0 + r][k] over k < F for
// the thread's item (j, b0): x_t's part of the forward product, from x_t as
// it lies in memory ([B][F], F a multiple of 4, padded with zero rows to a
// multiple of kRows). Each lane of the item takes every lanes-th k; with
// Quads, every lanes-th four of k, a float4 of each row and of W a load (kp
// and S multiples of 4). x_t's rows lie F floats apart, on the same banks
// where F is a multiple of 8: a warp of held_item's items spans several
// groups of rows and reads a value of them in as many passes, a float4 in
// four whatever their number.
template <bool Quads>
__device__ inline void accumulate_input(const float* ws, int S, const float* xt, int F, int batch,
                                        const Plan& p, const Item& it, float (&acc)[3][kRows]) {
  if (it.b0 >= batch) return;
  if constexpr (Quads) {
    for (int k = 4 * it.lane; k < F; k += 4 * p.lanes) {
      float4 v[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        v[r] = *reinterpret_cast<const float4*>(xt + (it.b0 + r) * F + k);
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        const float4 w = *reinterpret_cast<const float4*>(ws + (g * p.units + it.j) * p.kp + S + k);
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          acc[g][r] += w.x * v[r].x;
          acc[g][r] += w.y * v[r].y;
          acc[g][r] += w.z * v[r].z;
          acc[g][r] += w.w * v[r].w;
        }
      }
    }
  } else {
    for (int k = it.lane; k < F; k += p.lanes) {
      float v[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) v[r] = xt[(it.b0 + r) * F + k];
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        const float w = ws[(g * p.units + it.j) * p.kp + S + k];
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[g][r] += w * v[r];
      }
    }
  }
}

// acc[g][r] += sum_m w[g][m] vt[lane M + m][b0 + r] over m < M for the
// thread's item (j, b0): lane `lane` of the item takes the M values of K
// from lane M on, with its values of W held in registers (w[g][m] is ws's
// value k = lane M + m of row g J + j), so that it reads only h from shared
// memory. The lanes of an item lie in different warps (held_item), so that
// their sum needs no shuffles.
template <int M>
__device__ inline void accumulate_held(const float (&w)[3][M], const float* vt, int batch,
                                       const Plan& p, const Item& it, float (&acc)[3][kRows]) {
  if (it.b0 >= batch) return;
  const float* v = vt + it.lane * M * p.stride + it.b0;
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const float4 h = *reinterpret_cast<const float4*>(v + m * p.stride);
#pragma unroll
    for (int g = 0; g < 3; ++g) {
      acc[g][0] += w[g][m] * h.x;
      acc[g][1] += w[g][m] * h.y;
      acc[g][2] += w[g][m] * h.z;
      acc[g][3] += w[g][m] * h.w;
    }
  }
}

// The held kernel's items: item i of a block's items (j fastest, as
// item_of) is thread i + lane x items, so that a warp holds items of one
// lane (or of two, where there are 16 items) and the sum over an item's
// lanes goes through shared memory, not shuffles. Threads past the lanes'
// get no rows (b0 past every batch).
__device__ inline Item held_item(const Plan& p) {
  const int items = p.units * ((p.rows + kRows - 1) / kRows), i = static_cast<int>(threadIdx.x);
  const int lane = i / items, item = i - lane * items;
  return {item % p.units, lane < p.lanes ? item / p.units * kRows : static_cast<int>(kMaxBatch),
          lane};
}

// With plan.features = F (float only), the forward multiplies x by W_x
// itself and the host makes no GEMM for P: the block keeps its 3J whole rows
// of W (K = S + F), each x_t [B, F] comes into shared memory by one bulk copy
// two steps ahead, and each thread accumulates its item's share of x_{t+1}'s
// product while step t's pushes land, so that step t + 1 adds only h_t's.
// Held > 0 (plan.held: S = Held x lanes): each thread keeps its item's
// values of W_h in registers, a step's product reads only h_{t-1} from
// shared memory, and the lanes' partial sums meet there (held_item).
template <class scalar_t, bool P, int Held = 0>
__global__ void __launch_bounds__(kThreads)
    cluster_forward_kernel(const ForwardArgs<scalar_t, P> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const Plan& p = a.plan;
  // The cluster's batch rows [row0, row0 + B) (cluster_split_plan: each
  // cluster its own rows; else one cluster, every row). `b` below is a row
  // of the cluster, row0 + b the batch's.
  const int row0 = static_cast<int>(blockIdx.x) / p.blocks * p.rows;
  // T: the steps of the cluster's longest row (packed: a cluster of shorter
  // rows ends early, and one waiting for its SMs starts sooner).
  const int J = p.units, B = min(p.rows, a.batch - row0), S = a.S, T = row_steps(a, row0);
  const int F = std::is_same_v<scalar_t, float> ? p.features : 0;
  const int rank = static_cast<int>(cluster.block_rank());
  const int j0 = rank * J, units = min(J, S - j0);
  const int padded = (B + kRows - 1) / kRows * kRows;
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem4);  // [2]: buffer t & 1 receives h_{t-1}
  float* ws = reinterpret_cast<float*>(smem4 + 1);      // [3J][kp]: W_h's rows, W_x's after (F > 0)
  float* hb = ws + p.ws;                                // [2][S][stride]: h_{t-1}, transposed
  float* pre = hb + 2 * S * p.stride;                   // [3][J][B]
  float* xb = pre + state_floats(p, false);             // F > 0: [2][padded][F], buffer t & 1 x_t
  uint64_t* xbars = reinterpret_cast<uint64_t*>(xb + 2 * padded * F);  // F > 0: [2], x_t on t & 1
  // Held > 0: [lanes][3][J][stride], each lane's partial sums of pre
  float* part = xb + (F > 0 ? 2 * padded * F + 4 : 0);
  // h_t arrives in buffer (t + 1) & 1 during step t, for t < T - 1.
  const uint32_t bytes = 4u * (S - units) * p.stride;
  init_exchange(bars, bytes, T > 2, T > 1);
  // The cluster's rows at step t (known at fixed length).
  const auto rows_at = [&](int t) { return P ? max(0, min(B, step_rows(a, t) - row0)) : B; };
  const auto load_x = [&](int t) {  // thread 0: x_t's B_t rows into buffer t & 1
    const uint32_t x_bytes = 4u * rows_at(t) * F;
    expect_bytes(xbars + (t & 1), x_bytes);
    bulk_load(xb + (t & 1) * padded * F, a.x + (step_row(a, t) + row0) * F, x_bytes,
              xbars + (t & 1));
  };
  if (F > 0) {
    init_bulk_barrier(xbars);
    init_bulk_barrier(xbars + 1);
    if (threadIdx.x == 0)
      for (int t = 0; t < min(T, 2); ++t) load_x(t);
    // the padding rows of both buffers, which no copy writes
    for (int idx = threadIdx.x; idx < (padded - B) * F; idx += blockDim.x)
      xb[B * F + idx] = xb[(padded + B) * F + idx] = 0.0f;
  }
  load_forward_weights(ws, a.W, a.ldw, S + F, S, j0, units, p);
  // h0 (null: zeros) into buffer 0; both buffers' padding rows (b >= B) zero for good.
  for (int idx = threadIdx.x; idx < S * p.stride; idx += blockDim.x) {
    const int k = idx / p.stride, b = idx - k * p.stride;
    hb[idx] = b < B && a.h0 ? static_cast<float>(a.h0[(row0 + b) * S + k]) : 0.0f;
    hb[S * p.stride + idx] = 0.0f;
  }
  const Item it = Held > 0 ? held_item(p) : item_of(p);
  const int lane = it.lane, jt = it.j, b0 = it.b0;
  // One element (b, j) a thread (the plan makes sure), j fastest, its cell
  // in a register; its next input (F > 0: the bias alone) loads while the
  // pushes land.
  const bool owner = static_cast<int>(threadIdx.x) < units * B;
  const int ob = threadIdx.x / units, oj = threadIdx.x % units;
  float c = owner && a.c0 ? a.c0[(row0 + ob) * S + j0 + oj] : 0.0f;
  StepInput<scalar_t> in{};
  if (owner) step_input(a, 0, row0 + ob, j0 + oj, in);
  float acc[3][kRows] = {};
  cluster.sync();  // every block runs, its mbarriers set up, before any pushes into it
  [[maybe_unused]] float wh[3][Held > 0 ? Held : 1];  // (ws is complete after the barrier)
  if constexpr (Held > 0)
#pragma unroll
    for (int g = 0; g < 3; ++g)
#pragma unroll
      for (int m = 0; m < Held; ++m)
        wh[g][m] = lane < p.lanes ? ws[(g * J + jt) * p.kp + lane * Held + m] : 0.0f;
  // x_t's product (F > 0). Held, four values of k a load: on an H200, T =
  // 64, fp32 inference, (16, 32, 128) took 103.4 us against 116.1 a value a
  // load, (16, 64, 128) 111.9 against 140.8, but (16, 8, 128) 99.6 against
  // 97.1 (F < 4 x lanes leaves lanes idle). Not held, an item's lanes read
  // consecutive values, on distinct banks already, and float4 loads were
  // slower: (4, 64, 256) 152.1 us against 138.5, (8, 64, 128) 131.6
  // against 117.6.
  if (F > 0) {
    wait_phase(xbars, 0);
    accumulate_input<(Held > 0)>(ws, S, xb, F, B, p, it, acc);
  }
  for (int t = 0; t < T; ++t) {
    // the rows of steps t and t + 1 (known at fixed length)
    const int Bt = rows_at(t), Bn = t + 1 < T ? rows_at(t + 1) : 0;
    if (t > 0) {
      // h_{t-1} has landed; buffer t & 1 next receives h_{t+1}.
      wait_phase(bars + (t & 1), ((t - 1) >> 1) & 1);
      if (threadIdx.x == 0 && t + 2 < T) expect_bytes(bars + (t & 1), bytes);
    }
    if constexpr (Held > 0) {
      accumulate_held(wh, hb + (t & 1) * S * p.stride, Bt, p, it, acc);
      if (b0 < Bt)
#pragma unroll
        for (int g = 0; g < 3; ++g)
          *reinterpret_cast<float4*>(part + ((lane * 3 + g) * J + jt) * p.stride + b0) =
              make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
    } else {
      accumulate<3>(ws, hb + (t & 1) * S * p.stride, 0, S, Bt, p, it, acc);
      reduce_lanes<3>(p, acc);
      if (lane == 0 && b0 < Bt)
#pragma unroll
        for (int g = 0; g < 3; ++g)
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            if (b0 + r < Bt) pre[(g * J + jt) * B + b0 + r] = acc[g][r];
    }
    __syncthreads();  // pre (Held: part) is complete, buffer t & 1 and x buffer t & 1 read
    if (F > 0 && threadIdx.x == 0 && t + 2 < T) load_x(t + 2);
    const bool send = t + 1 < T;
    float* next = hb + ((t + 1) & 1) * S * p.stride;
    ForwardElement e{};
    const bool live = owner && ob < Bt;
    if (live) {
      float sum[3] = {0.0f, 0.0f, 0.0f};
      if constexpr (Held > 0) {
        // (four lanes' loads at once: a load's latency once, not for each)
#pragma unroll 4
        for (int l = 0; l < p.lanes; ++l)
#pragma unroll
          for (int g = 0; g < 3; ++g) sum[g] += part[((l * 3 + g) * J + oj) * p.stride + ob];
      } else {
#pragma unroll
        for (int g = 0; g < 3; ++g) sum[g] = pre[(g * J + oj) * B + ob];
      }
      e = gate_forward<scalar_t>(in[0] + sum[0], in[1] + sum[1], in[2] + sum[2], c);
      c = e.c;
      next[(j0 + oj) * p.stride + ob] = e.h;
    }
#pragma unroll
    for (int g = 0; g < 3; ++g)
#pragma unroll
      for (int r = 0; r < kRows; ++r) acc[g][r] = 0.0f;
    if (send) {
      __syncthreads();  // the block's rows of h_t are complete, pre read
      push(next + j0 * p.stride, units * p.stride, p.blocks, rank, bars + ((t + 1) & 1));
      if (F > 0) {
        wait_phase(xbars + ((t + 1) & 1), ((t + 1) >> 1) & 1);
        accumulate_input<(Held > 0)>(ws, S, xb + ((t + 1) & 1) * padded * F, F, Bn, p, it, acc);
      }
    }
    if (live) {
      store_forward(a, t, row0 + ob, j0 + oj, e);
      if (send && ob < Bn) step_input(a, t + 1, row0 + ob, j0 + oj, in);
    }
  }
  if (owner) a.c_n[(row0 + ob) * S + j0 + oj] = static_cast<scalar_t>(c);  // each row's last cell
#endif
}

// The backward exchanges partial sums, not operands: each block multiplies
// its own d_gates_t (its 3J rows of the gates, all B rows) by its 3J rows of
// W_h, a partial g_{t-1} for every hidden unit, and pushes each block the
// columns that block owns; a block's g_{t-1} is the sum of the partials it
// receives. A step pushes S of each row instead of 3S, needs no reduction
// across lanes, and its product starts before the step's exchange, not after.
constexpr int kMaxItems = 4;  // product items (a unit s, 4 batch rows) a thread

template <class scalar_t, bool P>
__global__ void __launch_bounds__(kThreads)
    cluster_backward_kernel(const BackwardArgs<scalar_t, P> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const Plan& p = a.plan;
  // The cluster's batch rows [row0, row0 + B), as the forward's; `ob` below
  // is a row of the cluster, row0 + ob the batch's.
  const int row0 = static_cast<int>(blockIdx.x) / p.blocks * p.rows;
  // T: the steps of the cluster's longest row, as the forward's.
  const int J = p.units, B = min(p.rows, a.batch - row0), S = a.S, T = row_steps(a, row0);
  const int RB = p.stride;
  const int blocks = p.blocks;
  const int rank = static_cast<int>(cluster.block_rank());
  const int j0 = rank * J, units = min(J, S - j0);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem4);  // [2]: buffer t & 1 receives step t's
  float* ws = reinterpret_cast<float*>(smem4 + 1);      // [3J][kp]: the block's rows of W_h
  float* part = ws + p.ws;                              // [2][blocks][J][RB]: the partials
  float* dl = part + 2 * blocks * J * RB;               // [3J][RB]: the block's d_gates_t
  const int buffer = blocks * J * RB;
  // Step t's partials are exchanged where t > 0 or d_h0 is asked for.
  const auto sends = [&](int t) { return t >= 0 && (t > 0 || a.d_h0 != nullptr); };
  const int quads = (B + 3) / 4;
  const uint32_t bytes = 16u * blocks * units * quads;
  init_exchange(bars, bytes, sends(T - 1) && ((T - 1) & 1) == 0 || sends(T - 2) && (T & 1) == 0,
                sends(T - 1) && ((T - 1) & 1) == 1 || sends(T - 2) && (T & 1) == 1);
  load_forward_weights<2>(ws, a.W, a.ldw, S, S, j0, units, p);  // (4: spills at 64 registers)
  for (int idx = threadIdx.x; idx < 3 * J * RB; idx += blockDim.x) dl[idx] = 0.0f;
  // The thread's product items: unit s, rows [b0, b0 + 4), the block that
  // owns s, and where the item lands in that block's buffer.
  int item_s[kMaxItems], item_b0[kMaxItems], item_to[kMaxItems], item_at[kMaxItems];
  const int items = S * quads;
#pragma unroll
  for (int i = 0; i < kMaxItems; ++i) {
    const int idx = static_cast<int>(threadIdx.x) + i * static_cast<int>(blockDim.x);
    const int s = idx % S, to = s / J;
    item_s[i] = s;
    item_b0[i] = idx / S * 4;
    item_to[i] = to;
    item_at[i] = (rank * J + s - to * J) * RB + item_b0[i];
  }
  // One element (b, j) a thread (the plan makes sure), j fastest: g_t, the
  // cell's gradient and the element's d_gates summed over the steps in
  // registers; the next step's saved values and grad_output load while the
  // partials land.
  const bool owner = static_cast<int>(threadIdx.x) < units * B;
  const int ob = threadIdx.x / units, oj = threadIdx.x % units;
  // Packed, a row takes part from its own last step down (Bt rows at step
  // t), where grad_hn joins its grad_output.
  float dh = 0.0f, dc = 0.0f, in[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d_b[3] = {0.0f, 0.0f, 0.0f};
  // The cluster's rows at step t (known at fixed length).
  const auto rows_at = [&](int t) { return P ? max(0, min(B, step_rows(a, t) - row0)) : B; };
  const int rb = row0 + ob;  // the owner's row of the batch
  if (owner) {
    dc = a.grad_cn ? a.grad_cn[rb * S + j0 + oj] : 0.0f;
    if (ob < rows_at(T - 1)) {
      dh = step_grad_h(a, T - 1, rb, j0 + oj, true);
      step_saved(a, T - 1, rb, j0 + oj, in);
    }
  }
  cluster.sync();  // every block runs, its mbarriers set up, before any pushes into it
  for (int t = T - 1; t >= 0; --t) {
    // the rows of steps t and t - 1 (known at fixed length)
    const int Bt = rows_at(t), Bp = t > 0 ? rows_at(t - 1) : 0;
    if (owner && ob < Bt) {
      const BackwardElement e = gate_backward<scalar_t>(dh, dc, in);
      dc = e.dc;
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        dl[(g * J + oj) * RB + ob] = e.d[g];
        d_b[g] += e.d[g];
      }
      store_backward(a, t, rb, j0 + oj, e);
    }
    if (!sends(t)) break;
    __syncthreads();  // dl is complete
    float* into = part + (t & 1) * buffer;
    const uint32_t bar = shared_address(bars + (t & 1));
#pragma unroll
    for (int i = 0; i < kMaxItems; ++i) {
      if (static_cast<int>(threadIdx.x) + i * static_cast<int>(blockDim.x) >= items) break;
      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      const float* w = ws + item_s[i];
      const float* d = dl + item_b0[i];
      // (rows past Bt have no d_gates: their partials are the zeros of dl)
      for (int r = 0; (!P || item_b0[i] < Bt) && r < 3 * J; ++r) {
        const float wr = w[r * p.kp];
        const float4 v = *reinterpret_cast<const float4*>(d + r * RB);
        acc[0] += wr * v.x;
        acc[1] += wr * v.y;
        acc[2] += wr * v.z;
        acc[3] += wr * v.w;
      }
      const uint32_t to = static_cast<uint32_t>(item_to[i]);
      store_async(in_rank(shared_address(into + item_at[i]), to), in_rank(bar, to), acc[0], acc[1],
                  acc[2], acc[3]);
    }
    float go = 0.0f;
    if (owner && ob < Bp) {
      step_saved(a, t - 1, rb, j0 + oj, in);
      go = step_grad_h(a, t - 1, rb, j0 + oj, ob >= Bt);
    }
    __syncthreads();  // dl read: the owners write it next
    // Step t's partials have landed; buffer t & 1 next receives step t - 2's.
    wait_phase(bars + (t & 1), ((T - 1 - t) >> 1) & 1);
    if (threadIdx.x == 0 && sends(t - 2)) expect_bytes(bars + (t & 1), bytes);
    if (owner) {
      dh = go;
      for (int from = 0; from < blocks; ++from) dh += into[(from * J + oj) * RB + ob];
    }
  }
  if (owner) {
    if (a.d_c0) a.d_c0[rb * S + j0 + oj] = dc;
    if (a.d_h0) a.d_h0[rb * S + j0 + oj] = static_cast<scalar_t>(dh);
  }
  if (a.d_b) {
    // d_b = the sum over the batch of the elements' sums, through the
    // buffers, which nothing writes into any more (one cluster: the driver
    // passes no d_b to clusters of rows).
    __syncthreads();
    if (owner)
#pragma unroll
      for (int g = 0; g < 3; ++g) part[(g * units + oj) * B + ob] = d_b[g];
    __syncthreads();
    for (int idx = threadIdx.x; idx < 3 * units; idx += blockDim.x) {
      float sum = 0.0f;
      for (int b = 0; b < B; ++b) sum += part[idx * B + b];
      const int g = idx / units;
      a.d_b[g * S + j0 + idx - g * units] = static_cast<scalar_t>(sum);
    }
  }
#endif
}

// The largest cluster (16 or 8 blocks) of Kernel's blocks at the most
// shared memory a block may have that `device` can run, or 0: none (compute
// capability below 9.0, or no such cluster fits), how many such clusters
// the device runs at once, and how many of half that size. The probe's
// errors only mean "not supported" and are cleared.
struct ClusterFit {
  int blocks, active, half_active;
};

template <auto Kernel>
ClusterFit cluster_fit(int32_t device) {
  // (the size + 1) + 256 * active + 65536 * half_active: never 0
  const int n = cuda::once_per_device(device, [](int32_t d) {
    int major = 0, size = 0, active = 0, half_active = 0;
    STD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
    const int smem = max_shared_bytes(d);
    const auto clusters_of = [smem](int blocks) {
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = blocks;
      attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(blocks);
      config.blockDim = dim3(kThreads);
      config.dynamicSmemBytes = smem;
      config.attrs = &attr;
      config.numAttrs = 1;
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, Kernel, &config) != cudaSuccess) clusters = 0;
      return std::min(clusters, 255);
    };
    if (major >= 9 && cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           smem) == cudaSuccess) {
      const bool wide = cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                             1) == cudaSuccess;
      for (int blocks = wide ? kMaxCluster : 8; blocks >= 8 && size == 0; blocks /= 2)
        if ((active = clusters_of(blocks)) > 0) size = blocks;
      if (size > 0) half_active = clusters_of(size / 2);
    }
    (void)cudaGetLastError();
    return size + 1 + 256 * active + 65536 * half_active;
  });
  return {n % 256 - 1, n / 256 % 256, n / 65536};
}

template <auto Kernel>
int max_cluster(int32_t device) {
  return cluster_fit<Kernel>(device).blocks;
}

// The plan of one cluster of ceil(S / J) <= max_blocks blocks for a
// direction, or blocks = 0 where it does not apply (no cluster, a batch above
// kMaxBatch, more work a block than kClusterWork, more elements than
// threads or backward product items than kMaxItems a thread, or more shared
// memory than a block has: W's slice and two receive buffers). The forward
// multiplies x by W_x itself (plan.features = features) where `features`
// is not 0 and the whole rows of W (K = S + F) and two buffers of x_t fit.
inline Plan cluster_plan(int64_t batch, int64_t S, bool backward, int max_blocks, int32_t device,
                         int64_t features = 0, bool split = false) {
  if (max_blocks < 2 || batch > kMaxBatch || S == 0 || batch == 0) return {};
  const int64_t J = (S + max_blocks - 1) / max_blocks;
  if ((!split && batch * 3 * S * J > kClusterWork) || batch * J > kThreads) return {};
  if (backward && S * ((batch + 3) / 4) > kMaxItems * kThreads) return {};
  const auto limit = static_cast<size_t>(max_shared_bytes(device));
  // The forward gives an item at most kForwardLanes lanes where the block
  // keeps kForwardThreads threads or more, and launches only those: its lane
  // reduction's shuffles go as lanes x log2(lanes) and share the
  // shared-memory pipe with the product's loads (at (16, 32, 128) on an H200,
  // 8 lanes took the kernel from 137.5 to 133.0 us in fp32, 134.4 to 123.3
  // in bf16; at (4, 64, 256), with 4 warps left, from 161.8 to 185.5).
  const int64_t items = J * ((batch + kRows - 1) / kRows);
  const bool few = !backward && items * kForwardLanes >= kForwardThreads;
  for (const int64_t F : {backward ? 0 : features, int64_t{0}}) {
    Plan p;
    // The block's 3J rows of W_h (K = S), or of W (K = S + F).
    if (!layout(J, batch, S + F, false, p, few ? kForwardLanes : 32)) return {};
    if (few) p.threads = static_cast<int>((std::max(items * p.lanes, batch * J) + 31) / 32 * 32);
    p.unit_groups = p.blocks = static_cast<int>((S + J - 1) / J);
    p.chunk = static_cast<int>(S);
    p.features = static_cast<int>(F);
    p.held = !backward && p.lanes * kHeld == S;
    // Held, a step reads W only for x_t's product (accumulate_input), a
    // float4 of eight consecutive rows at once: rows 4 floats past a
    // multiple of 32 apart put them on distinct banks (on an H200, T = 64,
    // fp32 inference, a value a load: (16, 32, 128) 113.4 us against 115.9,
    // (16, 64, 128) 135.5 against 140.6).
    if (p.held && F > 0) {
      p.kp = static_cast<int>((S + F + 31) / 32 * 32 + 4);
      p.ws = static_cast<int>(3 * J * p.kp);
    }
    // (held: the lanes' partial sums, [lanes][3][J][stride])
    const int64_t part = p.held ? 3 * p.lanes * J * p.stride : 0;
    // the two mbarriers, W's slice, then forward: the two buffers of h, the
    // state and (F > 0) two buffers of x_t and their mbarriers; backward: the
    // two buffers of partials and d_gates
    const int64_t x = F > 0 ? 2 * ((batch + kRows - 1) / kRows * kRows) * F + 4 : 0;
    p.smem = static_cast<size_t>(
        16 + 4 * (p.ws + (backward ? (2 * p.blocks * J + 3 * J) * p.stride
                                   : 2 * S * p.stride + state_floats(p, false) + x + part)));
    if (p.smem <= limit) return p;
  }
  return {};
}

// The plan of several clusters for a direction, each the plan of one
// cluster for its p.rows consecutive rows (packed: the longest rows in the
// first cluster), or blocks = 0: the batch split into as many clusters as
// run at once (`active`, and blocks * clusters <= `sms`), or `waves` times
// as many (see the next overload). The clusters share
// nothing (one that waits for an SM only runs later), and a step exchanges
// within its cluster where the grid of lltm_sequence_persistent.cuh makes
// an L2 round trip and a grid-wide synchronization.
// The forward's, for a batch that one cluster cannot take (cluster_plan),
// where a block's work a step is within kClusterWork, where the grid does
// not apply (`grid_rows` 0), or where a cluster takes at most 5/4 of the
// rows of one of the grid's batch groups (`grid_rows`). On an H200, fixed
// length, T = 64, F = S, inference against the grid (or cuBLAS per step),
// fp32: (B, S) = (128, 64) 334 to 204 us, (256, 128) 462 to 292, (128, 256)
// 522 to 442, (33, 300) 475 to 301, (300, 64) 1633 to 238; slower at (64,
// 256), 12 rows a cluster against the grid's 8: 470 to 545, and (64, 384),
// 559 to 651. Its x_t products are left to the GEMM.
// The backward's, wherever a block's work a step is within kClusterWork,
// before one cluster too: a thread's product items and a step's exchange of
// partial sums shrink with the rows. On an H200, one layer, fixed length,
// F = S, fp32, the backward kernel against one cluster, us: (16, 128),
// T = 64, 120.6 to 81.4 (F = 32 too), (48, 100), T = 128, 419.7 to 181.6,
// (8, 256), T = 512, 1255 to 917, (32, 100), T = 500, 1228 to 758, (12, 256)
// 120.4 to 120.5; against the grid: (64, 100), T = 500, 1545 to 848, (100,
// 64) 203 to 81, (128, 128) 232 to 146, (32, 256) 221 to 153.
inline Plan cluster_split_plan(int64_t batch, int64_t S, bool backward, int max_blocks, int active,
                               int64_t sms, int64_t grid_rows, int32_t device, int64_t waves = 1) {
  if (max_blocks < 2 || S == 0 || batch <= kRows) return {};
  const int64_t J = (S + max_blocks - 1) / max_blocks, blocks = (S + J - 1) / J;
  const int64_t most = std::min<int64_t>(active, sms / blocks);
  if (most < 2) return {};
  const int64_t rows = ((batch + most * waves - 1) / (most * waves) + kRows - 1) / kRows * kRows;
  const int64_t clusters = (batch + rows - 1) / rows;
  if (clusters < 2) return {};
  Plan p = cluster_plan(rows, S, backward, max_blocks, device, 0, true);
  if (p.blocks == 0 || p.blocks * clusters > sms * waves) return {};
  if (rows * 3 * S * p.units > kClusterWork &&
      (backward || (grid_rows > 0 && 4 * rows > 5 * grid_rows)))
    return {};
  p.clusters = static_cast<int>(clusters);
  return p;
}

// cluster_split_plan with the largest clusters that `fit` gives, else, where
// there is no grid for the batch (`grid_rows` 0: the batch would step by
// cuBLAS), clusters of half as many blocks, of which about twice as many
// run at once: a cluster's rows are bound by its threads (one an element
// of h_t) and kMaxBatch, so twice the clusters take twice the batch. On an
// H200, fp32, T = 50, whole steps against cuBLAS per step (medians, us; two
// rounds, cuDNN's LSTM in the same processes): (B, F, S) = (600, 64, 64)
// inference 1146 and 1404 to 187 and 191 (LSTM 322 to 462), training 3429
// and 3709 to 812 and 1057; packed, lengths in [5, 50], (600, 32, 64)
// inference 1549 and 1580 to 613 and 918 (LSTM 1383 to 2044), training
// 4939 and 6228 to 2599 and 2940 (LSTM 5752 to 7311).
// A larger batch runs in waves: more clusters than run at once, the later
// ones as SMs free up (packed, the shortest rows last, each cluster ending
// at its longest row's last step), the fewest waves that fit. A wave's step
// costs a fixed latency (about kClusterWork multiply-adds of a block's time)
// plus the block's work, and the waves are taken while their sum stays
// within what one cuBLAS step costs: the backward's, two GEMMs and more, is
// twice the float forward's; a 16-bit forward's, at fixed length, about
// half. Packed, a cuBLAS step costs more and the later waves, of shorter
// rows, less: the forward's budget doubles (float (8000, 64), 9 waves,
// 1693 against 1880 us; (12000, 64), 13 waves, 2743 against 2832, with
// cuDNN's LSTM at 2724 and 5252 in the new processes, 2271 and 3605 in the
// old; (1024, 256), 5 waves, 1344 against 2190). On an H200, T = 50,
// F = S / 2 (S at 16), fixed length, waves against cuBLAS per step, us,
// float forward and backward: (B, S) = (8000, 16), 9 and 9 waves, 767 against 1527, 970 against
// 2272; (7680, 64), 8 waves, 1161 against 1210; (8000, 64), 9 and 9 waves, 1319 against 1371, 2005
// against 2662; (12000, 64), 13 waves, 1994 against 1898, 2882 against 3158; (16000, 64), 17 waves,
// 2482 against 2310, 3877 against 3530; (2000, 128), 5 and 7 waves (28 and 20 rows a cluster), 1266
// against 1486, 1500 against 2490; (2400, 128), 5 waves of 32 rows, 1347
// and 1357 against 1193 and 1202; (4000, 128), 9 and 14 waves, 2400
// against 1670, 2934 against 2882; (512, 256), 3 and 9 waves, 955 against
// 1362, 1454 against 2535; (960, 256), backward, 16 waves, 2431 against
// 2133. bf16 forward: (3840, 64), 4 waves, 554 and 559 against 665 and
// 682; (7680, 64), 8 waves, 1066 against 764; (1260, 128), 3 waves, 582
// and 585 against 550 and 627; (2400, 128), 5 waves, 1244 against 716.
// The waves' budgets, in kClusterWork:
constexpr int64_t kForwardWaves = 12, kHalfForwardWaves = 7, kBackwardWaves = 24;

// The waves' budget of a direction, in kClusterWork (16-bit: `half`).
inline int64_t wave_budget(bool backward, bool half, bool packed) {
  if (backward) return kBackwardWaves;
  return (half ? kHalfForwardWaves : kForwardWaves) * (packed ? 2 : 1);
}

// A direction's steps, for the split's plan: T and, packed, the host's
// T + 1 offsets (null at fixed length); `over_grid`: whether waves of
// smaller clusters may take a batch that the grid would run.
struct SplitSteps {
  int64_t steps = 0;
  const int64_t* offsets = nullptr;
  bool over_grid = false;
};

// The steps that the split p's clusters take end to end, `at_once` of them
// running: each its longest row's steps (packed, its first row's), started
// in order as one ends; at fixed length, p's waves times T.
inline int64_t split_steps(const Plan& p, int64_t at_once, const SplitSteps& s) {
  std::vector<int64_t> ends(static_cast<size_t>(std::min<int64_t>(at_once, p.clusters)), 0);
  for (int64_t c = 0; c < p.clusters; ++c) {
    // each cluster's first row, c * rows, takes part in the most steps
    const int64_t steps = s.offsets ? packed_row_steps(s.offsets, s.steps, c * p.rows) : s.steps;
    *std::min_element(ends.begin(), ends.end()) += steps;
  }
  return *std::max_element(ends.begin(), ends.end());
}

// A block's multiply-adds a step in plan p at S: its rows x 3S x its units.
inline int64_t block_work(const Plan& p, int64_t S) {
  return 3 * p.rows * S * p.units;
}

// With split.over_grid, the split in waves of clusters of half the blocks
// also takes a batch that the `grid` would run: the backward's wherever it
// fits (on an H200, T = 64, F = S / 2, training steps, us: (B, S) = (256,
// 256), 5 waves, 1846 against 1618; (100, 256) 1039 against 831, bf16 1457
// against 938; (256, 192) 1521 against 1376; packed, lengths in [5, 50],
// (100, 256) 2428 against 2329), the forward's where its steps end to end
// (split_steps) cost less than T of the grid's. A step costs a block's
// work plus a fixed latency, the grid's more for its grid-wide
// synchronization through L2: kClusterLatency and kGridLatency, fitted to
// these A/B runs. On an H200, float inference, T = 64, F = S / 2, packed
// (T = 50) lengths in [5, 50] unless said: (64, 256), 8 clusters, 362
// against 293 us, packed 656 against 625; (96, 256) 402 against 326; packed
// (256, 256), 2 waves ending within T, 611 against 556, lengths in [15, 50]
// (52 steps) 814 against 772; (256, 320) 834 against 671. About even at
// (64, 320), 8 clusters of twice the grid's work, 389 against 399, and
// (256, 256), lengths in [30, 50] (74 steps), 811 against 855; slower at
// fixed length, 2 waves of T steps, 449 against 565.
constexpr int64_t kClusterLatency = 2 * kClusterWork, kGridLatency = 3 * kClusterWork;

inline Plan cluster_split_plan(int64_t batch, int64_t S, bool backward, const ClusterFit& fit,
                               int64_t sms, const Plan& grid, int32_t device, int64_t units,
                               const SplitSteps& split = {}) {
  const int64_t grid_rows = grid.blocks > 0 ? grid.rows : 0;
  const Plan p =
      cluster_split_plan(batch, S, backward, fit.blocks, fit.active, sms, grid_rows, device);
  if (p.blocks > 0 || (grid_rows > 0 && !split.over_grid)) return p;
  const int64_t budget = units * kClusterWork;  // (units: wave_budget's)
  for (int64_t waves = 1; waves * kClusterWork <= budget; ++waves) {
    const Plan w = cluster_split_plan(batch, S, backward, fit.blocks / 2, fit.half_active, sms, 0,
                                      device, waves);
    if (w.blocks == 0) continue;
    if (waves * (block_work(w, S) + kClusterWork) > budget) return {};
    if (grid_rows == 0 || backward) return w;
    const int64_t at_once = std::min<int64_t>(fit.half_active, sms / w.blocks);
    return split_steps(w, at_once, split) * (block_work(w, S) + kClusterLatency) <=
                   split.steps * (block_work(grid, S) + kGridLatency)
               ? w
               : Plan{};
  }
  return {};
}

// Whether an inference forward that one cluster takes (p, cluster_plan's,
// past kFusedSteps steps) runs faster split over clusters of its rows
// (cluster_split_plan, which leaves x_t's products to the GEMM): where p
// does not multiply x_t itself, or where a block's work a step is above
// kFusedClusterWork, the GEMM's call then costing less than the kernel
// saves; not where p holds W_h in one block of 256 threads or fewer. On an
// H200, T = 64, whole calls, one cluster against split: fp32, F = 32,
// (B, S) = (12, 128) 144.3 us against 135.6, (16, 192) 206.9 against
// 165.4, (8, 256) 198.7 against 177.4, (64, 64) 185.8 against 135.1, but
// (24, 64), work 18432, 146.8 against 157.8; F = 256, (8, 128) 152.0
// against 137.1; bf16, (16, 64) 143.7 against 130.6; held, (16, 128) fp32
// F = 32 132.1 against 135.5, bf16 133.3 against 138.9. A training step
// stays on one cluster: there the GEMM's host time added more than the
// kernel saved (fp32, F = 32, (12, 128) 333.4 us against 384.7, (16, 192)
// 477.2 against 506.3).
constexpr int64_t kFusedClusterWork = int64_t{1} << 15;

inline bool split_pays(const Plan& p) {
  const int64_t work = int64_t{3} * p.rows * p.chunk * p.units;
  return !(p.held && p.threads <= 256) && (p.features == 0 || work > kFusedClusterWork);
}

template <auto Kernel, class Args>
void launch_cluster(const Args& args, int32_t device) {
  // max_cluster set the kernel's shared memory to the most a block may have.
  const Plan& p = args.plan;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = p.blocks;
  attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(p.blocks * p.clusters);
  config.blockDim = dim3(p.threads);
  config.dynamicSmemBytes = p.smem;
  config.stream = cuda::current_stream(device);
  config.attrs = &attr;
  config.numAttrs = 1;
  STD_CUDA_CHECK(cudaLaunchKernelEx(&config, Kernel, args));
}

}  // namespace kernforge::cuda_seq
