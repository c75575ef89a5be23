#include <torch/csrc/stable/library.h>

#include "add/add_math.h"
#include "common/elementwise_cpu.h"

STABLE_TORCH_LIBRARY_IMPL(kernforge, CPU, m) {
  m.impl("add", TORCH_BOX(&kernforge::add<kernforge::cpu::Launcher>));
  m.impl("add_backward", TORCH_BOX(&kernforge::add_backward<kernforge::cpu::Launcher>));
}
