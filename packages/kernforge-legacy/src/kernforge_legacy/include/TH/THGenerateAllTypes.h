/* TH/THGenerateAllTypes.h: TH's generic files. Code written once for every
 * type sits in a file of its own (generic/foo.c) that begins
 *   #ifndef TH_GENERIC_FILE
 *   #define TH_GENERIC_FILE "generic/foo.c"
 *   #else
 * and ends with #endif; the source that uses it includes it and then this
 * header, which includes "generic/foo.c" again once per type with `real`
 * (the element type), `accreal` (what sums take), `Real` (its name: Byte,
 * ..., Double), TH_REAL_IS_<NAME> and THTensor / THTensor_(name) for that
 * type. This one: the integer types and float and double (not Half:
 * THGenerateHalfType.h). The generic file is found on the include path. */
#ifndef TH_GENERIC_FILE
#error "define TH_GENERIC_FILE (the generic file) before including THGenerateAllTypes.h"
#endif
#define THGenerateManyTypes
#include "THGenerateByteType.h"
#include "THGenerateCharType.h"
#include "THGenerateDoubleType.h"
#include "THGenerateFloatType.h"
#include "THGenerateIntType.h"
#include "THGenerateLongType.h"
#include "THGenerateShortType.h"
#undef THGenerateManyTypes
#undef TH_GENERIC_FILE
