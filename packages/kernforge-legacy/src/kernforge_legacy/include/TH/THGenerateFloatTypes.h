/* TH/THGenerateFloatTypes.h: TH_GENERIC_FILE for float and double (see
 * THGenerateAllTypes.h). */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including THGenerateFloatTypes.h"
#endif
#define THGenerateManyTypes
#include "THGenerateDoubleType.h"
#include "THGenerateFloatType.h"
#undef THGenerateManyTypes
#undef TH_GENERIC_FILE
