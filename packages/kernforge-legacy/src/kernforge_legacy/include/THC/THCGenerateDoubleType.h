/* THC/THCGenerateDoubleType.h: THC_GENERIC_FILE once for double (CudaDouble) (see kfl_generate.h).
 */
#define KFL_GENERATE 7
#include "kfl_generate.h"
