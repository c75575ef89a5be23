/* THC/THCGenerateAllTypes.h: THC's generic files, as TH's (TH/THGenerateAllTypes.h)
 * with THC_GENERIC_FILE, once per CUDA type, Half included: `real`,
 * `accreal`, `Real` (Byte, ..., Double), `CReal` (CudaByte, ..., Cuda for
 * float, CudaDouble), THC_REAL_IS_<NAME> and THCTensor / THCTensor_(name). */
#ifndef THC_GENERIC_FILE
#error "define THC_GENERIC_FILE (the generic file) before including THCGenerateAllTypes.h"
#endif
#define THCGenerateManyTypes
#include "THCGenerateByteType.h"
#include "THCGenerateCharType.h"
#include "THCGenerateDoubleType.h"
#include "THCGenerateFloatType.h"
#include "THCGenerateHalfType.h"
#include "THCGenerateIntType.h"
#include "THCGenerateLongType.h"
#include "THCGenerateShortType.h"
#undef THCGenerateManyTypes
#undef THC_GENERIC_FILE
