// Fresh contiguous tensors from torch's allocator (the caching allocator on
// CUDA), straight through the C shim: torch::stable::new_empty is a boxed
// dispatcher call, which costs microseconds per output of a host-bound op.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/tensor.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <vector>

namespace kernforge {

// A contiguous tensor of `shape` (ndim sizes) on `like`'s device, of
// `dtype` (the C shim's code; -1: `like`'s dtype).
inline torch::stable::Tensor empty(const torch::stable::Tensor& like, const int64_t* shape,
                                   int64_t ndim, int32_t dtype = -1) {
  constexpr int64_t kStack = 8;
  int64_t on_stack[kStack];
  std::vector<int64_t> heap;
  int64_t* strides = on_stack;
  if (ndim > kStack) {
    heap.resize(ndim);
    strides = heap.data();
  }
  int64_t stride = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape[d] > 1 ? shape[d] : 1;
  }
  int32_t device_type, device_index;
  AtenTensorHandle out = nullptr;
  if ((dtype < 0 && aoti_torch_get_dtype(like.get(), &dtype) != AOTI_TORCH_SUCCESS) ||
      aoti_torch_get_device_type(like.get(), &device_type) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_device_index(like.get(), &device_index) != AOTI_TORCH_SUCCESS ||
      aoti_torch_empty_strided(ndim, shape, strides, dtype, device_type, device_index, &out) !=
          AOTI_TORCH_SUCCESS)
    throw std::runtime_error("kernforge: could not allocate an output tensor");
  return torch::stable::Tensor(out);
}

inline torch::stable::Tensor empty(const torch::stable::Tensor& like,
                                   std::initializer_list<int64_t> shape, int32_t dtype = -1) {
  return empty(like, shape.begin(), static_cast<int64_t>(shape.size()), dtype);
}

// Of `like`'s shape.
inline torch::stable::Tensor empty_contiguous(const torch::stable::Tensor& like) {
  const auto shape = like.sizes();
  return empty(like, shape.data(), static_cast<int64_t>(shape.size()));
}

}  // namespace kernforge
