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
// A step of more rows is a GEMM tile with the cell as its epilogue (below).
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
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

// Row b, hidden unit j of a step from its gates' pre-activations (bias
// included): the cell, and every output the step asks for.
template <class scalar_t, class acc_t>
__device__ inline void token_cell(const TokenArgs<scalar_t>& a, int b, int j,
                                  const acc_t (&pre)[3]) {
  const int S = a.S;
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
  token_cell(a, b, j, pre);
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

// A step of more rows (kTokenMaxBatch < B <= kTileMaxBatch, T = 1) as a GEMM
// tile: gates' pre-activations [B, 3S] = [h0 | x] [B, K] times W^T, K = S + F,
// with the cell as the tile's epilogue, in one launch. A block owns kTileRows
// rows and kTileUnits hidden units (their rows j, S + j and 2S + j of W). It
// copies kTileK columns of [h0 | x] and of those rows of W at a time into
// shared memory, kTileStages chunks in flight, since the kernel waits on
// memory more than it multiplies. Each of its kTileGroups groups of 128
// threads sums a share of a chunk's columns, each thread 4 rows x 2 units x 3
// gates in registers. So a block reads [h0 | x] once for kTileUnits units,
// where the token kernel's blocks read it once a unit. Where the tiles alone
// would leave SMs idle (a decoder's batch of 64 at S = 640 makes 40 tiles), a
// cluster of `split` blocks shares one tile, each summing a part of K, and
// the parts meet in the cluster's shared memory (compute capability 9.0 up).
constexpr int kTileGroups = 2;
constexpr int kTileThreads = 128 * kTileGroups;
constexpr int kTileRows = 64;
constexpr int kTileUnits = 16;
constexpr int kTileK = 32;
constexpr int kTileStride = kTileK + 4;  // a staged row's values: rows 4 banks apart (float)
constexpr int kTileStages = 3;
constexpr int kTileMaxSplit = 8;  // the portable cluster's blocks
constexpr int64_t kTileMaxBatch = 128;

// Whether a step of `batch` rows takes tile_forward_kernel (given 4 values a
// load: token_vectorizes, and the work below).
inline bool tile_fits(int64_t steps, int64_t batch) {
  return steps == 1 && batch > kTokenMaxBatch && batch <= kTileMaxBatch;
}

// A step's multiply-adds as tiles: rows rounded up to whole tiles x 3S x K.
inline double tile_work(int64_t batch, int64_t S, int64_t K) {
  return static_cast<double>((batch + kTileRows - 1) / kTileRows * kTileRows) *
         static_cast<double>(3 * S) * static_cast<double>(K);
}

// The most work a half or bfloat16 step's tiles take: the tile kernel sums
// on CUDA cores, the persistent kernels' products run on tensor cores. On an
// H200, eagerly, at S = F = 1024 and 128 rows (805 M multiply-adds) the tiles
// took 112 us against 58 to 91; at 768 and 128 rows (453 M) 68 against 87
// to 94. A float32 step of up to 128 rows is always tiles: eagerly the
// persistent kernels' one step cost more host time than the tiles' whole
// step (S = 768, 128 rows: 147 us against 57), though replayed from a graph
// they were faster there (44 against 53).
constexpr double kTile16MaxWork = 6e8;

template <class scalar_t>
struct TileStage {
  scalar_t x[kTileRows][kTileStride];       // [h0 | x]'s rows, kTileK columns
  scalar_t w[3 * kTileUnits][kTileStride];  // gate g's unit u at row g kTileUnits + u
};

// Bytes of shared memory from global memory without the registers, zeros
// where !valid (src then unread); asynchronous from compute capability 8.0,
// to be waited for by tile_wait.
template <int Bytes>
__device__ inline void tile_copy(void* dst, const void* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const auto to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(to), "l"(src), "n"(Bytes),
               "r"(valid ? Bytes : 0));
#else
  using W = cuda::Packet<Bytes / 4, float>;
  *static_cast<W*>(dst) = valid ? *static_cast<const W*>(src) : W{};
#endif
}

__device__ inline void tile_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `Pending` of this thread's committed copies are in flight.
template <int Pending>
__device__ inline void tile_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
#endif
}

