/* THC/THCGenerateIntType.h: THC_GENERIC_FILE once for int32_t (CudaInt) (see kfl_generate.h). */
#define KFL_GENERATE 4
#include "kfl_generate.h"
