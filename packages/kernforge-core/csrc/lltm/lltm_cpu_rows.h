// The CPU row passes of the LLTM cell, shared by the cell (lltm_cpu.cpp) and
// the sequence (lltm_sequence/lltm_sequence_cpu.cpp): one batch row at a
// time through lltm_cell_forward / lltm_cell_backward, in chunks of rows on
// torch's thread pool, each chunk in the widest instruction set the CPU has.
// cell_t is the type of the cell state c and its gradient: scalar_t for the
// cell, float for a half / bfloat16 sequence (its state stays in float).
#pragma once

#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <vector>

#include "common/dispatch.h"
#include "common/elementwise_cpu.h"
#include "lltm/lltm_math.h"

namespace kernforge::cpu {

// One batch row; __restrict parameters so that the loop vectorizes. Inlined
// into the row loops below, which are compiled for the baseline, AVX2 and
// AVX-512 (cpu::cpu_isa picks).
template <class scalar_t, class cell_t>
KF_ALWAYS_INLINE void forward_row(int64_t S, const scalar_t* __restrict pre,
                                  const scalar_t* __restrict bias, const cell_t* __restrict c,
                                  scalar_t* __restrict gates, cell_t* __restrict c_new,
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
    c_new[s] = cell_t(cn);
    h_new[s] = scalar_t(hn);
  }
}

// Also adds the row's d_gates (unrounded) into d_bias [3S], its chunk's
// column sums.
template <class scalar_t, class cell_t>
KF_ALWAYS_INLINE void backward_row(int64_t S, const scalar_t* __restrict grad_h,
                                   const cell_t* __restrict grad_c,
                                   const scalar_t* __restrict gates, const cell_t* __restrict c_new,
                                   scalar_t* __restrict d_gates, cell_t* __restrict d_c,
                                   opmath_t<scalar_t>* __restrict d_bias) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t s = 0; s < S; ++s) {
    acc_t d0, d1, d2, dc;
    lltm_cell_backward<acc_t>(acc_t(grad_h[s]), acc_t(grad_c[s]), acc_t(gates[s]),
                              acc_t(gates[S + s]), acc_t(gates[2 * S + s]), acc_t(c_new[s]), d0, d1,
                              d2, dc);
    d_gates[s] = scalar_t(d0);
    d_gates[S + s] = scalar_t(d1);
    d_gates[2 * S + s] = scalar_t(d2);
    d_c[s] = cell_t(dc);
    d_bias[s] += d0;
    d_bias[S + s] += d1;
    d_bias[2 * S + s] += d2;
  }
}

// The row passes run in chunks of whole rows (`Chunks`); run(c, b0, b1)
// does chunk c, rows [b0, b1).
template <class scalar_t, class cell_t = scalar_t>
struct ForwardRows {
  const scalar_t *pre, *bias;
  const cell_t* c;  // null: zeros
  scalar_t* gates;
  cell_t* c_new;
  scalar_t* h_new;
  int64_t S;
  KF_ALWAYS_INLINE void run(int64_t, int64_t b0, int64_t b1) const {
    const std::vector<cell_t> zeros(c ? 0 : S);
    for (int64_t b = b0; b < b1; ++b)
      forward_row<scalar_t, cell_t>(S, pre + b * 3 * S, bias, c ? c + b * S : zeros.data(),
                                    gates + b * 3 * S, c_new + b * S, h_new + b * S);
  }
};

