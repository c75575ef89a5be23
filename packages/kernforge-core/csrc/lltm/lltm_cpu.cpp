#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>

#include "common/dispatch.h"
#include "common/elementwise_cpu.h"
#include "lltm/lltm_math.h"

namespace kernforge {
namespace {

// One batch row; __restrict parameters so that the loop vectorizes.
template <class scalar_t>
void forward_row(int64_t S, const scalar_t* __restrict pre, const scalar_t* __restrict bias,
                 const scalar_t* __restrict c, scalar_t* __restrict gates,
                 scalar_t* __restrict c_new, scalar_t* __restrict h_new) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t s = 0; s < S; ++s) {
    acc_t i, o, z, cn, hn;
    lltm_cell_forward<acc_t>(acc_t(pre[s]) + acc_t(bias[s]), acc_t(pre[S + s]) + acc_t(bias[S + s]),
                             acc_t(pre[2 * S + s]) + acc_t(bias[2 * S + s]), acc_t(c[s]), i, o, z,
                             cn, hn);
    gates[s] = scalar_t(i);
    gates[S + s] = scalar_t(o);
    gates[2 * S + s] = scalar_t(z);
    c_new[s] = scalar_t(cn);
    h_new[s] = scalar_t(hn);
  }
}

template <class scalar_t>
void backward_row(int64_t S, const scalar_t* __restrict grad_h, const scalar_t* __restrict grad_c,
                  const scalar_t* __restrict gates, const scalar_t* __restrict c_new,
                  scalar_t* __restrict d_gates, scalar_t* __restrict d_c) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t s = 0; s < S; ++s) {
    acc_t d0, d1, d2, dc;
    lltm_cell_backward<acc_t>(acc_t(grad_h[s]), acc_t(grad_c[s]), acc_t(gates[s]),
                              acc_t(gates[S + s]), acc_t(gates[2 * S + s]), acc_t(c_new[s]), d0, d1,
                              d2, dc);
    d_gates[s] = scalar_t(d0);
    d_gates[S + s] = scalar_t(d1);
    d_gates[2 * S + s] = scalar_t(d2);
    d_c[s] = scalar_t(dc);
  }
}

// Rows per task: enough elements per task to amortize the thread pool.
inline int64_t row_grain(int64_t S) {
  return std::max<int64_t>(1, cpu::kGrain / std::max<int64_t>(S, 1));
}

void gates_forward(const LltmForward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const auto* pre = static_cast<const scalar_t*>(p.pre.data_ptr());
    const auto* bias = static_cast<const scalar_t*>(p.bias.data_ptr());
    const auto* c = static_cast<const scalar_t*>(p.c.data_ptr());
    auto* gates = static_cast<scalar_t*>(p.gates.data_ptr());
    auto* c_new = static_cast<scalar_t*>(p.c_new.data_ptr());
    auto* h_new = static_cast<scalar_t*>(p.h_new.data_ptr());
    const int64_t S = p.state;
    torch::stable::parallel_for(0, p.batch, row_grain(S), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        forward_row<scalar_t>(S, pre + b * 3 * S, bias, c + b * S, gates + b * 3 * S, c_new + b * S,
                              h_new + b * S);
    });
  });
}

void gates_backward(const LltmBackward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const auto* gh = static_cast<const scalar_t*>(p.grad_h.data_ptr());
    const auto* gc = static_cast<const scalar_t*>(p.grad_c.data_ptr());
    const auto* gates = static_cast<const scalar_t*>(p.gates.data_ptr());
    const auto* c_new = static_cast<const scalar_t*>(p.c_new.data_ptr());
    auto* d_gates = static_cast<scalar_t*>(p.d_gates.data_ptr());
    auto* d_c = static_cast<scalar_t*>(p.d_c.data_ptr());
    const int64_t S = p.state;
    torch::stable::parallel_for(0, p.batch, row_grain(S), [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b)
        backward_row<scalar_t>(S, gh + b * S, gc + b * S, gates + b * 3 * S, c_new + b * S,
                               d_gates + b * 3 * S, d_c + b * S);
    });
  });
}

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CPU, m) {
  m.impl(
      "lltm_forward",
      TORCH_BOX((&kernforge::lltm_forward<kernforge::cpu::Launcher, &kernforge::gates_forward>)));
  m.impl(
      "lltm_backward",
      TORCH_BOX((&kernforge::lltm_backward<kernforge::cpu::Launcher, &kernforge::gates_backward>)));
}
