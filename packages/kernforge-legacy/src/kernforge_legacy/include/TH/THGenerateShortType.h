/* TH/THGenerateShortType.h: TH_GENERIC_FILE once for int16_t (see kfl_generate.h). */
#define KFL_GENERATE 3
#include "kfl_generate.h"
