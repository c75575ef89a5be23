/* The straight-through round op's forward, CUDA (see round.h). */
int round_ste_forward_cuda(THCudaTensor* input, THCudaTensor* output);
int round_ste_forward_cuda_double(THCudaDoubleTensor* input, THCudaDoubleTensor* output);
int round_ste_forward_cuda_half(THCudaHalfTensor* input, THCudaHalfTensor* output);
int round_ste_forward_cuda_bfloat16(THCudaBFloat16Tensor* input, THCudaBFloat16Tensor* output);
