/* TH/THGenerateHalfType.h: TH_GENERIC_FILE once for THHalf (see kfl_generate.h). */
#define KFL_GENERATE 8
#include "kfl_generate.h"
