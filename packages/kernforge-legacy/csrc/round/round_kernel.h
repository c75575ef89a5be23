/* Launchers of round_kernel.cu, callable from C: y = (x >= 0.5) for n
 * contiguous elements on `stream`. */
#ifndef ROUND_KERNEL_H
#define ROUND_KERNEL_H

#include <TH/TH.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

void RoundSTEForwardLauncher(const float* x, float* y, int64_t n, cudaStream_t stream);
void RoundSTEForwardDoubleLauncher(const double* x, double* y, int64_t n, cudaStream_t stream);
void RoundSTEForwardHalfLauncher(const THHalf* x, THHalf* y, int64_t n, cudaStream_t stream);
void RoundSTEForwardBFloat16Launcher(const THBFloat16* x, THBFloat16* y, int64_t n,
                                     cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
