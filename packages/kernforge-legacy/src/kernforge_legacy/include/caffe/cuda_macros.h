/* caffe/cuda_macros.h: the CUDA kernel macros of Caffe, which 2017-era
 * extension kernels were written with, made safe for today's sizes:
 *
 *   CUDA_KERNEL_LOOP(i, n)   grid-stride loop; i is int64_t, so n may pass 2^31
 *   CAFFE_CUDA_NUM_THREADS   threads per block (512)
 *   CAFFE_GET_BLOCKS(n)      blocks for n elements, at least 1 and at most
 *                            CAFFE_MAXIMUM_NUM_BLOCKS = 65535, the old grid
 *                            limit (the loop covers the rest: from 2^25
 *                            elements on, each thread takes several)
 *   CUDA_POST_KERNEL_CHECK   after a launch: raises a Python RuntimeError naming
 *                            the launching function, its file and line, and the
 *                            CUDA error, instead of printing and carrying on
 *   CUDA_CHECK(call)         the same for any CUDA runtime call
 *
 * For .cu files (C++). The macros a source defines itself win over these. */
#ifndef KERNFORGE_LEGACY_CAFFE_CUDA_MACROS_H
#define KERNFORGE_LEGACY_CAFFE_CUDA_MACROS_H

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kernforge_legacy {

[[noreturn]] inline void raise_cuda_error(cudaError_t err, const char* what, const char* where,
                                          const char* file, int line) {
  throw std::runtime_error(std::string(what) + " in " + where + " (" + file + ":" +
                           std::to_string(line) + "): " + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err));
}

// Takes (and so clears) the launch error, so the next check does not see it again.
inline void post_kernel_check(const char* where, const char* file, int line) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) raise_cuda_error(err, "CUDA kernel launch failed", where, file, line);
}

}  // namespace kernforge_legacy

#ifndef CUDA_KERNEL_LOOP
#define CUDA_KERNEL_LOOP(i, n)                                                  \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; \
       i < static_cast<int64_t>(n); i += static_cast<int64_t>(blockDim.x) * gridDim.x)
#endif

#ifndef CAFFE_CUDA_NUM_THREADS
#define CAFFE_CUDA_NUM_THREADS 512
#endif

#ifndef CAFFE_MAXIMUM_NUM_BLOCKS
#define CAFFE_MAXIMUM_NUM_BLOCKS 65535
#endif

#ifndef CAFFE_GET_BLOCKS
inline int CAFFE_GET_BLOCKS(int64_t n) {
  const int64_t blocks = (n + CAFFE_CUDA_NUM_THREADS - 1) / CAFFE_CUDA_NUM_THREADS;
  return blocks < 1                          ? 1
         : blocks > CAFFE_MAXIMUM_NUM_BLOCKS ? CAFFE_MAXIMUM_NUM_BLOCKS
                                             : static_cast<int>(blocks);
}
#endif

#ifndef CUDA_CHECK
#define CUDA_CHECK(call)                                                                          \
  do {                                                                                            \
    const cudaError_t kfl_err = (call);                                                           \
    if (kfl_err != cudaSuccess)                                                                   \
      kernforge_legacy::raise_cuda_error(kfl_err, #call " failed", __func__, __FILE__, __LINE__); \
  } while (0)
#endif

#ifndef CUDA_POST_KERNEL_CHECK
#define CUDA_POST_KERNEL_CHECK kernforge_legacy::post_kernel_check(__func__, __FILE__, __LINE__)
#endif

#endif  // KERNFORGE_LEGACY_CAFFE_CUDA_MACROS_H
