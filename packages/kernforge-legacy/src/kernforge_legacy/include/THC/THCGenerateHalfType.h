/* THC/THCGenerateHalfType.h: the generic file THC_GENERIC_FILE names, compiled once for
 * THHalf (Half, CudaHalf): real, accreal, Real, CReal and THC_REAL_IS_HALF defined
 * while it is included (see THGenerateAllTypes.h). */
#ifndef THC_GENERIC_FILE
#error "define THC_GENERIC_FILE (the generic file) before including THCGenerateHalfType.h"
#endif
#define real THHalf
#define accreal float
#define Real Half
#define CReal CudaHalf
#define THC_REAL_IS_HALF
#define TH_CONVERT_REAL_TO_ACCREAL(_val) TH_half2float(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) TH_float2half(_val)
#line 1 THC_GENERIC_FILE
#include THC_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef CReal
#undef THC_REAL_IS_HALF
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#ifndef THCGenerateManyTypes
#undef THC_GENERIC_FILE
#endif
