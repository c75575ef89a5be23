#include <torch/csrc/stable/library.h>

#include "common/elementwise_cpu.h"
#include "mul/mul_math.h"

STABLE_TORCH_LIBRARY_IMPL(kernforge, CPU, m) {
  m.impl("mul", TORCH_BOX(&kernforge::mul<kernforge::cpu::Launcher>));
}
