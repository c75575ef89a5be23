// The LLTM sequence on the CPU: the driver of lltm_sequence_math.h with
// torch's CPU GEMMs (addmm into views, through the C shim) and the cell's row
// passes (lltm/lltm_cpu_rows.h); a generated token of a few rows by dot
// products from pointers (TokenUnits).
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>
#include <torch/csrc/stable/library.h>

#include <algorithm>
#include <vector>

#include "lltm/lltm_cpu_rows.h"
#include "lltm_sequence/lltm_sequence_math.h"

namespace kernforge {
namespace {

// A generated token: one step (T = 1) of at most kTokenMaxBatch rows, run
// from pointers with no GEMM and no views (a small token is bound by the
// host, a large one by reading W): each unit s dots its three rows of W
// with [h0_b | x_b], four rows b at a time, then two, then one, then a
// block of units runs the cell. Against the GEMM per layer (2 cores, 2
// layers, F = S, fp32), 1 row: S = 64 42 to 17 us, 200 78 to 47, 650 900
// to 580; 4 rows: S = 650 1440 to 550; 8 rows: S = 64 41 to 34, 650 1380
// to 980, 1024 3680 to 1900, S = 200 level (130); 9 rows keep the GEMMs.
constexpr int64_t kTokenMaxBatch = 8;

bool token_fits(const SeqRecurrence& r) {
  return r.steps == 1 && r.batch >= 1 && r.batch <= kTokenMaxBatch;
}

// Lanes of partial sums a gate keeps for R rows, so that the products
// vectorize without reordering a sum; summed pairwise at the end. Four rows
// keep 16, so that their 4 x 3 x 16 sums stay in registers.
template <int R>
constexpr int kTokenLanes = R == 4 ? 16 : 32;

// Adds w_g[k] v_r[k] (k < n) for the three gates g and R rows r into
// their lanes: each value of W loaded once for the R rows.
template <int R, class scalar_t, int L = kTokenLanes<R>>
KF_ALWAYS_INLINE void dot3(const scalar_t* __restrict w0, const scalar_t* __restrict w1,
                           const scalar_t* __restrict w2, const scalar_t* const (&v)[R], int64_t n,
                           opmath_t<scalar_t> (&part)[R][3][L]) {
  using acc_t = opmath_t<scalar_t>;
  const auto add = [&](int64_t k, int l) __attribute__((always_inline)) {
    const acc_t a0 = acc_t(w0[k + l]), a1 = acc_t(w1[k + l]), a2 = acc_t(w2[k + l]);
    for (int r = 0; r < R; ++r) {
      const acc_t vl = acc_t(v[r][k + l]);
      part[r][0][l] += a0 * vl;
      part[r][1][l] += a1 * vl;
      part[r][2][l] += a2 * vl;
    }
  };
  int64_t k = 0;
  for (; k + L <= n; k += L)
    for (int l = 0; l < L; ++l) add(k, l);
  for (int l = 0; k + l < n; ++l) add(k, l);
}

template <int L, class acc_t>
KF_ALWAYS_INLINE acc_t lanes_sum(acc_t (&part)[L]) {
  for (int width = L / 2; width > 0; width /= 2)
    for (int l = 0; l < width; ++l) part[l] += part[l + width];
  return part[0];
}

// Units a pass: their dot products first, then their cells in one
// vectorized loop.
constexpr int64_t kTokenBlock = 64;

// The cells of n units of one row: pre [3][kTokenBlock] (the products),
// gates' three blocks `gs` apart.
template <class scalar_t, class cell_t>
KF_ALWAYS_INLINE void token_cells(int64_t n, const opmath_t<scalar_t>* __restrict pre,
                                  const scalar_t* __restrict bias, int64_t S,
                                  const cell_t* __restrict c, scalar_t* __restrict gates,
                                  int64_t gs, cell_t* __restrict cells, scalar_t* __restrict c_n,
                                  scalar_t* __restrict h, scalar_t* __restrict h_n) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t u = 0; u < n; ++u) {
    acc_t i, o, z, cn, hn;
    lltm_cell_forward<acc_t>(pre[u] + acc_t(bias[u]), pre[kTokenBlock + u] + acc_t(bias[S + u]),
                             pre[2 * kTokenBlock + u] + acc_t(bias[2 * S + u]), acc_t(c[u]), i, o,
                             z, cn, hn);
    gates[u] = scalar_t(i);
    gates[gs + u] = scalar_t(o);
    gates[2 * gs + u] = scalar_t(z);
    cells[u] = cell_t(cn);
    c_n[u] = scalar_t(cn);
    h[u] = scalar_t(hn);
    h_n[u] = scalar_t(hn);
  }
}

