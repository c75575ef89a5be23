/* THC/THCGenerateFloatType.h: THC_GENERIC_FILE once for float (Cuda) (see kfl_generate.h). */
#define KFL_GENERATE 6
#include "kfl_generate.h"
