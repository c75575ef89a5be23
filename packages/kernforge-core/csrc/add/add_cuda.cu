#include <torch/csrc/stable/library.h>

#include "add/add_math.h"
#include "common/elementwise_cuda.cuh"

STABLE_TORCH_LIBRARY_IMPL(kernforge, CUDA, m) {
  m.impl("add", TORCH_BOX(&kernforge::add<kernforge::cuda::Launcher>));
  m.impl("add_backward", TORCH_BOX(&kernforge::add_backward<kernforge::cuda::Launcher>));
}
