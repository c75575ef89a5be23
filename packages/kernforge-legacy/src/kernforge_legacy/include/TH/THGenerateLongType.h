/* TH/THGenerateLongType.h: TH_GENERIC_FILE once for int64_t (see kfl_generate.h). */
#define KFL_GENERATE 5
#include "kfl_generate.h"
