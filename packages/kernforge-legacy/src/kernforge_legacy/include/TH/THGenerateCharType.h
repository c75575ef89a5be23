/* TH/THGenerateCharType.h: TH_GENERIC_FILE once for int8_t (see kfl_generate.h). */
#define KFL_GENERATE 2
#include "kfl_generate.h"
