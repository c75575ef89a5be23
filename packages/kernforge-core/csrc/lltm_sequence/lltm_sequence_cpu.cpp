// The LLTM sequence on the CPU: the driver of lltm_sequence_math.h with
// torch's CPU GEMMs (addmm into views, through the C shim) and the cell's row
// passes (lltm/lltm_cpu_rows.h); a generated token of a few rows by dot
// products from pointers (TokenUnits), and the steps of a sequence of a few
// rows from W_h^T laid out in blocks (StepBlocks).
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>
#include <torch/csrc/stable/library.h>

#include <algorithm>
#include <memory>
#include <type_traits>
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

// A sequence of a few rows steps without a GEMM a step (which packs W_h
// again every step): W_h^T is laid out once a call in blocks of kStepUnits
// units (block j, then k, then gate g: the kStepUnits values W_h[g S + j U
// + i, k], zeros past S), so that a step's products for a block are one
// contiguous read, each value multiplied into every row's accumulators
// (vectors over the block's units, kept in registers), with no sums
// across lanes. Each thread takes the same blocks every step, so that its
// part of W_h^T stays in its core's cache.
constexpr int64_t kStepUnits = 8;

// Rows a pass: as many as keep 3 R vectors of accumulators in AVX2's
// sixteen registers.
constexpr int kStepRows = 4;

// kStepUnits float accumulators of a step's products as one vector of the
// compiler's (a register in AVX2), where an array was kept in memory, each
// product a load and a store; `load` reads one from memory of any alignment.
// (Float64 steps by GEMMs: see kStepsMaxBatch.)
typedef float StepVector __attribute__((vector_size(kStepUnits * sizeof(float))));
typedef float StepLoad
    __attribute__((vector_size(kStepUnits * sizeof(float)), aligned(4), may_alias));

// W_h^T in kStepUnits blocks, in the accumulators' type: block j holds, for
// each k, its 3 kStepUnits rows' values at k. Copied kStepCopyTile values
// of k at a time, each row's read in order, so that the tile's writes stay
// in L1 (a gather of one k at a time from the 24 rows took 1.9 ns a value).
constexpr int64_t kStepCopyTile = 64;

template <class scalar_t>
void block_recurrent_weight(const scalar_t* __restrict W, int64_t ldw, int64_t S,
                            opmath_t<scalar_t>* __restrict out) {
  using acc_t = opmath_t<scalar_t>;
  constexpr int64_t U = kStepUnits;
  const int64_t blocks = (S + U - 1) / U;
  torch::stable::parallel_for(0, blocks, std::max<int64_t>(1, cpu::kGrain / (3 * U * S)),
                              [&](int64_t j0, int64_t j1) {
                                for (int64_t j = j0; j < j1; ++j)
                                  for (int64_t k0 = 0; k0 < S; k0 += kStepCopyTile) {
                                    const int64_t k1 = std::min(S, k0 + kStepCopyTile);
                                    for (int64_t g = 0; g < 3; ++g)
                                      for (int64_t i = 0; i < U; ++i) {
                                        const int64_t u = j * U + i;
                                        acc_t* __restrict o = out + j * S * 3 * U + g * U + i;
                                        if (u >= S) {  // the last block's units past S
                                          for (int64_t k = k0; k < k1; ++k) o[k * 3 * U] = 0;
                                          continue;
                                        }
                                        const scalar_t* __restrict w = W + (g * S + u) * ldw;
                                        for (int64_t k = k0; k < k1; ++k)
                                          o[k * 3 * U] = acc_t(w[k]);
                                      }
                                  }
                              });
}

// A step of rows [b, b + R) over blocks [j0, j1): each block's products
// h_{t-1} W_h^T plus P_t, then, each kTokenBlock units, their cells.
template <class scalar_t>
struct StepBlocks : TokenBuffers<scalar_t> {
  using Buffers = TokenBuffers<scalar_t>;
  using Buffers::bias, Buffers::h0, Buffers::c0, Buffers::output, Buffers::c_n, Buffers::h_n,
      Buffers::gates, Buffers::cells;
  using typename Buffers::cell_t;
  using acc_t = opmath_t<scalar_t>;
  const scalar_t* P;  // the step's x W_x^T [batch, 3S]
  const acc_t* WT;    // block_recurrent_weight's
  int64_t batch, S;

