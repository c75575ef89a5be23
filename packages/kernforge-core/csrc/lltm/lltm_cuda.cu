// The LLTM cell on CUDA, in two shapes:
// - small problems, which are launch-bound: one kernel per direction does the
//   GEMMs and the gate math, reading h and x in place (no concatenated X);
// - the rest: cuBLAS GEMMs (torch::stable::matmul) around one fused
//   pointwise kernel per direction, the bias added inside the forward's.
// The per-element math is lltm_cell_forward / lltm_cell_backward, shared with
// the CPU.
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>

#include "common/cuda_utils.cuh"
#include "common/dispatch.h"
#include "common/elementwise_cuda.cuh"
#include "lltm/lltm_cuda_gates.cuh"
#include "lltm/lltm_math.h"

namespace kernforge {
namespace {

// ----------------------------------------------------------------------------
// Pointwise passes of the GEMM path.

using cuda_lltm::gates_backward_kernel;
using cuda_lltm::kThreads;
using cuda_lltm::pointwise_grid;
// Tiles of the transposing forward pass and of the small-problem kernels:
// blocks of kTile x kRows threads.
constexpr int kTile = 32, kRows = 8;

// The forward's GEMM is pre^T = W X^T ([3S, B]): cuBLAS runs that layout
// faster than X W^T (on the H100 at B, F, S = 1024, 512, 1024: a 128 x 128
// tile kernel, 232 us against 255 us). A block turns a 32 (s) x 32 (b) tile
// of each gate through shared memory, so that reading pre^T (along b) and
// writing gates, c' and h' (along s) are both coalesced.
template <class scalar_t>
__global__ void __launch_bounds__(kTile* kRows)
    gates_forward_kernel(const scalar_t* __restrict__ pre_t, const scalar_t* __restrict__ bias,
                         const scalar_t* __restrict__ c, scalar_t* __restrict__ gates,
                         scalar_t* __restrict__ c_new, scalar_t* __restrict__ h_new, int64_t batch,
                         int64_t S) {
  using acc_t = opmath_t<scalar_t>;
  __shared__ acc_t tile[3][kTile][kTile + 1];  // [gate][s][b]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t s0 = static_cast<int64_t>(blockIdx.x) * kTile, s = s0 + tx;
  for (int64_t b0 = static_cast<int64_t>(blockIdx.y) * kTile; b0 < batch;
       b0 += static_cast<int64_t>(gridDim.y) * kTile) {
#pragma unroll
    for (int g = 0; g < 3; ++g)
#pragma unroll
      for (int r = 0; r < kTile / kRows; ++r) {
        const int64_t sr = s0 + ty + r * kRows, b = b0 + tx;
        tile[g][ty + r * kRows][tx] =
            sr < S && b < batch ? static_cast<acc_t>(pre_t[(g * S + sr) * batch + b]) : acc_t(0);
      }
    __syncthreads();
    if (s < S) {
      const acc_t bias0 = static_cast<acc_t>(bias[s]), bias1 = static_cast<acc_t>(bias[S + s]),
                  bias2 = static_cast<acc_t>(bias[2 * S + s]);
#pragma unroll
      for (int r = 0; r < kTile / kRows; ++r) {
        const int64_t b = b0 + ty + r * kRows;
        if (b >= batch) break;
        acc_t i, o, z, cn, hn;
        lltm_cell_forward<acc_t>(
            tile[0][tx][ty + r * kRows] + bias0, tile[1][tx][ty + r * kRows] + bias1,
            tile[2][tx][ty + r * kRows] + bias2, static_cast<acc_t>(c[b * S + s]), i, o, z, cn, hn);
        scalar_t* gt = gates + b * 3 * S;
        gt[s] = static_cast<scalar_t>(i);
        gt[S + s] = static_cast<scalar_t>(o);
        gt[2 * S + s] = static_cast<scalar_t>(z);
        c_new[b * S + s] = static_cast<scalar_t>(cn);
        h_new[b * S + s] = static_cast<scalar_t>(hn);
      }
    }
    __syncthreads();
  }
}

void gates_forward(const LltmForward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const dim3 grid(static_cast<unsigned>((p.state + kTile - 1) / kTile),
                    static_cast<unsigned>(std::min<int64_t>((p.batch + kTile - 1) / kTile, 65535)));
    STD_TORCH_CHECK(grid.x == (p.state + kTile - 1) / kTile,
                    "kernforge::lltm: state size too large");
    gates_forward_kernel<scalar_t>
        <<<grid, dim3(kTile, kRows), 0, cuda::current_stream(p.pre.get_device_index())>>>(
            static_cast<const scalar_t*>(p.pre.data_ptr()),
            static_cast<const scalar_t*>(p.bias.data_ptr()),
            static_cast<const scalar_t*>(p.c.data_ptr()),
            static_cast<scalar_t*>(p.gates.data_ptr()), static_cast<scalar_t*>(p.c_new.data_ptr()),
            static_cast<scalar_t*>(p.h_new.data_ptr()), p.batch, p.state);
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

void gates_backward(const LltmBackward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    constexpr auto kernel = gates_backward_kernel<scalar_t>;
    const int32_t device = p.gates.get_device_index();
    kernel<<<pointwise_grid<kernel>(p.batch, p.state, device), kThreads, 0,
             cuda::current_stream(device)>>>(
        static_cast<const scalar_t*>(p.grad_h.t.data_ptr()),
        static_cast<const scalar_t*>(p.grad_c.t.data_ptr()), nullptr,
        static_cast<const scalar_t*>(p.gates.data_ptr()),
        static_cast<const scalar_t*>(p.c_new.data_ptr()),
        static_cast<scalar_t*>(p.d_gates.data_ptr()), static_cast<scalar_t*>(p.d_c.data_ptr()),
        p.grad_h.ld, p.grad_h.inc, p.grad_c.ld, p.grad_c.inc, 0, 0, p.batch, p.state);
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  });
}

// ----------------------------------------------------------------------------
// Small problems: GEMM and gates in one kernel per direction. Blocks of
// kTile x kRows threads walk the reduction in kTile-wide steps through shared
// memory (opmath values; the +1 column keeps transposed stores free of bank
// conflicts). Used where B * 3S * (S + F) is small, so the tiles are few and
// the one launch replaces a concatenation, a GEMM and a pointwise launch.

constexpr int64_t kSmallMacs = int64_t{1} << 22, kSmallDim = 2048;

bool small_problem(int64_t batch, int64_t features, int64_t state) {
  const int64_t K = state + features;
  return batch <= kSmallDim && 3 * state <= kSmallDim && K <= kSmallDim &&
         batch * 3 * state * K <= kSmallMacs;
}

// X[b, k] of X = [h, x], read in place.
template <class scalar_t>
__device__ inline scalar_t x_at(const scalar_t* h, const scalar_t* x, int64_t b, int64_t k,
                                int64_t S, int64_t F) {
  return k < S ? h[b * S + k] : x[b * F + (k - S)];
}

template <class scalar_t>
struct SmallForward {
  const scalar_t *x, *W, *bias, *h, *c;
  scalar_t *gates, *c_new, *h_new;
  int64_t B, F, S;
};

// Block (blockIdx.x, blockIdx.y) computes state indices s0 .. s0 + kTile of
// batch rows r0 .. r0 + kRows: three dot products of length S + F per thread.
template <class scalar_t>
__global__ void __launch_bounds__(kTile* kRows) forward_small_kernel(SmallForward<scalar_t> a) {
  using acc_t = opmath_t<scalar_t>;
  __shared__ acc_t w_tile[3][kTile][kTile + 1];  // [gate][k][s]
  __shared__ acc_t x_tile[kRows][kTile];         // [row][k]
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTile + tx;
  const int64_t S = a.S, K = a.S + a.F;
  const int64_t s0 = static_cast<int64_t>(blockIdx.x) * kTile, s = s0 + tx;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kRows + ty;
  acc_t acc0 = 0, acc1 = 0, acc2 = 0;
  for (int64_t k0 = 0; k0 < K; k0 += kTile) {
    for (int i = tid; i < 3 * kTile * kTile; i += kTile * kRows) {
      const int g = i / (kTile * kTile), r = (i / kTile) % kTile, kk = i % kTile;
      const int64_t sr = s0 + r, k = k0 + kk;
      w_tile[g][kk][r] = sr < S && k < K ? static_cast<acc_t>(a.W[(g * S + sr) * K + k]) : acc_t(0);
    }
    const int64_t k = k0 + tx;
    x_tile[ty][tx] =
        row < a.B && k < K ? static_cast<acc_t>(x_at(a.h, a.x, row, k, S, a.F)) : acc_t(0);
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < kTile; ++kk) {
      const acc_t xv = x_tile[ty][kk];
      acc0 += w_tile[0][kk][tx] * xv;
      acc1 += w_tile[1][kk][tx] * xv;
      acc2 += w_tile[2][kk][tx] * xv;
    }
    __syncthreads();
  }
  if (row >= a.B || s >= S) return;
  acc_t i, o, z, cn, hn;
  lltm_cell_forward<acc_t>(acc0 + static_cast<acc_t>(a.bias[s]),
                           acc1 + static_cast<acc_t>(a.bias[S + s]),
                           acc2 + static_cast<acc_t>(a.bias[2 * S + s]),
                           static_cast<acc_t>(a.c[row * S + s]), i, o, z, cn, hn);
  scalar_t* g = a.gates + row * 3 * S;
  g[s] = static_cast<scalar_t>(i);
  g[S + s] = static_cast<scalar_t>(o);
  g[2 * S + s] = static_cast<scalar_t>(z);
  a.c_new[row * S + s] = static_cast<scalar_t>(cn);
  a.h_new[row * S + s] = static_cast<scalar_t>(hn);
}