template <class scalar_t>
__device__ inline float4 to_float4(const cuda::Packet<4, scalar_t>& v) {
  return make_float4(static_cast<float>(v.v[0]), static_cast<float>(v.v[1]),
                     static_cast<float>(v.v[2]), static_cast<float>(v.v[3]));
}

template <class scalar_t>
__global__ void __launch_bounds__(kTileThreads)
    tile_forward_kernel(TokenArgs<scalar_t> a, int split) {
  using P = cuda::Packet<kTokenVector, scalar_t>;
  using Stage = TileStage<scalar_t>;
  constexpr int kPackets = kTileK / kTokenVector;  // of a staged row
  constexpr int kPacketsX = kTileRows * kPackets, kPacketsW = 3 * kTileUnits * kPackets;
  constexpr int kPairs = kTileRows * kTileUnits;  // (row, unit) pairs of a tile
  constexpr size_t kSums = kTileGroups * kPairs * 3 * sizeof(float);
  constexpr size_t kBytes = std::max(kTileStages * sizeof(Stage), kSums);
  __shared__ __align__(16) unsigned char smem[kBytes];
  Stage* stage = reinterpret_cast<Stage*>(smem);

  const int S = a.S, F = a.F, t = threadIdx.x;
  const int rank = blockIdx.x % split;
  const int j0 = blockIdx.x / split * kTileUnits, b0 = blockIdx.y * kTileRows;
  // K's columns from k_first (h0 absent: W_x's alone), kTileK a chunk; this
  // block's chunks [c_first, c_last).
  const int k_first = a.h0 ? 0 : S, K = S + F;
  const int chunks = (K - k_first + kTileK - 1) / kTileK;
  const int c_first = chunks * rank / split, c_last = chunks * (rank + 1) / split;

  // Chunk c's copies into its stage, one group of copies (none past c_last).
  const auto copy = [&](int c) {
    if (c < c_last) {
      Stage& st = stage[(c - c_first) % kTileStages];
      const int k_chunk = k_first + c * kTileK;
      for (int q = t; q < kPacketsX; q += kTileThreads) {
        const int b = b0 + q / kPackets, k = k_chunk + q % kPackets * 4;
        const bool valid = b < a.batch && k < K;
        const scalar_t* src = !valid  ? a.W
                              : k < S ? a.h0 + static_cast<int64_t>(b) * S + k
                                      : a.x + static_cast<int64_t>(b) * F + (k - S);
        tile_copy<sizeof(P)>(&st.x[q / kPackets][q % kPackets * 4], src, valid);
      }
      for (int q = t; q < kPacketsW; q += kTileThreads) {
        const int n = q / kPackets, j = j0 + n % kTileUnits, k = k_chunk + q % kPackets * 4;
        const bool valid = j < S && k < K;
        const scalar_t* src =
            valid ? a.W + (static_cast<int64_t>(n / kTileUnits) * S + j) * a.ldw + k : a.W;
        tile_copy<sizeof(P)>(&st.w[n][q % kPackets * 4], src, valid);
      }
    }
    tile_commit();
  };

  // This thread's group sums columns [k_group, k_group + kTileK / kTileGroups)
  // of each chunk, for rows tr + 16 r (r < 4) and units 2 tu + u (u < 2): a
  // warp reads 16 rows of x and 2 of W a load.
  const int group = t / 128, tr = t % 16, tu = t % 128 / 16;
  constexpr int kGroupK = kTileK / kTileGroups;
  const int k_group = group * kGroupK;
  float acc[4][2][3] = {};
#pragma unroll
  for (int c = 0; c < kTileStages - 1; ++c) copy(c_first + c);
  for (int c = c_first; c < c_last; ++c) {
    tile_wait<kTileStages - 2>();  // this thread's copies of chunk c
    // Everyone's copies of chunk c landed, and chunk c - 1's products ended:
    // its stage takes chunk c + kTileStages - 1.
    __syncthreads();
    copy(c + kTileStages - 1);
    const Stage& st = stage[(c - c_first) % kTileStages];
#pragma unroll
    for (int k = k_group; k < k_group + kGroupK; k += 4) {
      float4 xv[4], wv[2][3];
#pragma unroll
      for (int r = 0; r < 4; ++r)
        xv[r] = to_float4(*reinterpret_cast<const P*>(&st.x[tr + 16 * r][k]));
#pragma unroll
      for (int u = 0; u < 2; ++u)
#pragma unroll
        for (int g = 0; g < 3; ++g)
          wv[u][g] = to_float4(*reinterpret_cast<const P*>(&st.w[g * kTileUnits + 2 * tu + u][k]));
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int u = 0; u < 2; ++u)
#pragma unroll
          for (int g = 0; g < 3; ++g) {
            float& s = acc[r][u][g];
            s = fmaf(xv[r].x, wv[u][g].x, s);
            s = fmaf(xv[r].y, wv[u][g].y, s);
            s = fmaf(xv[r].z, wv[u][g].z, s);
            s = fmaf(xv[r].w, wv[u][g].w, s);
          }
    }
  }

  // Each group's sums into shared memory (the stages' memory: every thread
  // is past its last chunk, no copy in flight), as [group][gate][row][unit].
  tile_wait<0>();
  __syncthreads();
  float* sums = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int u = 0; u < 2; ++u)
