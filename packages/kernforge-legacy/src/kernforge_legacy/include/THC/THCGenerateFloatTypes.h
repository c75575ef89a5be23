/* THC/THCGenerateFloatTypes.h: THC_GENERIC_FILE for half, float and double
 * (see THCGenerateAllTypes.h). */
#ifndef THC_GENERIC_FILE
#error "define THC_GENERIC_FILE (the generic file) before including THCGenerateFloatTypes.h"
#endif
#define THCGenerateManyTypes
#include "THCGenerateDoubleType.h"
#include "THCGenerateFloatType.h"
#include "THCGenerateHalfType.h"
#undef THCGenerateManyTypes
#undef THC_GENERIC_FILE