  KF_ALWAYS_INLINE void run(int64_t, int64_t j0, int64_t j1) const {
    int64_t b = 0;
    for (; b + kStepRows <= batch; b += kStepRows) rows<kStepRows>(b, j0, j1);
    if (b + 2 <= batch) rows<2>(b, j0, j1), b += 2;
    if (b < batch) rows<1>(b, j0, j1);
  }

  template <int R>
  KF_ALWAYS_INLINE void rows(int64_t b, int64_t j0, int64_t j1) const {
    constexpr int64_t U = kStepUnits, blocks_a_pass = kTokenBlock / U;
    acc_t pre[R][3 * kTokenBlock];
    scalar_t spare_gates[3 * kTokenBlock], spare_h[kTokenBlock];
    cell_t zeros[kTokenBlock] = {};
    for (int64_t p0 = j0; p0 < j1; p0 += blocks_a_pass) {
      const int64_t p1 = std::min(j1, p0 + blocks_a_pass), u0 = p0 * U;
      for (int64_t j = p0; j < p1; ++j) {
        using vec_t = StepVector;
        using load_t = StepLoad;
        // acc never has its address taken (indexed below through sums), so
        // that it stays in registers through the loop: K sets of them for
        // K values of k at once, twelve chains of adds in all, enough to
        // hide the adds' latency for one row too.
        constexpr int K = 4 / R;
        vec_t acc[K][R][3] = {}, sums[R][3];
        if (h0) {
          const acc_t* w = WT + j * S * 3 * U;
          const auto add = [&](int q, int64_t k) __attribute__((always_inline)) {
            const acc_t* wk = w + k * 3 * U;
            const vec_t w0 = *reinterpret_cast<const load_t*>(wk),
                        w1 = *reinterpret_cast<const load_t*>(wk + U),
                        w2 = *reinterpret_cast<const load_t*>(wk + 2 * U);
#pragma GCC unroll 4
            for (int r = 0; r < R; ++r) {
              const acc_t h = acc_t(h0[(b + r) * S + k]);
              acc[q][r][0] += h * w0;
              acc[q][r][1] += h * w1;
              acc[q][r][2] += h * w2;
            }
          };
          int64_t k = 0;
          for (; k + K <= S; k += K)
#pragma GCC unroll 4
            for (int q = 0; q < K; ++q) add(q, k + q);
          for (; k < S; ++k) add(0, k);
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
          for (int g = 0; g < 3; ++g) {
            sums[r][g] = acc[0][r][g];
#pragma GCC unroll 4
            for (int q = 1; q < K; ++q) sums[r][g] += acc[q][r][g];
          }
        const int64_t n = std::min(U, S - j * U), at = (j - p0) * U;
        for (int r = 0; r < R; ++r)
          for (int64_t g = 0; g < 3; ++g)
            for (int64_t i = 0; i < n; ++i)
              pre[r][g * kTokenBlock + at + i] =
                  sums[r][g][i] + acc_t(P[(b + r) * 3 * S + g * S + j * U + i]);
      }
      const int64_t n = std::min(S, p1 * U) - u0;
      for (int r = 0; r < R; ++r) {
        const int64_t e = (b + r) * S + u0;
        token_cells<scalar_t, cell_t>(n, pre[r], bias + u0, S, c0 ? c0 + e : zeros,
                                      gates ? gates + (b + r) * 3 * S + u0 : spare_gates,
                                      gates ? S : kTokenBlock, cells + e, c_n + e, output + e,
                                      h_n ? h_n + e : spare_h);
      }
    }
  }
};

// A step's blocks split evenly over the threads, the same each step, a
// thread for each 2^15 products at least, which pays for waking it (2 cores:
// one thread at B = 1, S = 128, two at S = 256 or B = 2).
inline cpu::Chunks step_chunks(int64_t blocks, int64_t products) {
  cpu::Chunks chunks(blocks, blocks);
  const int64_t threads = std::clamp<int64_t>(products >> 15, 1, torch::stable::get_num_threads());
  chunks.rows = (blocks + threads - 1) / threads;
  chunks.count = (blocks + chunks.rows - 1) / chunks.rows;
  return chunks;
}

// When a sequence steps through StepBlocks: up to 128 rows (each group of kStepRows rows reads
// the thread's blocks of W_h^T again from its cache), in float, bfloat16 and half, over at least
// 4 steps and 8 rows' steps in all, which pay for W_h^T's copy (3 S^2 values). A GEMM a step was
// faster in float64 (StepBlocks in double was 4 to 20x slower at 1 to 128 rows) and in most
// shorter calls. Float, 2 cores (AVX2), ms a forward call, a GEMM a step / StepBlocks, (T, B, F,
// S) = (2, 1, 16, 1024) 0.76 / 1.90; (4, 1, 16, 1024) 1.46 / 1.98; (4, 1, 256, 256) 0.23 / 0.19;
// (8, 1, 16, 1024) 2.47 / 2.55; (8, 1, 1024, 1024) 7.87 / 5.61; (4, 2, 16, 1024) 2.96 / 2.52;
// (16, 4, 1024, 1024) 31.4 / 9.2; (16, 32, 650, 650) 21.9 / 17.7; (35, 128, 650, 650) 249.1 /
// 209.0 (before the tiled copy). At 256 rows they tied, and at 512 and 1024 the GEMMs won by up
// to 18%.
constexpr int64_t kStepsMaxBatch = 128, kStepsMinSteps = 4, kStepsMinRowSteps = 8;

// A sequence of at most kStepsMaxBatch rows (packed: in its first step),
// P = x W_x^T made: its steps as StepBlocks, reading h_{t-1} from the step
// before's output. B = 1, S = 256, 2 layers, T = 100, 2 cores (AVX2):
// 2.4 ms a call, through a GEMM a step 6.7, nn.LSTM's oneDNN 3.9.
template <class scalar_t>
void run_steps(const SeqRecurrence& r) {
  using cell_t = opmath_t<scalar_t>;
  constexpr int64_t U = kStepUnits;
  const int64_t B = r.batch, S = r.state, blocks = (S + U - 1) / U;
  const int64_t* offsets = r.host_offsets;  // null: fixed length
  const auto offset = [&](int64_t t) { return offsets ? offsets[t] : t * B; };
  const TokenBuffers<scalar_t> buffers = TokenBuffers<scalar_t>::of(r);
  // (not zeroed: block_recurrent_weight writes every value)
  const std::unique_ptr<cell_t[]> WT(new cell_t[static_cast<size_t>(blocks * U * 3 * S)]);
  block_recurrent_weight(static_cast<const scalar_t*>(r.W), r.ldw, S, WT.get());
  // Without kept cells, each step's cells go to one of two steps' scratch:
  // a packed row that ends at step t is not read again, and c_n has it.
  std::vector<cell_t> scratch(r.cells ? 0 : static_cast<size_t>(2 * B * S));
  const auto cells_at = [&](int64_t t) {
    return r.cells ? buffers.cells + offset(t) * S : scratch.data() + (t & 1) * B * S;
  };
  for (int64_t t = 0; t < r.steps; ++t) {
    const int64_t row = offset(t), rows = offsets ? offsets[t + 1] - row : B;
    StepBlocks<scalar_t> step{
        {buffers}, static_cast<const scalar_t*>(r.P) + row * 3 * S, WT.get(), rows, S};
    if (t > 0) {
      step.h0 = buffers.output + offset(t - 1) * S;
      step.c0 = cells_at(t - 1);
    }
    step.cells = cells_at(t);
    step.gates = r.gates ? buffers.gates + row * 3 * S : nullptr;
    step.output = buffers.output + row * S;
    cpu::run_rows(step_chunks(blocks, 3 * S * S * rows), step);
  }
}

// out [M, n] = a [M, K] b [K, n] (plus beta out) for M <= kTokenMaxBatch,
// where a GEMM a step (the backward's d_gates_t W_h: the gradient of
// h_{t-1}) packs b again every call: b's rows are read as they lie, in
// order, four at a time, each added, times a's four values, into every
// row's sums of the chunk's columns (kept in the core's L1). The columns
// split over the threads as StepBlocks' units are, the same each call.
// Each column's sum runs in one order whatever the threads, so d_b (a ones
// row times d_gates) does not depend on their number.
template <class scalar_t>
struct RowsProduct {
  using acc_t = opmath_t<scalar_t>;
  const scalar_t* a;
  const scalar_t* b;
  scalar_t* out;
  int64_t lda, ldb, ldo, M, K, n;
  acc_t beta;

