/* THCUNN/THCUNN.h, for CUDA sources written as THCUNN's modules were: THC's
 * API (THC/THC.h) and THNN_(NAME), the name of a generic function for the
 * type being generated (THNN_CudaHalfBatchNorm_forward for half: CReal,
 * THCGenerateFloatTypes.h); THCIndexTensor is THCudaLongTensor. THCUNN's own
 * modules are not provided: torch.nn has them. */
#ifndef KERNFORGE_LEGACY_THCUNN_H
#define KERNFORGE_LEGACY_THCUNN_H

#include "../THC/THC.h"

#define THCIndexTensor THCudaLongTensor
#define THCIndexTensor_(NAME) THCudaLongTensor_##NAME
typedef int64_t THCIndex_t;
#define THNN_(NAME) TH_CONCAT_3(THNN_, CReal, NAME)

#endif /* KERNFORGE_LEGACY_THCUNN_H */
