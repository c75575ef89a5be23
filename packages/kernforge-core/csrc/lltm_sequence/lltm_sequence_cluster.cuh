// The recurrence of a small LLTM sequence as one thread-block cluster
// (compute capability 9.0 and up): up to 16 blocks, each owning the hidden
// units [j0, j0 + J) of every batch row with its slice of W_h in shared
// memory, as in lltm_sequence_persistent.cuh. What a step produces for the
// next (h_t forward, d_gates_t backward) is pushed straight into every
// block's shared memory (distributed shared memory, st.async) and each
// block waits on its own mbarrier until the bytes it expects have landed,
// so a step makes no round trip to L2 and needs no barrier across blocks.
//   forward,  step t:  pre = P_t + b + h_{t-1} W_h^T   (its 3J columns, h_{t-1} local)
//                      -> gates_t, c_t, h_t; h_t to every block
//   backward, step t:  d_gates_t, d_c from g_t, d_c     (its J units); d_gates_t to every block
//                      g_{t-1} = grad_output_{t-1} + d_gates_t W_h  (its J columns, local)
// The operand a step reads is double-buffered by the step's parity. Two
// buffers suffice: a block can push into a buffer again only after every
// block has sent it the step in between, which each sends only after it
// has read that buffer.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <atomic>

#include "lltm_sequence/lltm_sequence_persistent.cuh"

namespace kernforge::cuda_seq {

constexpr int kMaxCluster = 16;  // blocks; above the portable 8 where the device allows
// Multiply-adds of one block's recurrent product a step (B * 3S * J) up to
// which one cluster runs the sequence; above it the grid of
// lltm_sequence_persistent.cuh, whose product spreads over every SM, is faster.
constexpr int64_t kClusterWork = int64_t{1} << 16;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// A block's two receive buffers each have an mbarrier (in the first 16
// bytes of shared memory). One phase of a buffer's mbarrier is one exchange
// into it: the owning block arrives once, announcing the bytes the other
// blocks will push, and each push (st.async) completes its bytes on it, so
// the phase ends when the last byte has landed, with no cluster barrier and
// no memory fence on the sender's side. A push may land before the arrival
// that announces it (the transaction count goes negative meanwhile).
__device__ inline uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// The address of the same shared-memory location in block `rank` of the cluster.
__device__ inline uint32_t in_rank(uint32_t address, uint32_t rank) {
  uint32_t out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(address), "r"(rank));
  return out;
}

// The owning block's arrival on its own mbarrier. Its release is to the
// block alone: the arriving thread wrote nothing that another block reads
// (the pushes carry their data), and at cluster scope the release stalled
// that thread a step behind its global stores.
__device__ inline void expect_bytes(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
}

// Until the phase of `parity` of the local mbarrier `bar` has completed;
// the pushes it counted are visible to the thread then.
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

// Pushes `parts` runs of n floats (n a multiple of 4, 16-byte aligned),
// `pitch` floats apart from `from`, to the same place in every other block
// of the cluster, completing on that block's mbarrier at `bar`'s place.
// Warp w serves the blocks w, w + warps, ... (this one left out), its lanes
// consecutive float4s; no division, so a step's push starts at once.
__device__ inline void push(const float* from, int n, int parts, int pitch, int blocks, int self,
                            const uint64_t* bar) {
  const int quads = n / 4, per_block = parts * quads;
  const int lane = static_cast<int>(threadIdx.x) % 32, warps = static_cast<int>(blockDim.x) / 32;
  const uint32_t base = shared_address(from), bar_address = shared_address(bar);
  for (int r = static_cast<int>(threadIdx.x) / 32; r < blocks - 1; r += warps) {
    const uint32_t rank = static_cast<uint32_t>(r + (r >= self));
    const uint32_t to = in_rank(base, rank), to_bar = in_rank(bar_address, rank);
    int part = 0, q = lane;  // the float4 q of run `part`
    while (q >= quads) q -= quads, ++part;
    for (int idx = lane; idx < per_block; idx += 32) {
      const int offset = part * pitch + q * 4;
      const float4 v = *reinterpret_cast<const float4*>(from + offset);
      asm volatile(
          "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
          "[%5];" ::"r"(to + 4 * offset),
          "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)),
          "r"(__float_as_uint(v.w)), "r"(to_bar)
          : "memory");
      for (q += 32; q >= quads;) q -= quads, ++part;
    }
  }
}
#endif

