// fused_relu_add(x, y, bias, bias_scalar) = relu(x) + y + bias[..., c] + bias_scalar
// in one pass (bias optional, broadcast over the last dimension), and its
// backward: grad_x = grad where x > 0 else 0 (torch's relu backward, NaN x
// passing grad through), grad_y = grad, grad_bias = grad summed over all but
// the last dimension. The math, and the entries both backends instantiate.
#pragma once

#include <optional>
#include <tuple>

#include "common/checks.h"
#include "common/elementwise_op.h"

namespace kernforge {

template <class T>
C10_HOST_DEVICE inline T relu(T x) {
  return x < T(0) ? T(0) : x;  // NaN stays NaN
}

template <class T>
struct ReluAddFn {
  T bias_scalar;
  C10_HOST_DEVICE T operator()(T x, T y) const { return relu(x) + y + bias_scalar; }
  C10_HOST_DEVICE T operator()(T x, T y, T bias) const {
    return relu(x) + y + (bias + bias_scalar);
  }
};

struct ReluGradFn {
  template <class T>
  C10_HOST_DEVICE T operator()(T grad, T x) const {
    return x <= T(0) ? T(0) : grad;
  }
};

template <class Launcher>
Tensor fused_relu_add(const Tensor& x, const Tensor& y, std::optional<Tensor> bias,
                      double bias_scalar) {
  const ScalarType dtype = check_same("fused_relu_add", Dtypes::Floating, {{"x", &x}, {"y", &y}});
  if (bias) check_row_vector("fused_relu_add", {"bias", &*bias}, {"x", &x});
  typename Launcher::Guard guard(x);
  auto make = [bias_scalar](auto tag) {
    using acc_t = typename decltype(tag)::type;
    return ReluAddFn<acc_t>{static_cast<acc_t>(bias_scalar)};
  };
  if (bias) return run_elementwise<Launcher, Dtypes::Floating, true>(dtype, x, {x, y, *bias}, make);
  return run_elementwise<Launcher, Dtypes::Floating>(dtype, x, {x, y}, make);
}

// The bias-gradient problem, set up once for both backends: grad and x as
// contiguous [rows, cols] (cols = the last dimension), grad_x and grad_bias
// allocated. A backend's pass writes grad_x and grad_bias from it.
struct BiasGradProblem {
  Tensor grad, x, grad_x, grad_bias;
  int64_t rows, cols;
  ScalarType dtype;
};

// Returns (grad_x, grad_bias); grad_bias is an empty [0] tensor unless
// bias_grad. `WithBias` is the backend's single fused pass over a non-empty
// problem: it writes grad_x and reduces grad over all but the last dimension.
template <class Launcher, void (*WithBias)(const BiasGradProblem&)>
std::tuple<Tensor, Tensor> fused_relu_add_backward(const Tensor& grad, const Tensor& x,
                                                   bool bias_grad) {
  const ScalarType dtype =
      check_same("fused_relu_add_backward", Dtypes::Floating, {{"grad", &grad}, {"x", &x}});
  if (bias_grad && x.dim() == 0)
    fail("fused_relu_add_backward", "a bias gradient needs x with at least one dimension",
         {{"x", &x}});
  typename Launcher::Guard guard(x);
  if (!bias_grad) {
    Tensor grad_x = run_elementwise<Launcher, Dtypes::Floating>(dtype, grad, {grad, x},
                                                                [](auto) { return ReluGradFn{}; });
    return {grad_x, torch::stable::new_empty(x, {0})};
  }
  const int64_t cols = x.size(x.dim() - 1);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const Tensor xc = torch::stable::contiguous(x);
  BiasGradProblem p{torch::stable::contiguous(grad),
                    xc,
                    empty_contiguous(xc),
                    torch::stable::new_empty(xc, {cols}),
                    rows,
                    cols,
                    dtype};
  if (rows == 0)
    torch::stable::zero_(p.grad_bias);  // a sum over nothing
  else if (cols > 0)
    WithBias(p);
  return {p.grad_x, p.grad_bias};
}

}  // namespace kernforge
