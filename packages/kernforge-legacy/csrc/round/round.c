/* The straight-through round op over TH CPU tensors, written as 2017-era
 * torch.utils.ffi extensions were: one C function per tensor type. */
#include <TH/TH.h>

static const THHalf kHalfOne = {0x3C00}, kHalfZero = {0};
static const THBFloat16 kBFloat16One = {0x3F80}, kBFloat16Zero = {0};

#define ROUND_STE_FORWARD(NAME, Tensor, real, VALUE, ONE, ZERO)                \
  int NAME(Tensor* input, Tensor* output) {                                    \
    ptrdiff_t i, n;                                                            \
    const real* x;                                                             \
    real* y;                                                                   \
    THArgCheck(Tensor##_isContiguous(input), 1, "input must be contiguous");   \
    Tensor##_resizeAs(output, input);                                          \
    THArgCheck(Tensor##_isContiguous(output), 2, "output must be contiguous"); \
    n = Tensor##_nElement(input);                                              \
    x = Tensor##_data(input);                                                  \
    y = Tensor##_data(output);                                                 \
    for (i = 0; i < n; i++) y[i] = VALUE(x[i]) >= 0.5f ? ONE : ZERO;           \
    return 1;                                                                  \
  }

#define AS_IS(v) (v)
ROUND_STE_FORWARD(round_ste_forward, THFloatTensor, float, AS_IS, 1.0f, 0.0f)
ROUND_STE_FORWARD(round_ste_forward_double, THDoubleTensor, double, AS_IS, 1.0, 0.0)
ROUND_STE_FORWARD(round_ste_forward_half, THHalfTensor, THHalf, TH_half2float, kHalfOne, kHalfZero)
ROUND_STE_FORWARD(round_ste_forward_bfloat16, THBFloat16Tensor, THBFloat16, TH_bfloat162float,
                  kBFloat16One, kBFloat16Zero)
