#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <vector>

#include "common/elementwise_cpu.h"
#include "fused_relu_add/fused_relu_add_math.h"

namespace kernforge {
namespace {

// One pass over (grad, x): writes grad_x and per-chunk column sums of grad,
// then adds the chunks up in a fixed order (deterministic for any thread count).
template <class scalar_t>
void backward_with_bias_kernel(const scalar_t* grad, const scalar_t* x, scalar_t* grad_x,
                               scalar_t* grad_bias, int64_t rows, int64_t cols) {
  using acc_t = opmath_t<scalar_t>;
  const int64_t chunks = std::max<int64_t>(
      1, std::min<int64_t>({rows, 64, (int64_t{1} << 22) / std::max<int64_t>(cols, 1)}));
  std::vector<acc_t> partial(chunks * cols, acc_t(0));
  torch::stable::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      acc_t* __restrict sum = partial.data() + chunk * cols;
      for (int64_t r = chunk * rows / chunks; r < (chunk + 1) * rows / chunks; ++r) {
        const scalar_t* __restrict g = grad + r * cols;
        const scalar_t* __restrict xr = x + r * cols;
        scalar_t* __restrict gx = grad_x + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
          const acc_t gv = static_cast<acc_t>(g[c]);
          gx[c] = static_cast<scalar_t>(ReluGradFn{}(gv, static_cast<acc_t>(xr[c])));
          sum[c] += gv;
        }
      }
    }
  });
  for (int64_t c = 0; c < cols; ++c) {
    acc_t s = 0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) s += partial[chunk * cols + c];
    grad_bias[c] = static_cast<scalar_t>(s);
  }
}

void backward_with_bias(const BiasGradProblem& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    backward_with_bias_kernel<scalar_t>(
        static_cast<const scalar_t*>(p.grad.data_ptr()),
        static_cast<const scalar_t*>(p.x.data_ptr()), static_cast<scalar_t*>(p.grad_x.data_ptr()),
        static_cast<scalar_t*>(p.grad_bias.data_ptr()), p.rows, p.cols);
  });
}

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CPU, m) {
  m.impl("fused_relu_add", TORCH_BOX(&kernforge::fused_relu_add<kernforge::cpu::Launcher>));
  m.impl("fused_relu_add_backward",
         TORCH_BOX((&kernforge::fused_relu_add_backward<kernforge::cpu::Launcher,
                                                        &kernforge::backward_with_bias>)));
}
