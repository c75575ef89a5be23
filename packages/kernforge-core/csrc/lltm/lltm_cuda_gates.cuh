// The CUDA backward gate pass of the LLTM cell, shared by the cell
// (lltm_cuda.cu) and the sequence (lltm_sequence/lltm_sequence_cuda.cu).
// cell_t is the type of the cell state c and its gradient: scalar_t for the
// cell, float for a half / bfloat16 sequence (its state stays in float).
#pragma once

#include <algorithm>

#include "common/cuda_utils.cuh"
#include "common/dispatch.h"
#include "lltm/lltm_math.h"

namespace kernforge::cuda_lltm {

constexpr int kThreads = cuda::kThreads;

// Grid (ceil(S / kThreads), rows): a thread owns one state index s and a
// strided set of batch rows; every access is coalesced along s. The
// gradient of h is grad_h plus, where not null, grad_out (the sequence's
// grad_output at the step); a null grad_h or grad_c is zero. Each gradient
// is read at [b * ld + s * inc] (inc 0: one value a row).
template <class scalar_t, class cell_t = scalar_t>
__global__ void __launch_bounds__(kThreads)
    gates_backward_kernel(const scalar_t* __restrict__ grad_h, const cell_t* __restrict__ grad_c,
                          const scalar_t* __restrict__ grad_out, const scalar_t* __restrict__ gates,
                          const cell_t* __restrict__ c_new, scalar_t* __restrict__ d_gates,
                          cell_t* __restrict__ d_c, int64_t ld_grad_h, int64_t inc_grad_h,
                          int64_t ld_grad_c, int64_t inc_grad_c, int64_t ld_grad_out,
                          int64_t inc_grad_out, int64_t batch, int64_t S) {
  using acc_t = opmath_t<scalar_t>;
  const int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= S) return;
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const scalar_t* g = gates + b * 3 * S;
    acc_t gh = grad_h ? static_cast<acc_t>(grad_h[b * ld_grad_h + s * inc_grad_h]) : acc_t(0);
    if (grad_out) gh += static_cast<acc_t>(grad_out[b * ld_grad_out + s * inc_grad_out]);
    const acc_t gc = grad_c ? static_cast<acc_t>(grad_c[b * ld_grad_c + s * inc_grad_c]) : acc_t(0);
    acc_t d0, d1, d2, dc;
    lltm_cell_backward<acc_t>(gh, gc, static_cast<acc_t>(g[s]), static_cast<acc_t>(g[S + s]),
                              static_cast<acc_t>(g[2 * S + s]),
                              static_cast<acc_t>(c_new[b * S + s]), d0, d1, d2, dc);
    scalar_t* d = d_gates + b * 3 * S;
    d[s] = static_cast<scalar_t>(d0);
    d[S + s] = static_cast<scalar_t>(d1);
    d[2 * S + s] = static_cast<scalar_t>(d2);
    d_c[b * S + s] = static_cast<cell_t>(dc);
  }
}

// Rows per launch: one wave of blocks over the S columns.
template <auto Kernel>
dim3 pointwise_grid(int64_t batch, int64_t S, int32_t device) {
  const int64_t cols = (S + kThreads - 1) / kThreads;
  const int64_t wave = cuda::resident_blocks<Kernel>(kThreads, 0, device);
  const int64_t rows = std::clamp<int64_t>(std::max<int64_t>(1, wave / cols), 1, batch);
  STD_TORCH_CHECK(cols <= 0x7fffffff, "kernforge::lltm: state size too large");
  return dim3(static_cast<unsigned>(cols), static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
}

}  // namespace kernforge::cuda_lltm
