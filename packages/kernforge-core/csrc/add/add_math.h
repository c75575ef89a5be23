// add(a, b, alpha) = a + alpha * b, and its backward for b, alpha * grad: the
// math, and the entries both backends instantiate.
#pragma once

#include <cmath>
#include <string>

#include "common/checks.h"
#include "common/elementwise_op.h"

namespace kernforge {

template <class T>
struct AddFn {
  T alpha;
  C10_HOST_DEVICE T operator()(T a, T b) const { return a + alpha * b; }
};

template <class T>
struct ScaleFn {
  T alpha;
  C10_HOST_DEVICE T operator()(T g) const { return alpha * g; }
};

// Integer tensors take only an integral alpha (as torch.add does).
inline void check_alpha(const char* op, ScalarType dt, double alpha) {
  const bool integral = dt == ScalarType::Int || dt == ScalarType::Long;
  if (integral && !(std::isfinite(alpha) && std::trunc(alpha) == alpha))
    throw std::runtime_error(std::string("kernforge::") + op + ": alpha must be an integer for " +
                             dtype_name(dt) + " tensors, got " + std::to_string(alpha));
}

template <class Launcher>
Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  const ScalarType dtype = check_same("add", Dtypes::FloatingAndInt, {{"a", &a}, {"b", &b}});
  check_alpha("add", dtype, alpha);
  typename Launcher::Guard guard(a);
  return run_elementwise<Launcher, Dtypes::FloatingAndInt>(dtype, a, {a, b}, [alpha](auto tag) {
    using acc_t = typename decltype(tag)::type;
    return AddFn<acc_t>{static_cast<acc_t>(alpha)};
  });
}

// The gradient of add for b: alpha * grad (the gradient for a is grad itself).
template <class Launcher>
Tensor add_backward(const Tensor& grad, double alpha) {
  const ScalarType dtype = check_same("add_backward", Dtypes::FloatingAndInt, {{"grad", &grad}});
  check_alpha("add_backward", dtype, alpha);
  typename Launcher::Guard guard(grad);
  return run_elementwise<Launcher, Dtypes::FloatingAndInt>(dtype, grad, {grad}, [alpha](auto tag) {
    using acc_t = typename decltype(tag)::type;
    return ScaleFn<acc_t>{static_cast<acc_t>(alpha)};
  });
}

}  // namespace kernforge