// The token's units in chunks (cpu::Chunks over units); run(c, s0, s1)
// does units [s0, s1) of every row. A null h0 or c0 is zeros; gates,
// cells and h_n are written where not null (else into spare buffers).
template <class scalar_t>
struct TokenUnits : TokenBuffers<scalar_t> {
  using Buffers = TokenBuffers<scalar_t>;
  using Buffers::x, Buffers::bias, Buffers::W, Buffers::h0, Buffers::c0, Buffers::output,
      Buffers::c_n, Buffers::h_n, Buffers::gates, Buffers::cells;
  using typename Buffers::cell_t;
  int64_t ldw, batch, S, F;
  KF_ALWAYS_INLINE void run(int64_t, int64_t s0, int64_t s1) const {
    int64_t b = 0;
    for (; b + 4 <= batch; b += 4) rows<4>(b, s0, s1);
    for (; b + 2 <= batch; b += 2) rows<2>(b, s0, s1);
    if (b < batch) rows<1>(b, s0, s1);
  }

  // Rows [b, b + R): per block of units, their products, then their cells.
  template <int R>
  KF_ALWAYS_INLINE void rows(int64_t b, int64_t s0, int64_t s1) const {
    constexpr int L = kTokenLanes<R>;
    using acc_t = opmath_t<scalar_t>;
    acc_t pre[R][3 * kTokenBlock];
    scalar_t spare_gates[3 * kTokenBlock], spare_h[kTokenBlock];
    cell_t spare_cells[kTokenBlock], zeros[kTokenBlock] = {};
    const scalar_t *xs[R], *hs[R];
    for (int r = 0; r < R; ++r) {
      xs[r] = x + (b + r) * F;
      hs[r] = h0 ? h0 + (b + r) * S : nullptr;
    }
    for (int64_t u0 = s0; u0 < s1; u0 += kTokenBlock) {
      const int64_t n = std::min(kTokenBlock, s1 - u0);
      for (int64_t u = 0; u < n; ++u) {
        const scalar_t *w0 = W + (u0 + u) * ldw, *w1 = w0 + S * ldw, *w2 = w1 + S * ldw;
        acc_t part[R][3][L] = {};
        if (h0) dot3<R>(w0, w1, w2, hs, S, part);
        dot3<R>(w0 + S, w1 + S, w2 + S, xs, F, part);
        for (int r = 0; r < R; ++r)
          for (int64_t g = 0; g < 3; ++g) pre[r][g * kTokenBlock + u] = lanes_sum(part[r][g]);
      }
      for (int r = 0; r < R; ++r) {
        const int64_t e = (b + r) * S + u0;
        token_cells<scalar_t, cell_t>(n, pre[r], bias + u0, S, c0 ? c0 + e : zeros,
                                      gates ? gates + (b + r) * 3 * S + u0 : spare_gates,
                                      gates ? S : kTokenBlock, cells ? cells + e : spare_cells,
                                      c_n + e, output + e, h_n ? h_n + e : spare_h);
      }
    }
  }
};

struct CpuSequence {
  using Guard = cpu::Launcher::Guard;
  // The row pass takes pre and gates as __restrict: they must not overlap.
  static constexpr bool kGatesOverPre = false;

