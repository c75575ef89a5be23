// THC_sleep (THCSleep.h): a kernel that spins for a number of clock cycles on
// the current stream, for tests of stream ordering. Built with nvcc into the
// runtime library of a CUDA build.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

struct THCState;
extern "C" cudaStream_t THCState_getCurrentStream(THCState* state);
extern "C" void __THCudaCheck(cudaError_t err, const char* file, int line);

namespace {
__global__ void spin(int64_t cycles) {
  const int64_t start = clock64();
  while (clock64() - start < cycles) {
  }
}
}  // namespace

extern "C" void THC_sleep(THCState* state, int64_t cycles) {
  if (cycles < 0)
    throw std::runtime_error("THC_sleep: cycles must be >= 0, got " + std::to_string(cycles));
  spin<<<1, 1, 0, THCState_getCurrentStream(state)>>>(cycles);
  __THCudaCheck(cudaGetLastError(), __FILE__, __LINE__);
}