  // Columns [c0 kStepUnits, c1 kStepUnits) of every row.
  KF_ALWAYS_INLINE void run(int64_t, int64_t c0, int64_t c1) const {
    const int64_t col0 = c0 * kStepUnits, width = std::min(n, c1 * kStepUnits) - col0;
    std::vector<acc_t> sums(static_cast<size_t>(M * width));
    int64_t k = 0;
    for (; k + 4 <= K; k += 4) {
      const scalar_t* __restrict b0 = b + k * ldb + col0;
      const scalar_t* __restrict b1 = b0 + ldb, * __restrict b2 = b1 + ldb, * __restrict b3 = b2 + ldb;
      for (int64_t m = 0; m < M; ++m) {
        const scalar_t* am = a + m * lda + k;
        const acc_t x0 = acc_t(am[0]), x1 = acc_t(am[1]), x2 = acc_t(am[2]), x3 = acc_t(am[3]);
        acc_t* __restrict y = sums.data() + m * width;
        for (int64_t i = 0; i < width; ++i)
          y[i] += x0 * acc_t(b0[i]) + x1 * acc_t(b1[i]) + x2 * acc_t(b2[i]) + x3 * acc_t(b3[i]);
      }
    }
    for (; k < K; ++k) {
      const scalar_t* __restrict b0 = b + k * ldb + col0;
      for (int64_t m = 0; m < M; ++m) {
        const acc_t x0 = acc_t(a[m * lda + k]);
        acc_t* __restrict y = sums.data() + m * width;
        for (int64_t i = 0; i < width; ++i) y[i] += x0 * acc_t(b0[i]);
      }
    }
    for (int64_t m = 0; m < M; ++m) {
      scalar_t* __restrict o = out + m * ldo + col0;
      const acc_t* __restrict y = sums.data() + m * width;
      for (int64_t i = 0; i < width; ++i)
        o[i] = scalar_t(beta == acc_t(0) ? y[i] : beta * acc_t(o[i]) + y[i]);
    }
  }
};

struct CpuSequence {
  using Guard = cpu::Launcher::Guard;
  // The row pass takes pre and gates as __restrict: they must not overlap.
  static constexpr bool kGatesOverPre = false;