template <class scalar_t>
__global__ void __launch_bounds__(kThreads) cluster_forward_kernel(const ForwardArgs<scalar_t> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const Plan& p = a.plan;
  const int J = p.units, B = a.batch, S = a.S, T = a.T;
  const int rank = static_cast<int>(cluster.block_rank());
  const int j0 = rank * J, units = min(J, S - j0);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem4);  // [2]: buffer t & 1 receives h_{t-1}
  float* ws = reinterpret_cast<float*>(smem4 + 1);      // [3J][kp]
  float* hb = ws + p.ws;                                // [2][S][stride]: h_{t-1}, transposed
  float* pre = hb + 2 * S * p.stride;                   // [3][J][B]
  // h_t arrives in buffer (t + 1) & 1 during step t, for t < T - 1.
  const uint32_t bytes = 4u * (S - units) * p.stride;
  init_exchange(bars, bytes, T > 2, T > 1);
  load_forward_weights(ws, a.W, a.ldw, S, j0, units, p);
  // h0 (null: zeros) into buffer 0; both buffers' padding rows (b >= B) zero for good.
  for (int idx = threadIdx.x; idx < S * p.stride; idx += blockDim.x) {
    const int k = idx / p.stride, b = idx - k * p.stride;
    hb[idx] = b < B && a.h0 ? static_cast<float>(a.h0[b * S + k]) : 0.0f;
    hb[S * p.stride + idx] = 0.0f;
  }
  const Item it = item_of(p);
  const int lane = it.lane, jt = it.j, b0 = it.b0;
  // One element (b, j) a thread (the plan makes sure), j fastest, its cell
  // in a register; its next input loads while the pushes land.
  const bool owner = static_cast<int>(threadIdx.x) < units * B;
  const int ob = threadIdx.x / units, oj = threadIdx.x % units;
  float c = owner && a.c0 ? a.c0[ob * S + j0 + oj] : 0.0f;
  StepInput<scalar_t> in{};
  if (owner) step_input(a, 0, ob, j0 + oj, in);
  cluster.sync();  // every block runs, its mbarriers set up, before any pushes into it
  for (int t = 0; t < T; ++t) {
    if (t > 0) {
      // h_{t-1} has landed; buffer t & 1 next receives h_{t+1}.
      wait_phase(bars + (t & 1), ((t - 1) >> 1) & 1);
      if (threadIdx.x == 0 && t + 2 < T) expect_bytes(bars + (t & 1), bytes);
    }
    float acc[3][kRows] = {};
    accumulate<3>(ws, hb + (t & 1) * S * p.stride, 0, S, B, p, it, acc);
    reduce_lanes<3>(p, acc);
    if (lane == 0 && b0 < B)
#pragma unroll
      for (int g = 0; g < 3; ++g)
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          if (b0 + r < B) pre[(g * J + jt) * B + b0 + r] = acc[g][r];
    __syncthreads();  // pre is complete, buffer t & 1 read
    const bool send = t + 1 < T;
    float* next = hb + ((t + 1) & 1) * S * p.stride;
    ForwardElement e{};
    if (owner) {
      e = gate_forward<scalar_t>(in[0] + pre[oj * B + ob], in[1] + pre[(J + oj) * B + ob],
                                 in[2] + pre[(2 * J + oj) * B + ob], c);
      c = e.c;
      next[(j0 + oj) * p.stride + ob] = e.h;
    }
    if (send) {
      __syncthreads();  // the block's rows of h_t are complete, pre read
      push(next + j0 * p.stride, units * p.stride, 1, 0, p.blocks, rank, bars + ((t + 1) & 1));
    }
    if (owner) {
      store_forward(a, t, ob, j0 + oj, e);
      if (send) step_input(a, t + 1, ob, j0 + oj, in);
    }
  }
