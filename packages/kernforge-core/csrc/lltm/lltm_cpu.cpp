#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include "common/dispatch.h"
#include "common/elementwise_cpu.h"
#include "lltm/lltm_math.h"

namespace kernforge {
namespace {

void gates_forward(const LltmForward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    using acc_t = opmath_t<scalar_t>;
    const auto* pre = static_cast<const scalar_t*>(p.pre.data_ptr());
    const auto* bias = static_cast<const scalar_t*>(p.bias.data_ptr());
    const auto* c = static_cast<const scalar_t*>(p.c.data_ptr());
    auto* gates = static_cast<scalar_t*>(p.gates.data_ptr());
    auto* c_new = static_cast<scalar_t*>(p.c_new.data_ptr());
    auto* h_new = static_cast<scalar_t*>(p.h_new.data_ptr());
    const int64_t S = p.state;
    const int64_t grain = std::max<int64_t>(1, cpu::kGrain / std::max<int64_t>(S, 1));
    torch::stable::parallel_for(0, p.batch, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const scalar_t* g = pre + b * 3 * S;
        scalar_t* a = gates + b * 3 * S;
        for (int64_t s = 0; s < S; ++s) {
          acc_t i, o, z, cn, hn;
          lltm_cell_forward<acc_t>(
              acc_t(g[s]) + acc_t(bias[s]), acc_t(g[S + s]) + acc_t(bias[S + s]),
              acc_t(g[2 * S + s]) + acc_t(bias[2 * S + s]), acc_t(c[b * S + s]), i, o, z, cn, hn);
          a[s] = scalar_t(i);
          a[S + s] = scalar_t(o);
          a[2 * S + s] = scalar_t(z);
          c_new[b * S + s] = scalar_t(cn);
          h_new[b * S + s] = scalar_t(hn);
        }
      }
    });
  });
}

void gates_backward(const LltmBackward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    using acc_t = opmath_t<scalar_t>;
    const auto* gh = static_cast<const scalar_t*>(p.grad_h.data_ptr());
    const auto* gc = static_cast<const scalar_t*>(p.grad_c.data_ptr());
    const auto* gates = static_cast<const scalar_t*>(p.gates.data_ptr());
    const auto* c_new = static_cast<const scalar_t*>(p.c_new.data_ptr());
    auto* d_gates = static_cast<scalar_t*>(p.d_gates.data_ptr());
    auto* d_c = static_cast<scalar_t*>(p.d_c.data_ptr());
    const int64_t S = p.state;
    const int64_t grain = std::max<int64_t>(1, cpu::kGrain / std::max<int64_t>(S, 1));
    torch::stable::parallel_for(0, p.batch, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const scalar_t* a = gates + b * 3 * S;
        scalar_t* d = d_gates + b * 3 * S;
        for (int64_t s = 0; s < S; ++s) {
          acc_t d0, d1, d2, dc;
          lltm_cell_backward<acc_t>(acc_t(gh[b * S + s]), acc_t(gc[b * S + s]), acc_t(a[s]),
                                    acc_t(a[S + s]), acc_t(a[2 * S + s]), acc_t(c_new[b * S + s]),
                                    d0, d1, d2, dc);
          d[s] = scalar_t(d0);
          d[S + s] = scalar_t(d1);
          d[2 * S + s] = scalar_t(d2);
          d_c[b * S + s] = scalar_t(dc);
        }
      }
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