  // out = beta self + a b: RowsProduct for a few rows of a and b's rows
  // contiguous (out being self), else torch's addmm.
  static void addmm(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    double beta) {
    const int64_t M = a.size(0), K = a.size(1), n = b.size(1);
    if (M >= 1 && M <= kTokenMaxBatch && K > 0 && out.get() == self.get() && a.stride(1) == 1 &&
        b.stride(1) == 1 && out.stride(1) == 1) {
      dispatch<Dtypes::Floating>(out.scalar_type(), [&](auto tag) {
        using scalar_t = typename decltype(tag)::type;
        const RowsProduct<scalar_t> product{static_cast<const scalar_t*>(a.data_ptr()),
                                            static_cast<const scalar_t*>(b.data_ptr()),
                                            static_cast<scalar_t*>(out.data_ptr()),
                                            a.stride(0),
                                            b.stride(0),
                                            out.stride(0),
                                            M,
                                            K,
                                            n,
                                            opmath_t<scalar_t>(beta)};
        cpu::run_rows(step_chunks((n + kStepUnits - 1) / kStepUnits, M * K * n), product);
      });
      return;
    }
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

  // A token runs as TokenUnits, and a sequence of a few rows as
  // StepBlocks after one GEMM for P (run_steps); else the CPU steps: per
  // step, the GEMM and the row pass use both cores.
  static bool projects_input(const SeqRecurrence& r) { return token_fits(r); }

  // run_steps' W_h^T in float is a copy of W_h made each call: up to 2^24
  // values (64 MiB; S up to 2364), beyond which the GEMMs step.
  static bool steps_fit(const SeqRecurrence& r) {
    return r.dtype != ScalarType::Double && r.batch >= 1 && r.batch <= kStepsMaxBatch &&
           r.steps >= kStepsMinSteps && r.batch * r.steps >= kStepsMinRowSteps && r.P &&
           3 * r.state * r.state <= (1 << 24);
  }

  static bool recurrence(const SeqRecurrence& r) {
    const bool token = token_fits(r);
    if (!token && !steps_fit(r)) return false;
    dispatch<Dtypes::Floating>(r.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      if (!token) {
        if constexpr (!std::is_same_v<scalar_t, double>) run_steps<scalar_t>(r);  // (steps_fit)
        return;
      }
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
