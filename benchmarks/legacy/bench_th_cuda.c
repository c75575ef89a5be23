/* bench_th.c's calls on THC: THCudaBlas_Sgemm and THCudaTensor_cadd. */
#include <THC/THC.h>

extern THCState *state;

int sgemm_cuda(THCudaTensor *c, THCudaTensor *a, THCudaTensor *b)
{
  long m = THCudaTensor_size(state, a, 0), k = THCudaTensor_size(state, a, 1);
  long n = THCudaTensor_size(state, b, 1);
  THCudaTensor_resize2d(state, c, m, n);
  THCudaBlas_Sgemm(state, 'n', 'n', n, m, k, 1, THCudaTensor_data(state, b), n,
                   THCudaTensor_data(state, a), k, 0, THCudaTensor_data(state, c), n);
  return 1;
}

int cadd_cuda(THCudaTensor *r, THCudaTensor *a, THCudaTensor *b)
{
  THCudaTensor_cadd(state, r, a, 1, b);
  return 1;
}
