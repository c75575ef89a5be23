// mul(a, b) = a * b: the math, and the entry both backends instantiate.
#pragma once

#include "common/checks.h"
#include "common/elementwise_op.h"

namespace kernforge {

struct MulFn {
  template <class T>
  C10_HOST_DEVICE T operator()(T a, T b) const {
    return a * b;
  }
};

template <class Launcher>
Tensor mul(const Tensor& a, const Tensor& b) {
  const ScalarType dtype = check_same("mul", Dtypes::Floating, {{"a", &a}, {"b", &b}});
  typename Launcher::Guard guard(a);
  return run_elementwise<Launcher, Dtypes::Floating>(dtype, a, {a, b},
                                                     [](auto) { return MulFn{}; });
}

}  // namespace kernforge
