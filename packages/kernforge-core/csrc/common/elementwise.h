// The plan every elementwise op runs from, on CPU and CUDA alike: argument 0 is
// the output, 1..NIN the inputs, all of one shape. With a row input, the last
// input is a 1-D tensor broadcast over the last dimension (a bias).
//
// The plan decides the path once, on the host:
//   flat      every full-size argument is contiguous: index i is element i
//             (vectorized when every full-size pointer is 16-byte aligned);
//   strided   anything else: dimensions are coalesced, then each element's
//             offsets come from StridedOffsets (any strides, stride 0 too).
#pragma once

#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/macros/Macros.h>

#include <array>
#include <cstdint>
#include <vector>

#include "alloc.h"
#include "dispatch.h"

#if defined(__CUDACC__)
#define KF_UNROLL _Pragma("unroll")
#else
#define KF_UNROLL
#endif

namespace kernforge {

constexpr int kMaxDims = 8;

enum class Path { Vectorized, Flat, Strided };

template <int NARGS>
struct StridedOffsets {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][NARGS] = {};

  // Offsets (in elements) of the element with row-major index `linear`.
  C10_HOST_DEVICE void at(int64_t linear, int64_t (&off)[NARGS]) const {
    KF_UNROLL
    for (int k = 0; k < NARGS; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      const int64_t idx = linear % size;
      linear /= size;
      KF_UNROLL
      for (int k = 0; k < NARGS; ++k) off[k] += idx * strides[d][k];
    }
  }
};

template <int NIN, bool ROW>
struct ElementwisePlan {
  static constexpr int kArgs = NIN + 1;
  static constexpr bool kRow = ROW;
  void* data[kArgs] = {};
  int64_t numel = 0;
  Path path = Path::Flat;
  int64_t row_size = 1;    // flat paths with ROW: size of the last dimension
  int64_t row_stride = 1;  // and the row input's stride
  StridedOffsets<kArgs> strided;
};

namespace detail {

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Coalesces the dimensions of `args` (all of `sizes`' shape; strides per
// argument) into `out`. Returns false when more than kMaxDims remain.
template <int NARGS>
bool coalesce(const std::vector<int64_t>& sizes,
              const std::array<std::vector<int64_t>, NARGS>& strides, StridedOffsets<NARGS>& out) {
  // Work from the innermost dimension outwards, skipping size-1 dimensions.
  std::vector<int64_t> sz;
  std::vector<std::array<int64_t, NARGS>> st;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    std::array<int64_t, NARGS> s;
    for (int k = 0; k < NARGS; ++k) s[k] = strides[k][d];
    if (!sz.empty()) {
      bool merge = true;
      for (int k = 0; k < NARGS; ++k) merge = merge && s[k] == st.back()[k] * sz.back();
      if (merge) {
        sz.back() *= sizes[d];
        continue;
      }
    }
    sz.push_back(sizes[d]);
    st.push_back(s);
  }
  if (sz.size() > static_cast<size_t>(kMaxDims)) return false;
  out.ndim = static_cast<int>(sz.size());
  for (int d = 0; d < out.ndim; ++d) {  // back to outermost-first order
    out.sizes[d] = sz[out.ndim - 1 - d];
    for (int k = 0; k < NARGS; ++k) out.strides[d][k] = st[out.ndim - 1 - d][k];
  }
  return true;
}

}  // namespace detail

// `out` must be a fresh contiguous tensor of the inputs' shape. `in` may be
// replaced by contiguous copies in the rare case of more than kMaxDims
// non-mergeable dimensions; the caller keeps `in` alive until the launch.
template <int NIN, bool ROW>
ElementwisePlan<NIN, ROW> plan_elementwise(const Tensor& out, std::array<Tensor, NIN>& in) {
  constexpr int kFull = ROW ? NIN - 1 : NIN;  // inputs of the output's shape
  ElementwisePlan<NIN, ROW> p;
  p.numel = out.numel();
  const int64_t ndim = out.dim();

  bool contiguous = true;
  for (int k = 0; k < kFull; ++k) contiguous = contiguous && in[k].is_contiguous();
  if (ROW) {
    p.row_size = in[NIN - 1].size(0);
    p.row_stride = in[NIN - 1].stride(0);
  }

  if (!contiguous) {
    std::vector<int64_t> sizes(ndim);
    std::array<std::vector<int64_t>, NIN + 1> strides;
    for (auto& s : strides) s.assign(ndim, 0);
    for (int64_t d = 0; d < ndim; ++d) {
      sizes[d] = out.size(d);
      strides[0][d] = out.stride(d);
      for (int k = 0; k < kFull; ++k) strides[k + 1][d] = in[k].stride(d);
    }
    if (ROW) strides[NIN][ndim - 1] = p.row_stride;  // broadcast: stride 0 elsewhere
    if (detail::coalesce<NIN + 1>(sizes, strides, p.strided)) {
      p.path = Path::Strided;
    } else {
      for (int k = 0; k < kFull; ++k) in[k] = torch::stable::contiguous(in[k]);
      contiguous = true;
    }
  }

  p.data[0] = out.data_ptr();
  for (int k = 0; k < NIN; ++k) p.data[k + 1] = in[k].data_ptr();
  if (contiguous) {
    bool aligned = true;
    for (int k = 0; k <= kFull; ++k) aligned = aligned && detail::aligned16(p.data[k]);
    p.path = aligned ? Path::Vectorized : Path::Flat;
  }
  return p;
}

}  // namespace kernforge
