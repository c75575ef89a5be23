int sgemm_cuda(THCudaTensor *c, THCudaTensor *a, THCudaTensor *b);
int cadd_cuda(THCudaTensor *r, THCudaTensor *a, THCudaTensor *b);