#pragma unroll
      for (int g = 0; g < 3; ++g)
        sums[(group * 3 + g) * kPairs + (tr + 16 * r) * kTileUnits + 2 * tu + u] = acc[r][u][g];
  // The cells: this block's share of the tile's (row, unit) pairs, each
  // summing the cluster's parts in rank order.
  const auto cells = [&](const auto& part) {
    for (int p = rank * kTileThreads + t; p < kPairs; p += split * kTileThreads) {
      const int b = b0 + p / kTileUnits, j = j0 + p % kTileUnits;
      if (b >= a.batch || j >= S) continue;
      float pre[3];
#pragma unroll
      for (int g = 0; g < 3; ++g) pre[g] = static_cast<float>(a.bias[g * S + j]);
      for (int s = 0; s < split; ++s) {
        const float* ps = part(s);
#pragma unroll
        for (int q = 0; q < kTileGroups; ++q)
#pragma unroll
          for (int g = 0; g < 3; ++g) pre[g] += ps[(q * 3 + g) * kPairs + p];
      }
      token_cell(a, b, j, pre);
    }
  };
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every block's sums stored
    cells([&](int s) { return static_cast<const float*>(cluster.map_shared_rank(sums, s)); });
    cluster.sync();  // every block's sums read before any block exits
    return;
  }
#endif
  __syncthreads();
  cells([&](int) { return static_cast<const float*>(sums); });
}

// The blocks a tile's K splits over: as many as the device holds at once for
// `tiles` tiles (the kernel is bound by its warps' latency: more warps an SM
// keep it busier), up to kTileMaxSplit and the chunks; 1 where the kernel was
// built for a device without clusters.
template <class scalar_t>
int tile_split(int64_t tiles, int chunks, int32_t device) {
  constexpr auto kernel = tile_forward_kernel<scalar_t>;
  if (cuda::binary_version<kernel>(device) < 90) return 1;
  const int64_t resident = cuda::resident_blocks<kernel>(kTileThreads, 0, device);
  return static_cast<int>(
      std::clamp<int64_t>(resident / tiles, 1, std::min(kTileMaxSplit, chunks)));
}

// One launch for a step of kTokenMaxBatch < a.batch <= kTileMaxBatch rows
// (token_vectorizes(a)).
template <class scalar_t>
void launch_tile(const TokenArgs<scalar_t>& a, int32_t device) {
  const int64_t units = (a.S + kTileUnits - 1) / kTileUnits;
  const int64_t rows = (a.batch + kTileRows - 1) / kTileRows;
  const int chunks = (a.S * (a.h0 != nullptr) + a.F + kTileK - 1) / kTileK;
  const int split = tile_split<scalar_t>(units * rows, chunks, device);
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = split;
  attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(units * split), static_cast<unsigned>(rows));
  config.blockDim = dim3(kTileThreads);
  config.stream = cuda::current_stream(device);
  config.attrs = &attr;
  config.numAttrs = split > 1 ? 1 : 0;
  STD_CUDA_CHECK(cudaLaunchKernelEx(&config, tile_forward_kernel<scalar_t>, a, split));
}

}  // namespace kernforge::cuda_seq
