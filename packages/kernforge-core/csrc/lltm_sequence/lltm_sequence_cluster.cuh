// The recurrence of a small LLTM sequence as one thread-block cluster
// (compute capability 9.0 and up): up to 16 blocks, each owning the hidden
// units [j0, j0 + J) of every batch row with its slice of W_h in shared
// memory, as in lltm_sequence_persistent.cuh. What a step produces for the
// next (h_t forward, d_gates_t backward) is written straight into every
// block's shared memory (distributed shared memory) and the cluster
// synchronizes in hardware, so a step makes no round trip to L2 and no
// grid-wide barrier: a step costs about what its arithmetic costs.
//   forward,  step t:  pre = P_t + b + h_{t-1} W_h^T   (its 3J columns, h_{t-1} local)
//                      -> gates_t, c_t, h_t; h_t to every block
//   backward, step t:  d_gates_t, d_c from g_t, d_c     (its J units); d_gates_t to every block
//                      g_{t-1} = grad_output_{t-1} + d_gates_t W_h  (its J columns, local)
// The operand a step reads is double-buffered by the step's parity: a block
// writes buffer (t + 1) & 1 of the others while they read t & 1, and the
// one cluster barrier a step orders the two.
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
// The cluster barrier in two halves: what a thread does between arriving
// and waiting (its global stores, the next step's loads) overlaps the
// others' arrival; the release orders its shared-memory writes into other
// blocks before their wait returns.
__device__ inline void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ inline void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Copies `parts` runs of n floats (n a multiple of 4, 16-byte aligned),
// `pitch` floats apart from `from`, to the same place in every other block
// of the cluster: consecutive threads store consecutive float4s of a block.
__device__ inline void broadcast(const cooperative_groups::cluster_group& cluster, float* from,
                                 int n, int parts, int pitch, int blocks) {
  const int self = static_cast<int>(cluster.block_rank()), quads = n / 4;
  const int per_block = parts * quads;
  for (int idx = threadIdx.x; idx < per_block * (blocks - 1); idx += blockDim.x) {
    const int r = idx / per_block, q = idx - r * per_block, part = q / quads;
    float* src = from + part * pitch + (q - part * quads) * 4;
    *reinterpret_cast<float4*>(cluster.map_shared_rank(src, r + (r >= self))) =
        *reinterpret_cast<const float4*>(src);
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
  const int J = p.units, B = a.batch, S = a.S;
  const int j0 = static_cast<int>(cluster.block_rank()) * J, units = min(J, S - j0);
  float* ws = reinterpret_cast<float*>(smem4);  // [3J][kp]
  float* hb = ws + p.ws;                        // [2][S][stride]: h_{t-1}, transposed
  float* pre = hb + 2 * S * p.stride;           // [3][J][B]
  load_forward_weights(ws, a.W, a.ldw, S, j0, units, p);
  // h0 into buffer 0; both buffers' padding rows (b >= B) zero for good.
  for (int idx = threadIdx.x; idx < S * p.stride; idx += blockDim.x) {
    const int k = idx / p.stride, b = idx - k * p.stride;
    hb[idx] = b < B ? static_cast<float>(a.h0[b * S + k]) : 0.0f;
    hb[S * p.stride + idx] = 0.0f;
  }
  const int item = threadIdx.x / p.lanes, lane = threadIdx.x % p.lanes;
  const int jt = item % J, b0 = item / J * kRows;
  // One element (b, j) a thread (the plan makes sure), j fastest, its cell
  // in a register; its next input loads while the cluster synchronizes.
  const bool owner = static_cast<int>(threadIdx.x) < units * B;
  const int ob = threadIdx.x / units, oj = threadIdx.x % units;
  float c = owner ? a.c0[ob * S + j0 + oj] : 0.0f;
  float in[3] = {0.0f, 0.0f, 0.0f};
  if (owner) step_input(a, 0, ob, j0 + oj, in);
  cluster.sync();  // every block runs and is set up before any writes into it
  for (int t = 0; t < a.T; ++t) {
    float acc[3][kRows] = {};
    accumulate<3>(ws, hb + (t & 1) * S * p.stride, 0, S, B, p, acc);
    reduce_lanes<3>(p, acc);
    if (lane == 0 && b0 < B)
#pragma unroll
      for (int g = 0; g < 3; ++g)
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          if (b0 + r < B) pre[(g * J + jt) * B + b0 + r] = acc[g][r];
    __syncthreads();
    const bool send = t + 1 < a.T;
    float* next = hb + ((t + 1) & 1) * S * p.stride;
    ForwardElement e{};
    if (owner) {
      e = gate_forward<scalar_t>(in[0] + pre[oj * B + ob], in[1] + pre[(J + oj) * B + ob],
                                 in[2] + pre[(2 * J + oj) * B + ob], c);
      c = e.c;
      next[(j0 + oj) * p.stride + ob] = e.h;
    }
    if (send) {
      __syncthreads();  // the block's rows of h_t are complete
      broadcast(cluster, next + j0 * p.stride, units * p.stride, 1, 0, p.blocks);
      cluster_arrive();
    }
    if (owner) {
      store_forward(a, t, ob, j0 + oj, e);
      if (send) step_input(a, t + 1, ob, j0 + oj, in);
    }
    if (send) cluster_wait();  // h_t is in every block; pre is free again
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
  const int J = p.units, B = a.batch, S = a.S;
  const int j0 = static_cast<int>(cluster.block_rank()) * J, units = min(J, S - j0);
  float* ws = reinterpret_cast<float*>(smem4);  // [J][kp]: W_h's columns, transposed
  float* db = ws + p.ws;                        // [2][3S][stride]: d_gates_t, transposed
  float* dh = db + 2 * 3 * S * p.stride;        // [J][B]
  load_backward_weights(ws, a.W, a.ldw, S, j0, units, p);
  for (int idx = threadIdx.x; idx < 2 * 3 * S * p.stride; idx += blockDim.x) db[idx] = 0.0f;
  const int item = threadIdx.x / p.lanes, lane = threadIdx.x % p.lanes;
  const int jt = item % J, b0 = item / J * kRows;
  // One element (b, j) a thread (the plan makes sure), j fastest, the cell's
  // gradient in a register; the next step's saved values load while the
  // cluster synchronizes.
  const bool owner = static_cast<int>(threadIdx.x) < units * B;
  const int ob = threadIdx.x / units, oj = threadIdx.x % units;
  float dc = 0.0f, in[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (owner) {
    dh[oj * B + ob] = step_grad_output(a, a.T - 1, ob, j0 + oj);
    dc = a.grad_cn ? a.grad_cn[ob * S + j0 + oj] : 0.0f;
    step_saved(a, a.T - 1, ob, j0 + oj, in);
  }
  cluster.sync();  // every block runs and is set up before any writes into it
  for (int t = a.T - 1; t >= 0; --t) {
    const bool send = t > 0 || a.d_h0;
    float* here = db + (t & 1) * 3 * S * p.stride;
    BackwardElement e{};
    if (owner) {
      e = gate_backward<scalar_t>(dh[oj * B + ob], dc, in);
      dc = e.dc;
#pragma unroll
      for (int g = 0; g < 3; ++g) here[(g * S + j0 + oj) * p.stride + ob] = e.d[g];
    }
    if (send) {
      __syncthreads();  // the block's columns of d_gates_t are complete
      broadcast(cluster, here + j0 * p.stride, units * p.stride, 3, S * p.stride, p.blocks);
      cluster_arrive();
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
    cluster_wait();  // d_gates_t is in every block
    float acc[1][kRows] = {};
    accumulate<1>(ws, here, 0, 3 * S, B, p, acc);
    reduce_lanes<1>(p, acc);
    if (lane == 0 && jt < units)
#pragma unroll
      for (int r = 0; r < kRows; ++r)
        if (b0 + r < B) dh[jt * B + b0 + r] = acc[0][r] + go[r];
    __syncthreads();  // dh is complete
  }
  if (owner) {
    a.d_c0[ob * S + j0 + oj] = dc;
    if (a.d_h0) a.d_h0[ob * S + j0 + oj] = static_cast<scalar_t>(dh[oj * B + ob]);
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
  p.smem = static_cast<size_t>(4 * (p.ws + 2 * K * p.stride + state_floats(p, backward)));
  if (p.smem > static_cast<size_t>(max_shared_bytes(device))) return {};
  return p;
}

template <auto Kernel, class Args>
void launch_cluster(const Args& args, int32_t device) {
  const Plan& p = args.plan;
  STD_CUDA_CHECK(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(p.smem)));
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
