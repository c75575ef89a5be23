/* TH/THGenerateHalfType.h: the generic file TH_GENERIC_FILE names, compiled once for
 * THHalf (Half): real, accreal, Real and TH_REAL_IS_HALF defined
 * while it is included (see THGenerateAllTypes.h). */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including THGenerateHalfType.h"
#endif
#define real THHalf
#define accreal float
#define Real Half
#define TH_REAL_IS_HALF
#define TH_CONVERT_REAL_TO_ACCREAL(_val) TH_half2float(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) TH_float2half(_val)
#line 1 TH_GENERIC_FILE
#include TH_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef TH_REAL_IS_HALF
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#ifndef THGenerateManyTypes
#undef TH_GENERIC_FILE
#endif
