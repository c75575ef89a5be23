#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <vector>

#include "common/dispatch.h"
#include "common/elementwise_cpu.h"
#include "lltm/lltm_math.h"

namespace kernforge {
namespace {

// One batch row; __restrict parameters so that the loop vectorizes. Inlined
// into the row loops below, which are compiled for the baseline and for AVX2.
template <class scalar_t>
KF_ALWAYS_INLINE void forward_row(int64_t S, const scalar_t* __restrict pre,
                                  const scalar_t* __restrict bias, const scalar_t* __restrict c,
                                  scalar_t* __restrict gates, scalar_t* __restrict c_new,
                                  scalar_t* __restrict h_new) {
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
KF_ALWAYS_INLINE void backward_row(int64_t S, const scalar_t* __restrict grad_h,
                                   const scalar_t* __restrict grad_c,
                                   const scalar_t* __restrict gates,
                                   const scalar_t* __restrict c_new, scalar_t* __restrict d_gates,
                                   scalar_t* __restrict d_c) {
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

template <class scalar_t>
struct ForwardRows {
  const scalar_t *pre, *bias, *c;
  scalar_t *gates, *c_new, *h_new;
  int64_t S;
  KF_ALWAYS_INLINE void run(int64_t b0, int64_t b1) const {
    for (int64_t b = b0; b < b1; ++b)
      forward_row<scalar_t>(S, pre + b * 3 * S, bias, c + b * S, gates + b * 3 * S, c_new + b * S,
                            h_new + b * S);
  }
};

// grad_h and grad_c as RowViews (ld, inc): a row of one value (inc 0) is
// spread into a buffer first, so that backward_row reads contiguous rows.
template <class scalar_t>
struct BackwardRows {
  const scalar_t *grad_h, *grad_c, *gates, *c_new;
  scalar_t *d_gates, *d_c;
  int64_t ld_grad_h, inc_grad_h, ld_grad_c, inc_grad_c, S;
  KF_ALWAYS_INLINE void run(int64_t b0, int64_t b1) const {
    std::vector<scalar_t> spread_h(inc_grad_h ? 0 : S), spread_c(inc_grad_c ? 0 : S);
    for (int64_t b = b0; b < b1; ++b) {
      const scalar_t* gh = grad_h + b * ld_grad_h;
      const scalar_t* gc = grad_c + b * ld_grad_c;
      if (!inc_grad_h) std::fill(spread_h.begin(), spread_h.end(), *gh), gh = spread_h.data();
      if (!inc_grad_c) std::fill(spread_c.begin(), spread_c.end(), *gc), gc = spread_c.data();
      backward_row<scalar_t>(S, gh, gc, gates + b * 3 * S, c_new + b * S, d_gates + b * 3 * S,
                             d_c + b * S);
    }
  }
};

template <class Rows>
void run_baseline(const Rows& r, int64_t b0, int64_t b1) {
  r.run(b0, b1);
}

#ifdef KF_AVX2_CLONE
template <class Rows>
__attribute__((target("avx2"))) void run_avx2(const Rows& r, int64_t b0, int64_t b1) {
  r.run(b0, b1);
}
#endif

// Rows per task: enough elements per task to amortize the thread pool.
template <class Rows>
void run_rows(const Rows& r, int64_t batch) {
  const int64_t grain = std::max<int64_t>(1, cpu::kGrain / std::max<int64_t>(r.S, 1));
  torch::stable::parallel_for(0, batch, grain, [&](int64_t b0, int64_t b1) {
#ifdef KF_AVX2_CLONE
    if (cpu::detail::cpu_has_avx2()) return run_avx2(r, b0, b1);
#endif
    run_baseline(r, b0, b1);
  });
}

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
    run_rows(r, p.batch);
  });
}

void gates_backward(const LltmBackward& p) {
  dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    const BackwardRows<scalar_t> r{static_cast<const scalar_t*>(p.grad_h.t.data_ptr()),
                                   static_cast<const scalar_t*>(p.grad_c.t.data_ptr()),
                                   static_cast<const scalar_t*>(p.gates.data_ptr()),
                                   static_cast<const scalar_t*>(p.c_new.data_ptr()),
                                   static_cast<scalar_t*>(p.d_gates.data_ptr()),
                                   static_cast<scalar_t*>(p.d_c.data_ptr()),
                                   p.grad_h.ld,
                                   p.grad_h.inc,
                                   p.grad_c.ld,
                                   p.grad_c.inc,
                                   p.state};
    run_rows(r, p.batch);
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
