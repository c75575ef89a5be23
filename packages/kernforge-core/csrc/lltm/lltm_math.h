// The LLTM cell (an LSTM-like cell without a forget gate, ELU candidate):
//   X = [h, x];  gates = X @ W^T + b = [g0, g1, g2] (each [B, S])
//   i = sigmoid(g0), o = sigmoid(g1), z = elu(g2);  c' = c + z * i;  h' = tanh(c') * o
// The per-element gate math (forward and backward, shared by CPU and CUDA),
// and the backend-generic entries around the GEMMs.
#pragma once

#include <torch/csrc/stable/ops.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "common/alloc.h"
#include "common/checks.h"

namespace kernforge {

// The cell's math is inlined on the host whatever GCC's inlining budget for
// the file: the CPU loops that call it vectorize only where it is, and in
// lltm_sequence_cpu.cpp one more instantiation left lltm_cell_forward and
// exp_vectorizable out of line and a generated token at S = 200 took 3x as
// long. nvcc compiles the same inline functions as before.
#if defined(__CUDACC__)
#define KF_CELL_INLINE inline
#else
#define KF_CELL_INLINE inline __attribute__((always_inline))
#endif

// exp for float on the host, written so that the compiler vectorizes loops
// that call it (libm's expf is a scalar call): Cephes' range reduction and
// polynomial, rounding by the 1.5 * 2^23 trick and 2^n built from its bits.
// Relative error about 2e-7 over [-87, 88]; exp(x) = 0 below, inf above.
KF_CELL_INLINE float exp_vectorizable(float x) {
  const float v = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
  const float magic = 12582912.0f;  // 1.5 * 2^23
  const float n = (v * 1.44269504088896341f + magic) - magic;
  const float r = (v - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  const float out = p * scale;
  return x > 88.72283f ? INFINITY : (x < -87.33654f ? 0.0f : out);
}

// The transcendental functions of the cell: through exp_vectorizable for
// float on the host, the library's functions elsewhere (device, double).
template <class T>
C10_HOST_DEVICE KF_CELL_INLINE T exp_(T x) {
#if !defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) return exp_vectorizable(x);
#endif
  return std::exp(x);
}

// On the device, float's sigmoid divides by the reciprocal instruction
// (about 1 ulp) and its elu subtracts 1 from exp, as on the host: IEEE
// division's slow path and expm1's branch made the cell's three gates a
// chain of branches that ran one after the other (the gate pass of a
// recurrent step is latency-bound). Both are selects now, and the gates
// overlap.
template <class T>
C10_HOST_DEVICE KF_CELL_INLINE T sigmoid(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) return __fdividef(1.0f, 1.0f + expf(-x));
#endif
  return T(1) / (T(1) + exp_(-x));
}

template <class T>
C10_HOST_DEVICE KF_CELL_INLINE T tanh_(T x) {
#if !defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, float>) return T(1) - T(2) / (exp_(T(2) * x) + T(1));
#endif
  return std::tanh(x);
}

template <class T>
C10_HOST_DEVICE KF_CELL_INLINE T elu(T x) {
  if constexpr (std::is_same_v<T, float>) {
    const T negative = exp_(x) - T(1);  // computed on both sides: a select, not a branch
    return x > T(0) ? x : negative;
  }
  return x > T(0) ? x : std::expm1(x);
}

// One (b, s) element. Inputs are pre-activations (bias added); writes the
// activated gates, the new cell and the new hidden state.
template <class T>
C10_HOST_DEVICE KF_CELL_INLINE void lltm_cell_forward(T g0, T g1, T g2, T c, T& i, T& o, T& z,
                                                      T& c_new, T& h_new) {
  i = sigmoid(g0);
  o = sigmoid(g1);
  z = elu(g2);
  c_new = c + z * i;
  h_new = tanh_(c_new) * o;
}

// One (b, s) element of the backward: from the incoming gradients and the
// saved activated gates and new cell, the pre-activation gradients and the
// gradient for the old cell. elu'(g2) = 1 where g2 > 0, else z + 1.
template <class T>
C10_HOST_DEVICE KF_CELL_INLINE void lltm_cell_backward(T grad_h, T grad_c, T i, T o, T z, T c_new,
                                                       T& d0, T& d1, T& d2, T& dc) {
  const T t = tanh_(c_new);
  dc = grad_c + grad_h * o * (T(1) - t * t);
  const T di = dc * z, dout = grad_h * t, dz = dc * i;
  d0 = di * i * (T(1) - i);
  d1 = dout * o * (T(1) - o);
  d2 = dz * (z > T(0) ? T(1) : z + T(1));
}

// What a backend's forward gate pass reads and writes ([B, 3S] / [B, S],
// contiguous): pre (X @ W^T, or its transpose W @ X^T [3S, B] where the
// backend asks for it), bias [3S], c -> gates (activated), c_new, h_new.
struct LltmForward {
  Tensor pre, bias, c, gates, c_new, h_new;
  int64_t batch, state;
  ScalarType dtype;
};

// A [B, S] operand read in place: element (b, s) at data[b * ld + s * inc],
// inc 1 (contiguous rows, any row stride) or 0 (one value per row).
struct RowView {
  Tensor t;
  int64_t ld, inc;
};

// What a backend's backward gate pass reads and writes: grad_h, grad_c,
// gates, c_new -> d_gates [B, 3S] (pre-activation gradients), d_c [B, S],
// and d_b [3S] (the column sums of d_gates) where the backend asks for it.
// grad_h and grad_c are read in place where they can be: in a sequence,
// grad_h is the h block of the next step's d_X (a row stride); from
// h'.sum() it is one value expanded to [B, S] (all strides 0).
struct LltmBackward {
  RowView grad_h, grad_c;
  Tensor gates, c_new, d_gates, d_c, d_b;  // d_b undefined: not asked for
  int64_t batch, state;
  ScalarType dtype;
};

// The gradients a backward computes: lltm_backward's bool[4] output_mask, in
// the forward's argument order (x, W, b, h). d_c always comes out: the pass
// that makes it also makes d_gates, which every other gradient needs.
struct LltmGrads {
  bool x, W, b, h;