#endif
}

template <class scalar_t>
__global__ void __launch_bounds__(kThreads)
    cluster_backward_kernel(const BackwardArgs<scalar_t> a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ float4 smem4[];
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const Plan& p = a.plan;
  const int J = p.units, B = a.batch, S = a.S, T = a.T;
  const int rank = static_cast<int>(cluster.block_rank());
  const int j0 = rank * J, units = min(J, S - j0);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem4);  // [2]: buffer t & 1 receives d_gates_t
  float* ws = reinterpret_cast<float*>(smem4 + 1);      // [J][kp]: W_h's columns, transposed
  float* db = ws + p.ws;                                // [2][3S][stride]: d_gates_t, transposed
  float* dh = db + 2 * 3 * S * p.stride;                // [J][B]
  // d_gates_t is exchanged at step t where t > 0 or d_h0 is asked for.
  const auto sends = [&](int t) { return t >= 0 && (t > 0 || a.d_h0 != nullptr); };
  const uint32_t bytes = 4u * 3 * (S - units) * p.stride;
  init_exchange(bars, bytes, sends(T - 1) && ((T - 1) & 1) == 0 || sends(T - 2) && (T & 1) == 0,
                sends(T - 1) && ((T - 1) & 1) == 1 || sends(T - 2) && (T & 1) == 1);
  load_backward_weights(ws, a.W, a.ldw, S, j0, units, p);
  for (int idx = threadIdx.x; idx < 2 * 3 * S * p.stride; idx += blockDim.x) db[idx] = 0.0f;
  const Item it = item_of(p);
  const int lane = it.lane, jt = it.j, b0 = it.b0;
  // One element (b, j) a thread (the plan makes sure), j fastest, the cell's
  // gradient and the element's d_gates summed over the steps in registers;
  // the next step's saved values load while the pushes land.
  const bool owner = static_cast<int>(threadIdx.x) < units * B;
  const int ob = threadIdx.x / units, oj = threadIdx.x % units;
  float dc = 0.0f, in[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d_b[3] = {0.0f, 0.0f, 0.0f};
  if (owner) {
    dh[oj * B + ob] = step_grad_output(a, T - 1, ob, j0 + oj);
    dc = a.grad_cn ? a.grad_cn[ob * S + j0 + oj] : 0.0f;
    step_saved(a, T - 1, ob, j0 + oj, in);
  }
  cluster.sync();  // every block runs, its mbarriers set up, before any pushes into it
  for (int t = T - 1; t >= 0; --t) {
    const bool send = sends(t);
    float* here = db + (t & 1) * 3 * S * p.stride;
    BackwardElement e{};
    if (owner) {
      e = gate_backward<scalar_t>(dh[oj * B + ob], dc, in);
      dc = e.dc;
#pragma unroll
      for (int g = 0; g < 3; ++g) {
        here[(g * S + j0 + oj) * p.stride + ob] = e.d[g];
        d_b[g] += e.d[g];
      }
    }
    if (send) {
      __syncthreads();  // the block's columns of d_gates_t are complete, dh read
      push(here + j0 * p.stride, units * p.stride, 3, S * p.stride, p.blocks, rank, bars + (t & 1));
    }
    float go[kRows] = {};
    if (owner) {
      store_backward(a, t, ob, j0 + oj, e);
      if (t > 0) step_saved(a, t - 1, ob, j0 + oj, in);
    }
    if (!send) break;
    if (lane == 0 && jt < units && t > 0)
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (b0 + r < B) go[r] = step_grad_output(a, t - 1, b0 + r, j0 + jt);
    // d_gates_t has landed; buffer t & 1 next receives d_gates_{t-2}.
    wait_phase(bars + (t & 1), ((T - 1 - t) >> 1) & 1);
    if (threadIdx.x == 0 && sends(t - 2)) expect_bytes(bars + (t & 1), bytes);
    float acc[1][kRows] = {};
    accumulate<1>(ws, here, 0, 3 * S, B, p, it, acc);
    reduce_lanes<1>(p, acc);
    if (lane == 0 && jt < units)
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (b0 + r < B) dh[jt * B + b0 + r] = acc[0][r] + go[r];
    __syncthreads();  // dh is complete, buffer t & 1 read
  }
  if (owner) {
    if (a.d_c0) a.d_c0[ob * S + j0 + oj] = dc;
    if (a.d_h0) a.d_h0[ob * S + j0 + oj] = static_cast<scalar_t>(dh[oj * B + ob]);
  }
  if (a.d_b) {
    // d_b = the sum over the batch of the elements' sums, through the
    // buffers, which nothing writes into any more.
    __syncthreads();
    if (owner)
#pragma unroll
      for (int g = 0; g < 3; ++g) db[(g * units + oj) * B + ob] = d_b[g];
    __syncthreads();
    for (int idx = threadIdx.x; idx < 3 * units; idx += blockDim.x) {
      float sum = 0.0f;
      for (int b = 0; b < B; ++b) sum += db[idx * B + b];
      const int g = idx / units;
      a.d_b[g * S + j0 + idx - g * units] = static_cast<scalar_t>(sum);
    }
  }
#endif
}

