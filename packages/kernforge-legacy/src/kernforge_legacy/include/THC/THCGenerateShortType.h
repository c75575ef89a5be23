/* THC/THCGenerateShortType.h: THC_GENERIC_FILE once for int16_t (CudaShort) (see kfl_generate.h).
 */
#define KFL_GENERATE 3
#include "kfl_generate.h"
