/* THC/THCGenerateDoubleType.h: the generic file THC_GENERIC_FILE names, compiled once for
 * double (Double, CudaDouble): real, accreal, Real, CReal and THC_REAL_IS_DOUBLE defined
 * while it is included (see THGenerateAllTypes.h). */
#ifndef THC_GENERIC_FILE
#error "define THC_GENERIC_FILE (the generic file) before including THCGenerateDoubleType.h"
#endif
#define real double
#define accreal double
#define Real Double
#define CReal CudaDouble
#define THC_REAL_IS_DOUBLE
#define TH_CONVERT_REAL_TO_ACCREAL(_val) (accreal)(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) (real)(_val)
#line 1 THC_GENERIC_FILE
#include THC_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef CReal
#undef THC_REAL_IS_DOUBLE
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#ifndef THCGenerateManyTypes
#undef THC_GENERIC_FILE
#endif
