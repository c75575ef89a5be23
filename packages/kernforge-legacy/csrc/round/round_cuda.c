/* The straight-through round op over THC tensors, in the 2017 style: checks
 * and resizes here, the kernel in round_kernel.cu. */
#include <THC/THC.h>

#include "round_kernel.h"

extern THCState* state;

#define ROUND_STE_FORWARD_CUDA(NAME, Tensor, LAUNCHER)                                \
  int NAME(Tensor* input, Tensor* output) {                                           \
    THArgCheck(Tensor##_isContiguous(state, input), 1, "input must be contiguous");   \
    Tensor##_resizeAs(state, output, input);                                          \
    THArgCheck(Tensor##_isContiguous(state, output), 2, "output must be contiguous"); \
    LAUNCHER(Tensor##_data(state, input), Tensor##_data(state, output),               \
             Tensor##_nElement(state, input), THCState_getCurrentStream(state));      \
    return 1;                                                                         \
  }

ROUND_STE_FORWARD_CUDA(round_ste_forward_cuda, THCudaTensor, RoundSTEForwardLauncher)
ROUND_STE_FORWARD_CUDA(round_ste_forward_cuda_double, THCudaDoubleTensor,
                       RoundSTEForwardDoubleLauncher)
ROUND_STE_FORWARD_CUDA(round_ste_forward_cuda_half, THCudaHalfTensor, RoundSTEForwardHalfLauncher)
ROUND_STE_FORWARD_CUDA(round_ste_forward_cuda_bfloat16, THCudaBFloat16Tensor,
                       RoundSTEForwardBFloat16Launcher)
