// The current CUDA stream (through the stable C shim), the device's
// attributes, and a vector of values for one load.
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

// Whether `stream` is capturing into a CUDA graph (true where that cannot be
// told): work queued there runs at replay, where the host's time is not spent.
inline bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
         capture != cudaStreamCaptureStatusNone;
}

// ask(device), a nonzero int, asked once per device (for the first 64
// devices; past them, every call). Each call site's `ask` is a type of its
// own, and so has a cache of its own.
template <class Ask>
int once_per_device(int32_t device, const Ask& ask) {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached];
  const bool cached = device >= 0 && device < kCached;
  int n = cached ? cache[device].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    n = ask(device);
    if (cached) cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

// An attribute of `device`, asked once (per attribute and device).
template <cudaDeviceAttr Attr>
int device_attribute(int32_t device) {
  return once_per_device(device, [](int32_t d) {
    int n = 0;
    STD_CUDA_CHECK(cudaDeviceGetAttribute(&n, Attr, d));
    return n;
  });
}

inline int sm_count(int32_t device) {
  return device_attribute<cudaDevAttrMultiProcessorCount>(device);
}

// The compute capability of the binary of `Kernel` that runs on `device`
// (10 major + minor), asked once per device (a process may hold GPUs of
// different architectures); `device` is the current device.
template <auto Kernel>
int binary_version(int32_t device) {
  return once_per_device(device, [](int32_t) {
    cudaFuncAttributes attributes{};
    STD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, Kernel));
    return attributes.binaryVersion;
  });
}

// Blocks of `threads` threads that all SMs of `device` hold at once for
// `Kernel` with `smem` bytes of dynamic shared memory: one full wave. Cached
// per kernel (devices of a process are assumed to share the first one's).
template <auto Kernel>
int64_t resident_blocks(int threads, size_t smem, int32_t device) {
  static std::atomic<int> per_sm{0};
  int n = per_sm.load(std::memory_order_relaxed);
  if (n == 0) {
    STD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, smem));
    n = n > 0 ? n : 1;
    per_sm.store(n, std::memory_order_relaxed);
  }
  return static_cast<int64_t>(n) * sm_count(device);
}

// V consecutive values of T in one load (V T's aligned to V * sizeof(T)).
template <int V, class T>
struct alignas(V * sizeof(T)) Packet {
  T v[V];
};

}  // namespace kernforge::cuda
