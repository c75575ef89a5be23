/* THC/THCGenerateLongType.h: THC_GENERIC_FILE once for int64_t (CudaLong) (see kfl_generate.h). */
#define KFL_GENERATE 5
#include "kfl_generate.h"