  static void addmm(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    double beta) {
    if (aoti_torch_cpu_addmm_out(out.get(), self.get(), a.get(), b.get(), beta, 1.0) !=
        AOTI_TORCH_SUCCESS)
      throw std::runtime_error("kernforge::lltm_sequence: addmm failed");
  }

  static Tensor index_rows(const Tensor& src, const Tensor& index) {
    return seq::index_rows(aoti_torch_cpu_index_Tensor, src, index);
  }

  static void step(const SeqStep& p) {
    dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      using cell_t = opmath_t<scalar_t>;
      const cpu::ForwardRows<scalar_t, cell_t> r{static_cast<const scalar_t*>(p.pre),
                                                 static_cast<const scalar_t*>(p.bias),
                                                 static_cast<const cell_t*>(p.c_prev),
                                                 static_cast<scalar_t*>(p.gates),
                                                 static_cast<cell_t*>(p.c),
                                                 static_cast<scalar_t*>(p.h),
                                                 p.state};
      cpu::run_rows(cpu::Chunks(p.batch, p.state), r);
    });
  }

  // A token runs as TokenUnits; else the CPU steps: per step, the GEMM and
  // the row pass use both cores.
  static bool projects_input(const SeqRecurrence& r) { return token_fits(r); }

  static bool recurrence(const SeqRecurrence& r) {
    if (!token_fits(r)) return false;
    dispatch<Dtypes::Floating>(r.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      const TokenUnits<scalar_t> units{
          {TokenBuffers<scalar_t>::of(r)}, r.ldw, r.batch, r.state, r.features};
      cpu::run_rows(cpu::Chunks(r.state, 3 * r.ldw * r.batch), units);
    });
    return true;
  }

  // A token's layers one after another, each reading the last one's h.
  static bool token(const SeqRecurrence* layers, int64_t count) {
    for (int64_t k = 0; k < count; ++k)
      if (!recurrence(layers[k])) return false;
    return true;
  }
  static SeqRan recurrence(const SeqRecurrenceBackward&) { return {}; }
  static bool sums(const SeqGrads&) { return false; }

  // The row pass adds each chunk's d_gates into column sums; the sequence
  // takes d_b from one product over all steps instead, so these are scratch.
  static void step_backward(const SeqStepBackward& p) {
    dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      using cell_t = opmath_t<scalar_t>;
      const cpu::Chunks ch(p.batch, p.state);
      std::vector<opmath_t<scalar_t>> sums(static_cast<size_t>(ch.count * 3 * p.state));
      const cpu::BackwardRows<scalar_t, cell_t> r{static_cast<const scalar_t*>(p.grad_h),
                                                  static_cast<const cell_t*>(p.grad_c),
                                                  static_cast<const scalar_t*>(p.gates),
                                                  static_cast<const cell_t*>(p.c),
                                                  static_cast<scalar_t*>(p.d_gates),
                                                  static_cast<cell_t*>(p.d_c),
                                                  sums.data(),
                                                  p.state,
                                                  1,
                                                  p.state,
                                                  1,
                                                  p.state,
                                                  static_cast<const scalar_t*>(p.grad_out),
                                                  p.ld_grad_out,
                                                  p.inc_grad_out};
      cpu::run_rows(ch, r);
    });
  }
};

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CPU, m) {
  m.impl("lltm_sequence_forward",
         TORCH_BOX(&kernforge::lltm_sequence_forward<kernforge::CpuSequence>));
  m.impl("lltm_sequence_inference",
         TORCH_BOX(&kernforge::lltm_sequence_inference<kernforge::CpuSequence>));
  m.impl("lltm_sequence_backward",
         TORCH_BOX(&kernforge::lltm_sequence_backward<kernforge::CpuSequence>));
  m.impl("lltm_sequence_layers_inference",
         TORCH_BOX(&kernforge::lltm_sequence_layers_inference<kernforge::CpuSequence>));
  m.impl("packed_reversed_rows", TORCH_BOX(&kernforge::packed_reversed_rows));
}
