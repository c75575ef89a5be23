#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <vector>

#include "lltm/lltm_cpu_rows.h"

namespace kernforge {
namespace {

using cpu::BackwardRows;
using cpu::Chunks;
using cpu::ForwardRows;
using cpu::run_rows;

void gates_forward(const LltmForward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const ForwardRows<scalar_t> r{static_cast<const scalar_t*>(p.pre.data_ptr()),
                                  static_cast<const scalar_t*>(p.bias.data_ptr()),
                                  static_cast<const scalar_t*>(p.c.data_ptr()),
                                  static_cast<scalar_t*>(p.gates.data_ptr()),
                                  static_cast<scalar_t*>(p.c_new.data_ptr()),
                                  static_cast<scalar_t*>(p.h_new.data_ptr()),
                                  p.state};
    run_rows(Chunks(p.batch, p.state), r);
  });
}

// d_gates and d_c, and d_b (where asked for) as the sum of the chunks' column sums, in chunk
// order (no separate pass over d_gates).
void gates_backward(const LltmBackward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    using acc_t = opmath_t<scalar_t>;
    const int64_t width = 3 * p.state;
    const Chunks ch(p.batch, p.state);
    std::vector<acc_t> sums(static_cast<size_t>(std::max<int64_t>(ch.count, 1) * width));
    const BackwardRows<scalar_t> r{static_cast<const scalar_t*>(p.grad_h.t.data_ptr()),
                                   static_cast<const scalar_t*>(p.grad_c.t.data_ptr()),
                                   static_cast<const scalar_t*>(p.gates.data_ptr()),
                                   static_cast<const scalar_t*>(p.c_new.data_ptr()),
                                   static_cast<scalar_t*>(p.d_gates.data_ptr()),
                                   static_cast<scalar_t*>(p.d_c.data_ptr()),
                                   sums.data(),
                                   p.grad_h.ld,
                                   p.grad_h.inc,
                                   p.grad_c.ld,
                                   p.grad_c.inc,
                                   p.state};
    run_rows(ch, r);
    if (!p.d_b.defined()) return;  // d_b not asked for
    for (int64_t c = 1; c < ch.count; ++c)
      for (int64_t j = 0; j < width; ++j) sums[j] += sums[c * width + j];
    auto* d_b = static_cast<scalar_t*>(p.d_b.data_ptr());
    for (int64_t j = 0; j < width; ++j) d_b[j] = static_cast<scalar_t>(sums[j]);
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
      TORCH_BOX(
          (&kernforge::lltm_backward<kernforge::cpu::Launcher, &kernforge::gates_backward, true>)));
}
