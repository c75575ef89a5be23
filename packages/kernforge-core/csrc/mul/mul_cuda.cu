#include <torch/csrc/stable/library.h>

#include "common/elementwise_cuda.cuh"
#include "mul/mul_math.h"

STABLE_TORCH_LIBRARY_IMPL(kernforge, CUDA, m) {
  m.impl("mul", TORCH_BOX(&kernforge::mul<kernforge::cuda::Launcher>));
}
