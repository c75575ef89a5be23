/* TH/THGenerateFloatType.h: TH_GENERIC_FILE once for float (see kfl_generate.h). */
#define KFL_GENERATE 6
#include "kfl_generate.h"
