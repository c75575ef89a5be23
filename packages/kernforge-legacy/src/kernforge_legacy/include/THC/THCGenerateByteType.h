/* THC/THCGenerateByteType.h: THC_GENERIC_FILE once for uint8_t (CudaByte) (see kfl_generate.h). */
#define KFL_GENERATE 1
#include "kfl_generate.h"
