/* The straight-through round op's forward, CPU: output = 1 where input >= 0.5,
 * else 0 (ties go up; NaN gives 0). Resizes output to input's shape. */
int round_ste_forward(THFloatTensor* input, THFloatTensor* output);
int round_ste_forward_double(THDoubleTensor* input, THDoubleTensor* output);
int round_ste_forward_half(THHalfTensor* input, THHalfTensor* output);
int round_ste_forward_bfloat16(THBFloat16Tensor* input, THBFloat16Tensor* output);