// grad_h, grad_c and grad_out as RowViews (ld, inc); the gradient of h is
// grad_h plus grad_out where that is not null (the sequence's grad_output at
// the step); a null grad_h or grad_c is zero. A row that is not one
// contiguous read (inc 0: one value; a null; a sum) is spread into a buffer
// first, so that backward_row reads contiguous rows. Chunk c adds its rows'
// d_gates into the column sums bias_sums[c] ([3S]).
template <class scalar_t, class cell_t = scalar_t>
struct BackwardRows {
  const scalar_t* grad_h;
  const cell_t* grad_c;
  const scalar_t* gates;
  const cell_t* c_new;
  scalar_t* d_gates;
  cell_t* d_c;
  opmath_t<scalar_t>* bias_sums;
  int64_t ld_grad_h, inc_grad_h, ld_grad_c, inc_grad_c, S;
  const scalar_t* grad_out = nullptr;
  int64_t ld_grad_out = 0, inc_grad_out = 0;
  KF_ALWAYS_INLINE void run(int64_t c, int64_t b0, int64_t b1) const {
    const bool spread_h = !grad_h || !inc_grad_h || grad_out, spread_c = !grad_c || !inc_grad_c;
    std::vector<scalar_t> row_h(spread_h ? S : 0);
    std::vector<cell_t> row_c(spread_c ? S : 0);
    for (int64_t b = b0; b < b1; ++b) {
      const scalar_t* gh = grad_h ? grad_h + b * ld_grad_h : nullptr;
      const cell_t* gc = grad_c ? grad_c + b * ld_grad_c : nullptr;
      if (spread_h) {
        using acc_t = opmath_t<scalar_t>;
        for (int64_t s = 0; s < S; ++s)
          row_h[s] =
              scalar_t((gh ? acc_t(gh[s * inc_grad_h]) : acc_t(0)) +
                       (grad_out ? acc_t(grad_out[b * ld_grad_out + s * inc_grad_out]) : acc_t(0)));
        gh = row_h.data();
      }
      if (spread_c) std::fill(row_c.begin(), row_c.end(), gc ? *gc : cell_t(0)), gc = row_c.data();
      backward_row<scalar_t, cell_t>(S, gh, gc, gates + b * 3 * S, c_new + b * S,
                                     d_gates + b * 3 * S, d_c + b * S, bias_sums + c * 3 * S);
    }
  }
};

// `batch` rows in chunks of `rows` rows: enough elements per chunk to
// amortize the thread pool, and at most kMaxChunks chunks, so that the
// backward's per-chunk column sums stay small. The chunks do not depend on
// the number of threads, so neither does d_b.
struct Chunks {
  static constexpr int64_t kMaxChunks = 64;
  int64_t batch, rows, count;
  Chunks(int64_t batch, int64_t S)
      : batch(batch),
        rows(std::max({int64_t{1}, cpu::kGrain / std::max<int64_t>(S, 1),
                       (batch + kMaxChunks - 1) / kMaxChunks})),
        count((batch + rows - 1) / rows) {}
  template <class Rows>
  KF_ALWAYS_INLINE void run(const Rows& r, int64_t c0, int64_t c1) const {
    for (int64_t c = c0; c < c1; ++c) r.run(c, c * rows, std::min(batch, (c + 1) * rows));
  }
};

template <class Rows>
void run_baseline(const Chunks& ch, const Rows& r, int64_t c0, int64_t c1) {
  ch.run(r, c0, c1);
}

#ifdef KF_X86_CLONES
template <class Rows>
__attribute__((target(KF_AVX2))) void run_avx2(const Chunks& ch, const Rows& r, int64_t c0,
                                               int64_t c1) {
  ch.run(r, c0, c1);
}

// 512-bit vectors: the row loops are bound by the polynomial exp, and take
// about half the time of the AVX2 clone (forward at (256, 256, 512): 280 ->
// 125 us on this project's 2-core machines).
template <class Rows>
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,prefer-vector-width=512"))) void
run_avx512(const Chunks& ch, const Rows& r, int64_t c0, int64_t c1) {
  ch.run(r, c0, c1);
}
#endif

// The chunks on torch's thread pool, each in the widest instruction set the
// CPU has.
template <class Rows>
void run_rows(const Chunks& ch, const Rows& r) {
  torch::stable::parallel_for(0, ch.count, 1, [&](int64_t c0, int64_t c1) {
#ifdef KF_X86_CLONES
    const cpu::Isa isa = cpu::cpu_isa();
    if (isa == cpu::Isa::kAvx512) return run_avx512(ch, r, c0, c1);
    if (isa == cpu::Isa::kAvx2) return run_avx2(ch, r, c0, c1);
#endif
    run_baseline(ch, r, c0, c1);
  });
}

}  // namespace kernforge::cpu
