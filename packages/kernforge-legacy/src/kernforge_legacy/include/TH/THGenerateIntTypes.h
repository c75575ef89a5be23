/* TH/THGenerateIntTypes.h: TH_GENERIC_FILE for the integer types (see
 * THGenerateAllTypes.h). */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including THGenerateIntTypes.h"
#endif
#define THGenerateManyTypes
#include "THGenerateByteType.h"
#include "THGenerateCharType.h"
#include "THGenerateIntType.h"
#include "THGenerateLongType.h"
#include "THGenerateShortType.h"
#undef THGenerateManyTypes
#undef TH_GENERIC_FILE
