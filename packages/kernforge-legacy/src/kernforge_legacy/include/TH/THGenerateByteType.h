/* TH/THGenerateByteType.h: the generic file TH_GENERIC_FILE names, compiled once for
 * uint8_t (Byte): real, accreal, Real and TH_REAL_IS_BYTE defined
 * while it is included (see THGenerateAllTypes.h). */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including THGenerateByteType.h"
#endif
#define real uint8_t
#define accreal int64_t
#define Real Byte
#define TH_REAL_IS_BYTE
#define TH_CONVERT_REAL_TO_ACCREAL(_val) (accreal)(_val)
#define TH_CONVERT_ACCREAL_TO_REAL(_val) (real)(_val)
#line 1 TH_GENERIC_FILE
#include TH_GENERIC_FILE
#undef real
#undef accreal
#undef Real
#undef TH_REAL_IS_BYTE
#undef TH_CONVERT_REAL_TO_ACCREAL
#undef TH_CONVERT_ACCREAL_TO_REAL
#ifndef THGenerateManyTypes
#undef TH_GENERIC_FILE
#endif
