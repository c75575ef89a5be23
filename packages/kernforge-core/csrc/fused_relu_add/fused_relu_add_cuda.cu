#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>

#include "common/elementwise_cuda.cuh"
#include "fused_relu_add/fused_relu_add_math.h"

namespace kernforge {
namespace {

using cuda::Pack;

// Pass 1 over a [rows, cols] problem: each thread owns VEC adjacent columns
// and a strided set of rows; it writes grad_x and keeps the column sums of
// grad in registers. The block then adds its threadIdx.y sums in shared
// memory and writes one row of `partial` ([gridDim.y, cols], opmath).
template <class scalar_t, int VEC>
__global__ void backward_with_bias_kernel(const scalar_t* __restrict__ grad,
                                          const scalar_t* __restrict__ x,
                                          scalar_t* __restrict__ grad_x,
                                          opmath_t<scalar_t>* __restrict__ partial, int64_t rows,
                                          int64_t cols) {
  using acc_t = opmath_t<scalar_t>;
  using pack_t = Pack<scalar_t, VEC>;
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * VEC;
  acc_t sum[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) sum[j] = acc_t(0);
  if (c0 < cols) {
    // kRows rows per step, all loads issued before the arithmetic.
    constexpr int kRows = 4;
    const int64_t row_step = static_cast<int64_t>(gridDim.y) * blockDim.y;
    for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r0 < rows;
         r0 += kRows * row_step) {
      pack_t g[kRows], xv[kRows];
#pragma unroll
      for (int u = 0; u < kRows; ++u) {
        const int64_t r = r0 + u * row_step;
        if (r < rows) {
          g[u] = *reinterpret_cast<const pack_t*>(grad + r * cols + c0);
          xv[u] = *reinterpret_cast<const pack_t*>(x + r * cols + c0);
        }
      }
#pragma unroll
      for (int u = 0; u < kRows; ++u) {
        const int64_t r = r0 + u * row_step;
        if (r >= rows) break;
        pack_t o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const acc_t gj = static_cast<acc_t>(g[u].v[j]);
          o.v[j] = static_cast<scalar_t>(ReluGradFn{}(gj, static_cast<acc_t>(xv[u].v[j])));
          sum[j] += gj;
        }
        *reinterpret_cast<pack_t*>(grad_x + r * cols + c0) = o;
      }
    }
  }
  extern __shared__ unsigned char smem_raw[];
  auto* smem = reinterpret_cast<acc_t*>(smem_raw);
  const int width = blockDim.x * VEC;
#pragma unroll
  for (int j = 0; j < VEC; ++j) smem[threadIdx.y * width + threadIdx.x * VEC + j] = sum[j];
  __syncthreads();
  if (threadIdx.y == 0 && c0 < cols) {
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      acc_t s = smem[threadIdx.x * VEC + j];
      for (unsigned y = 1; y < blockDim.y; ++y) s += smem[y * width + threadIdx.x * VEC + j];
      partial[static_cast<int64_t>(blockIdx.y) * cols + c0 + j] = s;
    }
  }
}

// Pass 2: grad_bias[c] = sum over the rows of `partial`, in a fixed order.
// A 32 x 8 block per 32 columns: thread (c, y) sums rows y, y + 8, ...
// (independent loads, several in flight), then y = 0 adds the 8 sums.
constexpr int kSumCols = 32, kSumRows = 8;

template <class scalar_t>
__global__ void sum_partials_kernel(const opmath_t<scalar_t>* __restrict__ partial,
                                    scalar_t* __restrict__ grad_bias, int64_t nrows, int64_t cols) {
  using acc_t = opmath_t<scalar_t>;
  __shared__ acc_t part[kSumRows][kSumCols];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kSumCols + threadIdx.x;
  acc_t s = 0;
  if (c < cols) {
#pragma unroll 8
    for (int64_t r = threadIdx.y; r < nrows; r += kSumRows) s += partial[r * cols + c];
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    acc_t total = part[0][threadIdx.x];
    for (int y = 1; y < kSumRows; ++y) total += part[y][threadIdx.x];
    grad_bias[c] = static_cast<scalar_t>(total);
  }
}

template <class scalar_t, int VEC>
void launch_backward_with_bias(const BiasGradProblem& p) {
  using acc_t = opmath_t<scalar_t>;
  const int32_t device = p.x.get_device_index();
  const cudaStream_t stream = cuda::current_stream(device);
  constexpr int kThreads = cuda::kThreads;
  const int64_t col_threads = (p.cols + VEC - 1) / VEC;
  int tx = 1;
  while (tx < kThreads && tx < col_threads) tx *= 2;
  const int ty = kThreads / tx;
  const int64_t grid_x = (col_threads + tx - 1) / tx;
  const size_t smem = kThreads * VEC * sizeof(acc_t);
  const int64_t wave =
      cuda::resident_blocks<backward_with_bias_kernel<scalar_t, VEC>>(kThreads, smem, device);
  const int64_t grid_y = std::clamp<int64_t>(
      std::min((p.rows + ty - 1) / ty, std::max<int64_t>(1, wave / grid_x)), 1, 65535);
  STD_TORCH_CHECK(grid_x <= 0x7fffffff, "kernforge::fused_relu_add_backward: too many columns");

  Tensor partial = torch::stable::new_empty(
      p.x, {grid_y, p.cols}, sizeof(acc_t) == 8 ? ScalarType::Double : ScalarType::Float);
  const dim3 block(tx, ty);
  const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
  backward_with_bias_kernel<scalar_t, VEC><<<grid, block, smem, stream>>>(
      static_cast<const scalar_t*>(p.grad.data_ptr()), static_cast<const scalar_t*>(p.x.data_ptr()),
      static_cast<scalar_t*>(p.grad_x.data_ptr()), static_cast<acc_t*>(partial.data_ptr()), p.rows,
      p.cols);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  sum_partials_kernel<scalar_t>
      <<<static_cast<unsigned>((p.cols + kSumCols - 1) / kSumCols), dim3(kSumCols, kSumRows), 0,
         stream>>>(static_cast<const acc_t*>(partial.data_ptr()),
                   static_cast<scalar_t*>(p.grad_bias.data_ptr()), grid_y, p.cols);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
}

void backward_with_bias(const BiasGradProblem& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    constexpr int kVec = 16 / sizeof(scalar_t);
    const bool vec = p.cols % kVec == 0 && detail::aligned16(p.grad.data_ptr()) &&
                     detail::aligned16(p.x.data_ptr()) && detail::aligned16(p.grad_x.data_ptr());
    if (vec)
      launch_backward_with_bias<scalar_t, kVec>(p);
    else
      launch_backward_with_bias<scalar_t, 1>(p);
  });
}

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CUDA, m) {
  m.impl("fused_relu_add", TORCH_BOX(&kernforge::fused_relu_add<kernforge::cuda::Launcher>));
  m.impl("fused_relu_add_backward",
         TORCH_BOX((&kernforge::fused_relu_add_backward<kernforge::cuda::Launcher,
                                                        &kernforge::backward_with_bias>)));
}
