// The current CUDA stream and the SM count, through the stable C shim.
#pragma once

#include <cuda_runtime.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/macros.h>

#include <atomic>
#include <stdexcept>

namespace kernforge::cuda {

inline cudaStream_t current_stream(int32_t device) {
  void* stream = nullptr;
  if (aoti_torch_get_current_cuda_stream(device, &stream) != AOTI_TORCH_SUCCESS)
    throw std::runtime_error("kernforge: could not get the current CUDA stream");
  return static_cast<cudaStream_t>(stream);
}

inline int sm_count(int32_t device) {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached];
  const bool cached = device >= 0 && device < kCached;
  int n = cached ? cache[device].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    STD_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    if (cached) cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace kernforge::cuda