// d_X holds columns [k_lo, k_hi) of [d_h, d_x] (width k_hi - k_lo); d_W and
// d_b are null where not asked for.
template <class scalar_t>
struct SmallBackward {
  const scalar_t *grad_h, *grad_c, *gates, *c_new, *x, *W, *h;
  scalar_t *d_X, *d_W, *d_b, *d_c;
  int64_t ld_grad_h, inc_grad_h, ld_grad_c, inc_grad_c, B, F, S, k_lo, k_hi;
};

// d_gates[b, j], j = g * S + s, recomputed from the saved gates wherever a
// tile needs it (cheaper than a pass through memory at these sizes); the
// cell gradient of (b, s) goes to *dc.
template <class scalar_t, class acc_t = opmath_t<scalar_t>>
__device__ inline acc_t d_gate(const SmallBackward<scalar_t>& a, int64_t b, int64_t j, acc_t& dc) {
  const int64_t S = a.S, g = j / S, s = j - g * S;
  const scalar_t* gt = a.gates + b * 3 * S;
  acc_t d0, d1, d2;
  lltm_cell_backward<acc_t>(static_cast<acc_t>(a.grad_h[b * a.ld_grad_h + s * a.inc_grad_h]),
                            static_cast<acc_t>(a.grad_c[b * a.ld_grad_c + s * a.inc_grad_c]),
                            static_cast<acc_t>(gt[s]), static_cast<acc_t>(gt[S + s]),
                            static_cast<acc_t>(gt[2 * S + s]),
                            static_cast<acc_t>(a.c_new[b * S + s]), d0, d1, d2, dc);
  return g == 0 ? d0 : (g == 1 ? d1 : d2);
}

