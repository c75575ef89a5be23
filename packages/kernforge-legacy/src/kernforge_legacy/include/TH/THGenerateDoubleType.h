/* TH/THGenerateDoubleType.h: TH_GENERIC_FILE once for double (see kfl_generate.h). */
#define KFL_GENERATE 7
#include "kfl_generate.h"