  // The columns of W whose product with d_gates is d_X: [lo, hi) of [h, x].
  int64_t lo(int64_t state) const { return h ? 0 : state; }
  int64_t hi(int64_t state, int64_t width) const { return x ? width : state; }
};

namespace detail {

// `t` itself when it is contiguous: no call through the dispatcher.
inline Tensor contiguous(const Tensor& t) {
  return t.is_contiguous() ? t : torch::stable::contiguous(t);
}

// `t` [B, S] as a RowView: itself when its column stride is 1 or 0 (any row
// stride), else a contiguous copy.
inline RowView rows(const Tensor& t) {
  const int64_t ld = t.size(0) <= 1 ? t.size(1) : t.stride(0);
  if (t.size(1) <= 1 || t.stride(1) == 1) return {t, ld, 1};
  if (t.stride(1) == 0) return {t, ld, 0};
  return {torch::stable::contiguous(t), t.size(1), 1};
}

inline Tensor cat_columns(const Tensor& a, const Tensor& b) {
  std::array<StableIValue, 2> stack{torch::stable::detail::from(std::vector<Tensor>{a, b}),
                                    torch::stable::detail::from(int64_t{1})};
  if (torch_call_dispatcher("aten::cat", "", stack.data(), TORCH_ABI_VERSION) != AOTI_TORCH_SUCCESS)
    throw std::runtime_error("kernforge::lltm: aten::cat failed");
  return torch::stable::detail::to<Tensor>(stack[0]);
}

// W [3S, S+F] for x [B, F] and h [B, S] (both 2-D).
inline void check_weight(const char* op, const Tensor& W, const Tensor& x, const Tensor& h) {
  const int64_t state = h.size(1), features = x.size(1);
  if (W.dim() != 2 || W.size(0) != 3 * state || W.size(1) != state + features)
    fail(op,
         "W must be [3 * state, state + features] = [" + std::to_string(3 * state) + ", " +
             std::to_string(state + features) + "]",
         {{"W", &W}, {"x", &x}, {"h", &h}});
}

// x [B, F], W [3S, S+F], b [3S], h [B, S], c [B, S]: one dtype and device.
inline ScalarType check_lltm(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& h,
                             const Tensor& c) {
  const char* op = "lltm";
  for (const NamedTensor& a : {NamedTensor{"x", &x}, NamedTensor{"W", &W}, NamedTensor{"b", &b},
                               NamedTensor{"h", &h}, NamedTensor{"c", &c}}) {
    const int64_t want = a.second == &b ? 1 : 2;
    if (a.second->dim() != want)
      fail(op, std::string(a.first) + " must be " + std::to_string(want) + "-D", {a});
  }
  const ScalarType dtype =
      check_compatible(op, Dtypes::Floating, {{"x", &x}, {"W", &W}, {"h", &h}, {"c", &c}});
  const Meta mx(x), mb(b);
  if (!mb.same_device(mx)) fail(op, "expected all tensors on one device", {{"x", &x}, {"b", &b}});
  if (mb.dtype != mx.dtype) fail(op, "expected tensors of one dtype", {{"x", &x}, {"b", &b}});
  const int64_t batch = x.size(0), state = h.size(1);
  if (h.size(0) != batch || c.size(0) != batch)
    fail(op, "x, h and c must have one batch size", {{"x", &x}, {"h", &h}, {"c", &c}});
  if (c.size(1) != state) fail(op, "h and c must have one state size", {{"h", &h}, {"c", &c}});
  check_weight(op, W, x, h);
  if (b.size(0) != 3 * state)
    fail(op, "b must be [3 * state] = [" + std::to_string(3 * state) + "]", {{"b", &b}, {"h", &h}});
  return dtype;
}

// The backward's arguments: grad_h, grad_c, h, c_new [B, S], x [B, F],
// W [3S, S+F], gates [B, 3S]; one dtype and device.
inline ScalarType check_lltm_backward(const Tensor& grad_h, const Tensor& grad_c, const Tensor& x,
                                      const Tensor& W, const Tensor& h, const Tensor& c_new,
                                      const Tensor& gates, const std::vector<bool>& output_mask) {
  const char* op = "lltm_backward";
  if (output_mask.size() != 4)
    throw std::runtime_error(
        "kernforge::lltm_backward: output_mask must have 4 entries (x, W, b, h), got " +
        std::to_string(output_mask.size()));
  const ScalarType dtype =
      check_same(op, Dtypes::Floating,
                 {{"grad_h", &grad_h}, {"grad_c", &grad_c}, {"h", &h}, {"c_new", &c_new}});
  check_compatible(op, Dtypes::Floating, {{"h", &h}, {"x", &x}, {"W", &W}, {"gates", &gates}});
  if (h.dim() != 2 || x.dim() != 2 || x.size(0) != h.size(0))
    fail(op, "h must be [B, S] and x [B, F]", {{"x", &x}, {"h", &h}});
  check_weight(op, W, x, h);
  const int64_t batch = h.size(0), state = h.size(1);
  if (gates.dim() != 2 || gates.size(0) != batch || gates.size(1) != 3 * state)
    fail(op,
         "gates must be [batch, 3 * state] = [" + std::to_string(batch) + ", " +
             std::to_string(3 * state) + "]",
         {{"gates", &gates}, {"h", &h}});
  return dtype;
}

inline LltmGrads grads(const std::vector<bool>& mask) {
  return {mask[0], mask[1], mask[2], mask[3]};
}

// d_X: d_gates times the columns of W that `g` asks for ([B, 0] for none).
inline Tensor d_inputs(const Tensor& d_gates, const Tensor& W, LltmGrads g, int64_t state) {
  const int64_t lo = g.lo(state), hi = g.hi(state, W.size(1));
  if (lo >= hi) return empty(d_gates, {d_gates.size(0), 0});
  if (lo == 0 && hi == W.size(1)) return torch::stable::matmul(d_gates, W);
  Tensor columns = W;
  return torch::stable::matmul(d_gates, torch::stable::narrow(columns, 1, lo, hi - lo));
}

}  // namespace detail

// The forward through the backend's GEMM (torch::stable::matmul) and its
// pointwise pass `Gates` (which adds the bias), given pre = X W^T or, with
// kPreTransposed, pre^T = W X^T. Inputs already checked, the device already
// current. Returns (h_new, c_new, gates); gates are the activated [i, o, z],
// saved for the backward.
template <void (*Gates)(const LltmForward&), bool kPreTransposed = false>
std::tuple<Tensor, Tensor, Tensor> lltm_forward_gemm(const Tensor& x, const Tensor& W,
                                                     const Tensor& b, const Tensor& h,
                                                     const Tensor& c, ScalarType dtype) {
  const int64_t batch = x.size(0), state = h.size(1);
  const Tensor X = detail::cat_columns(h, x);
  const Tensor pre = kPreTransposed ? torch::stable::matmul(W, torch::stable::transpose(X, 0, 1))
                                    : torch::stable::matmul(X, torch::stable::transpose(W, 0, 1));
  LltmForward p{detail::contiguous(pre),
                detail::contiguous(b),
                detail::contiguous(c),
                empty(x, {batch, 3 * state}),
                empty(x, {batch, state}),
                empty(x, {batch, state}),
                batch,
                state,
                dtype};
  if (batch * state > 0) Gates(p);
  return {p.h_new, p.c_new, p.gates};
}

// The backward through the pointwise pass `Gates` (d_gates, d_c, and d_b with
// kGatesSumBias, else a sum over d_gates) and a GEMM for each of d_X and d_W,
// each only where `g` asks for it. Inputs already checked. Returns
// (d_X, d_W, d_b, d_c) as lltm_backward's schema says.
template <void (*Gates)(const LltmBackward&), bool kGatesSumBias = false>
std::tuple<Tensor, Tensor, Tensor, Tensor> lltm_backward_gemm(
    const Tensor& grad_h, const Tensor& grad_c, const Tensor& x, const Tensor& W, const Tensor& h,
    const Tensor& c_new, const Tensor& gates, LltmGrads g, ScalarType dtype) {
  const int64_t batch = h.size(0), state = h.size(1);
  LltmBackward p{detail::rows(grad_h),
                 detail::rows(grad_c),
                 detail::contiguous(gates),
                 detail::contiguous(c_new),
                 empty(x, {batch, 3 * state}),
                 empty(x, {batch, state}),
                 kGatesSumBias && g.b ? empty(x, {3 * state}) : Tensor(),
                 batch,
                 state,
                 dtype};
  if ((kGatesSumBias && g.b) || batch * state > 0) Gates(p);
  const Tensor d_X = detail::d_inputs(p.d_gates, W, g, state);
  const Tensor d_W = g.W ? torch::stable::matmul(torch::stable::transpose(p.d_gates, 0, 1),
                                                 detail::cat_columns(h, x))
                         : empty(x, {0});
  if (!g.b)
    p.d_b = empty(x, {0});
  else if (!kGatesSumBias)
    p.d_b = torch::stable::sum(p.d_gates, std::vector<int64_t>{0});
  return {d_X, d_W, p.d_b, p.d_c};
}

// The op entries for a backend whose only kernels are the pointwise passes.
template <class Launcher, void (*Gates)(const LltmForward&)>
std::tuple<Tensor, Tensor, Tensor> lltm_forward(const Tensor& x, const Tensor& W, const Tensor& b,
                                                const Tensor& h, const Tensor& c) {
  const ScalarType dtype = detail::check_lltm(x, W, b, h, c);
  typename Launcher::Guard guard(x);
  return lltm_forward_gemm<Gates>(x, W, b, h, c, dtype);
}

template <class Launcher, void (*Gates)(const LltmBackward&), bool kGatesSumBias = false>
std::tuple<Tensor, Tensor, Tensor, Tensor> lltm_backward(const Tensor& grad_h, const Tensor& grad_c,
                                                         const Tensor& x, const Tensor& W,
                                                         const Tensor& h, const Tensor& c_new,
                                                         const Tensor& gates,
                                                         std::vector<bool> output_mask) {
  const ScalarType dtype =
      detail::check_lltm_backward(grad_h, grad_c, x, W, h, c_new, gates, output_mask);
  typename Launcher::Guard guard(x);
  return lltm_backward_gemm<Gates, kGatesSumBias>(grad_h, grad_c, x, W, h, c_new, gates,
                                                  detail::grads(output_mask), dtype);
}

}  // namespace kernforge
