/* TH/THGenerateIntType.h: TH_GENERIC_FILE once for int32_t (see kfl_generate.h). */
#define KFL_GENERATE 4
#include "kfl_generate.h"
