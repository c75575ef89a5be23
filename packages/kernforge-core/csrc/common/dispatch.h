// dtype dispatch without macros: `dispatch<Dtypes::Floating>(t, f)` calls
// f(TypeTag<scalar_t>{}) for the tensor's dtype. Half and bfloat16 compute in
// float (opmath_t) and round once, when the result is stored.
#pragma once

#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "checks.h"

namespace kernforge {

template <class T>
struct TypeTag {
  using type = T;
};

template <class T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<c10::Half> {
  using type = float;
};
template <>
struct OpMath<c10::BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename OpMath<T>::type;

template <Dtypes allowed, class F>
void dispatch(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::Float: return f(TypeTag<float>{});
    case ScalarType::Double: return f(TypeTag<double>{});
    case ScalarType::Half: return f(TypeTag<c10::Half>{});
    case ScalarType::BFloat16: return f(TypeTag<c10::BFloat16>{});
    case ScalarType::Int:
      if constexpr (allowed == Dtypes::FloatingAndInt) return f(TypeTag<int32_t>{});
      break;
    case ScalarType::Long:
      if constexpr (allowed == Dtypes::FloatingAndInt) return f(TypeTag<int64_t>{});
      break;
    default: break;
  }
  throw std::runtime_error(std::string("kernforge: no kernel for dtype ") + dtype_name(t));
}

}  // namespace kernforge
