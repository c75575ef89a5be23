/* The two TH calls the legacy benchmark times: a GEMM through TH's
 * column-major BLAS (c = a @ b for row-major a, b: c^T = b^T a^T) and the
 * official example's THFloatTensor_cadd. */
#include <TH/TH.h>

int sgemm(THFloatTensor *c, THFloatTensor *a, THFloatTensor *b)
{
  long m = THFloatTensor_size(a, 0), k = THFloatTensor_size(a, 1), n = THFloatTensor_size(b, 1);
  THFloatTensor_resize2d(c, m, n);
  THFloatBlas_gemm('n', 'n', n, m, k, 1, THFloatTensor_data(b), n, THFloatTensor_data(a), k, 0,
                   THFloatTensor_data(c), n);
  return 1;
}

int cadd(THFloatTensor *r, THFloatTensor *a, THFloatTensor *b)
{
  THFloatTensor_cadd(r, a, 1, b);
  return 1;
}