// The largest cluster (16 or 8 blocks) of Kernel's blocks at the most
// shared memory a block may have that `device` can run, or 0: none (compute
// capability below 9.0, or no such cluster fits). The probe's errors only
// mean "not supported" and are cleared.
template <auto Kernel>
int max_cluster(int32_t device) {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached];  // the answer + 1; 0: not asked yet
  const bool cached = device >= 0 && device < kCached;
  int n = cached ? cache[device].load(std::memory_order_relaxed) : 0;
  if (n > 0) return n - 1;
  int major = 0, size = 0;
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  const int smem = max_shared_bytes(device);
  if (major >= 9 && cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         smem) == cudaSuccess) {
    const bool wide = cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed,
                                           1) == cudaSuccess;
    for (int blocks = wide ? kMaxCluster : 8; blocks >= 8 && size == 0; blocks /= 2) {
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
      if (cudaOccupancyMaxActiveClusters(&clusters, Kernel, &config) == cudaSuccess && clusters > 0)
        size = blocks;
    }
  }
  (void)cudaGetLastError();
  if (cached) cache[device].store(size + 1, std::memory_order_relaxed);
  return size;
}

// The plan of one cluster of ceil(S / J) <= max_blocks blocks for a
// direction, or blocks = 0 where it does not apply (no cluster, a batch above
// kMaxBatch, more work a block than kClusterWork or more elements than
// threads, or more shared memory than a block has: W's slice and two
// buffers of the whole operand).
inline Plan cluster_plan(int64_t batch, int64_t S, bool backward, int max_blocks, int32_t device) {
  if (max_blocks < 2 || batch > kMaxBatch || S == 0 || batch == 0) return {};
  const int64_t K = backward ? 3 * S : S, J = (S + max_blocks - 1) / max_blocks;
  if (batch * 3 * S * J > kClusterWork || batch * J > kThreads) return {};
  Plan p;
  if (!layout(J, batch, K, backward, p)) return {};
  p.unit_groups = p.blocks = static_cast<int>((S + J - 1) / J);
  p.chunk = static_cast<int>(K);
  // the two mbarriers, W's slice, the two buffers, the state
  p.smem = static_cast<size_t>(16 + 4 * (p.ws + 2 * K * p.stride + state_floats(p, backward)));
  if (p.smem > static_cast<size_t>(max_shared_bytes(device))) return {};
  return p;
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
  config.gridDim = dim3(p.blocks);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = p.smem;
  config.stream = cuda::current_stream(device);
  config.attrs = &attr;
  config.numAttrs = 1;
  STD_CUDA_CHECK(cudaLaunchKernelEx(&config, Kernel, args));
}

}  // namespace kernforge::cuda_seq
