// What every elementwise op entry does after its checks: allocate a contiguous
// output through torch, plan the path, dispatch on dtype and launch on the
// backend. `Launcher` is cpu::Launcher (elementwise_cpu.h) or
// cuda::Launcher (elementwise_cuda.cuh); `make(TypeTag<opmath_t>{})` builds the
// op's functor for the opmath type.
#pragma once

#include <array>
#include <utility>

#include "elementwise.h"

namespace kernforge {

namespace detail {
template <size_t N, size_t... K>
std::array<Tensor, N> copy_array(const Tensor (&in)[N], std::index_sequence<K...>) {
  return {in[K]...};
}
}  // namespace detail

template <class Launcher, Dtypes allowed, bool ROW = false, size_t NIN, class MakeFn>
Tensor run_elementwise(ScalarType dtype, const Tensor& like, const Tensor (&inputs)[NIN],
                       const MakeFn& make) {
  auto in = detail::copy_array(inputs, std::make_index_sequence<NIN>{});
  Tensor out = empty_contiguous(like);
  const auto plan = plan_elementwise<static_cast<int>(NIN), ROW>(out, in);
  dispatch<allowed>(dtype, [&](auto tag) {
    using scalar_t = typename decltype(tag)::type;
    Launcher::template elementwise<scalar_t>(plan, like, make(TypeTag<opmath_t<scalar_t>>{}));
  });
  return out;
}

}  // namespace kernforge
