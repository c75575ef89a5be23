/* TH/THGenerateDoubleType.h: the generic file TH_GENERIC_FILE names, compiled once for
 * double (Double): real, accreal, Real and TH_REAL_IS_DOUBLE defined
 * while it is included (see THGenerateAllTypes.h). */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including THGenerateDoubleType.h"
#endif
#define real double
#define accreal double
#define Real Double
#define TH_REAL_IS_DOUBLE
#define TH_CONVERT_REAL_TO_ACCREAL(_val) (accreal)(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) (real)(_val)
#line 1 TH_GENERIC_FILE
#include TH_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef TH_REAL_IS_DOUBLE
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#ifndef THGenerateManyTypes
#undef TH_GENERIC_FILE
#endif