// One launch, two kinds of block. The first w_blocks compute a 32 x 32 tile
// of d_W = d_gates^T X (rows j, columns k; w_k_tiles tiles along k), stepping
// over the batch 8 rows at a time, and with it d_b = column sums of d_gates
// (the k = 0 tiles); with d_W not asked for, only those. The others
// (x_k_tiles along k, at least one) compute an 8 x 32 tile of d_X = d_gates W
// (rows b, columns k in [k_lo, k_hi)), stepping over j, and the first tile of
// each row block writes d_c.
template <class scalar_t>
__global__ void __launch_bounds__(kTile* kRows)
    backward_small_kernel(SmallBackward<scalar_t> a, int64_t w_blocks, int64_t w_k_tiles,
                          int64_t x_k_tiles) {
  using acc_t = opmath_t<scalar_t>;
  __shared__ acc_t dg_tile[kRows][kTile + 1];  // [b][j]
  __shared__ acc_t v_tile[kTile][kTile + 1];   // X rows [b][k] or W rows [j][k]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t S = a.S, F = a.F, K = S + F, J = 3 * S;
  const int64_t block = blockIdx.x;
  acc_t dc;
  if (block < w_blocks) {
    const int64_t k0 = (block % w_k_tiles) * kTile, k = k0 + tx;
    const int64_t j0 = (block / w_k_tiles) * kTile;
    constexpr int kPer = kTile / kRows;  // rows j of the tile per thread
    acc_t acc[kPer] = {}, bsum[kPer] = {};
    const bool bias_tile = a.d_b && k0 == 0 && tx == 0;
    for (int64_t b0 = 0; b0 < a.B; b0 += kRows) {
      const int64_t b = b0 + ty, j = j0 + tx;
      dg_tile[ty][tx] = b < a.B && j < J ? d_gate(a, b, j, dc) : acc_t(0);
      v_tile[ty][tx] = b < a.B && k < K ? static_cast<acc_t>(x_at(a.h, a.x, b, k, S, F)) : acc_t(0);
      __syncthreads();
#pragma unroll
      for (int bb = 0; bb < kRows; ++bb) {
        const acc_t xv = v_tile[bb][tx];
#pragma unroll
        for (int r = 0; r < kPer; ++r) {
          const acc_t d = dg_tile[bb][ty + r * kRows];
          acc[r] += d * xv;
          if (bias_tile) bsum[r] += d;
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < kPer; ++r) {
      const int64_t j = j0 + ty + r * kRows;
      if (j >= J) break;
      if (a.d_W && k < K) a.d_W[j * K + k] = static_cast<scalar_t>(acc[r]);
      if (bias_tile) a.d_b[j] = static_cast<scalar_t>(bsum[r]);
    }
    return;
  }
  const int64_t tile = block - w_blocks, width = a.k_hi - a.k_lo;
  const int64_t k_off = (tile % x_k_tiles) * kTile + tx, k = a.k_lo + k_off;
  const bool k_ok = k_off < width;
  const int64_t b = (tile / x_k_tiles) * kRows + ty;
  const bool writes_dc = tile % x_k_tiles == 0 && b < a.B;
  acc_t acc = 0;
  for (int64_t j0 = 0; j0 < J; j0 += kTile) {
    const int64_t j = j0 + tx;
    if (b < a.B && j < J) {
      dg_tile[ty][tx] = d_gate(a, b, j, dc);
      if (writes_dc && j < S) a.d_c[b * S + j] = static_cast<scalar_t>(dc);
    } else {
      dg_tile[ty][tx] = 0;
    }
    if (width > 0) {
#pragma unroll
      for (int r = 0; r < kTile / kRows; ++r) {
        const int64_t jr = j0 + ty + r * kRows;
        v_tile[ty + r * kRows][tx] =
            jr < J && k_ok ? static_cast<acc_t>(a.W[jr * K + k]) : acc_t(0);
      }
    }
    __syncthreads();
    if (width > 0) {
#pragma unroll 8
      for (int jj = 0; jj < kTile; ++jj) acc += dg_tile[ty][jj] * v_tile[jj][tx];
    }
    __syncthreads();
  }
  if (b < a.B && k_ok) a.d_X[b * width + k_off] = static_cast<scalar_t>(acc);
}

template <class T>
const T* ptr(const Tensor& t) {
  return static_cast<const T*>(t.data_ptr());
}
template <class T>
T* mut_ptr(const Tensor& t) {
  return static_cast<T*>(t.data_ptr());
}

std::tuple<Tensor, Tensor, Tensor> lltm_forward_cuda(const Tensor& x, const Tensor& W,
                                                     const Tensor& b, const Tensor& h,
                                                     const Tensor& c) {
  const ScalarType dtype = detail::check_lltm(x, W, b, h, c);
  cuda::Launcher::Guard guard(x);
  const int64_t batch = x.size(0), features = x.size(1), state = h.size(1);
  if (!small_problem(batch, features, state))
    return lltm_forward_gemm<gates_forward, true>(x, W, b, h, c, dtype);
  const Tensor gates = empty(x, {batch, 3 * state});
  const Tensor c_new = empty(x, {batch, state});
  const Tensor h_new = empty(x, {batch, state});
  if (batch * state == 0) return {h_new, c_new, gates};
  const Tensor xc = detail::contiguous(x), Wc = detail::contiguous(W), bc = detail::contiguous(b),
               hc = detail::contiguous(h), cc = detail::contiguous(c);
  dispatch<Dtypes::Floating>(dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const SmallForward<scalar_t> a{ptr<scalar_t>(xc),
                                   ptr<scalar_t>(Wc),
                                   ptr<scalar_t>(bc),
                                   ptr<scalar_t>(hc),
                                   ptr<scalar_t>(cc),
                                   mut_ptr<scalar_t>(gates),
                                   mut_ptr<scalar_t>(c_new),
                                   mut_ptr<scalar_t>(h_new),
                                   batch,
                                   features,
                                   state};
    const dim3 grid(static_cast<unsigned>((state + kTile - 1) / kTile),
                    static_cast<unsigned>((batch + kRows - 1) / kRows));
    forward_small_kernel<scalar_t>
        <<<grid, dim3(kTile, kRows), 0, cuda::current_stream(x.get_device_index())>>>(a);
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {h_new, c_new, gates};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> lltm_backward_cuda(
    const Tensor& grad_h, const Tensor& grad_c, const Tensor& x, const Tensor& W, const Tensor& h,
    const Tensor& c_new, const Tensor& gates, std::vector<bool> output_mask) {
  const ScalarType dtype =
      detail::check_lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, output_mask);
  const LltmGrads g = detail::grads(output_mask);
  cuda::Launcher::Guard guard(x);
  const int64_t batch = h.size(0), state = h.size(1), features = x.size(1);
  if (!small_problem(batch, features, state))
    return lltm_backward_gemm<gates_backward>(grad_h, grad_c, x, W, h, c_new, gates, g, dtype);
  const int64_t K = state + features, k_tiles = (K + kTile - 1) / kTile;
  const int64_t k_lo = g.lo(state), k_hi = std::max(k_lo, g.hi(state, K));
  const Tensor d_X = empty(x, {batch, k_hi - k_lo});
  const Tensor d_W = g.W ? empty(x, {3 * state, K}) : empty(x, {0});
  const Tensor d_b = g.b ? empty(x, {3 * state}) : empty(x, {0});
  const Tensor d_c = empty(x, {batch, state});
  // d_W and d_b are written (zeros) even for an empty batch.
  const int64_t w_k_tiles = g.W ? k_tiles : 1;
  const int64_t w_blocks = g.W || g.b ? (3 * state + kTile - 1) / kTile * w_k_tiles : 0;
  const int64_t x_k_tiles = std::max<int64_t>(1, (k_hi - k_lo + kTile - 1) / kTile);
  const int64_t blocks = w_blocks + (batch + kRows - 1) / kRows * x_k_tiles;
  if (blocks == 0) return {d_X, d_W, d_b, d_c};
  const RowView gh = detail::rows(grad_h), gc = detail::rows(grad_c);
  const Tensor gtc = detail::contiguous(gates), cnc = detail::contiguous(c_new),
               xc = detail::contiguous(x), Wc = detail::contiguous(W), hc = detail::contiguous(h);
  dispatch<Dtypes::Floating>(dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const SmallBackward<scalar_t> a{ptr<scalar_t>(gh.t),
                                    ptr<scalar_t>(gc.t),
                                    ptr<scalar_t>(gtc),
                                    ptr<scalar_t>(cnc),
                                    ptr<scalar_t>(xc),
                                    ptr<scalar_t>(Wc),
                                    ptr<scalar_t>(hc),
                                    mut_ptr<scalar_t>(d_X),
                                    g.W ? mut_ptr<scalar_t>(d_W) : nullptr,
                                    g.b ? mut_ptr<scalar_t>(d_b) : nullptr,
                                    mut_ptr<scalar_t>(d_c),
                                    gh.ld,
                                    gh.inc,
                                    gc.ld,
                                    gc.inc,
                                    batch,
                                    features,
                                    state,
                                    k_lo,
                                    k_hi};
    backward_small_kernel<scalar_t>
        <<<static_cast<unsigned>(blocks), dim3(kTile, kRows), 0,
           cuda::current_stream(x.get_device_index())>>>(a, w_blocks, w_k_tiles, x_k_tiles);
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  });
  return {d_X, d_W, d_b, d_c};
}

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CUDA, m) {
  m.impl("lltm_forward", TORCH_BOX(&kernforge::lltm_forward_cuda));
  m.impl("lltm_backward", TORCH_BOX(&kernforge::lltm_backward_cuda));
}
