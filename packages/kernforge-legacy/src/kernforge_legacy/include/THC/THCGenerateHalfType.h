/* THC/THCGenerateHalfType.h: THC_GENERIC_FILE once for THHalf (CudaHalf) (see kfl_generate.h). */
#define KFL_GENERATE 8
#include "kfl_generate.h"
