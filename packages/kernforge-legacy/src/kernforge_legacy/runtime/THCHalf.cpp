// THC's half conversions (THCHalf.h): one value on the host, as TH's
// (TH_float2half), or arrays in device memory on torch's copy; and whether
// the current device has half instructions, in THC's words.
#include "THRuntime.h"

namespace {

// out[0 .. len) := in[0 .. len) converted, both in device memory
void convert(void* out, int32_t out_dtype, void* in, int32_t in_dtype, ptrdiff_t len,
             const char* fn) {
  if (len < 0)
    throw std::runtime_error(std::string(fn) + ": len must be >= 0, got " + std::to_string(len));
  if (len == 0) return;
  if (out == nullptr || in == nullptr)
    throw std::runtime_error(std::string(fn) + ": " + (out == nullptr ? "out" : "in") +
                             " is NULL for " + std::to_string(len) + " elements");
  Tensor dst = wrap(out, {len}, {1}, out_dtype, true, fn);
  torch::stable::copy_(dst, wrap(in, {len}, {1}, in_dtype, true, fn));
}

}  // namespace

extern "C" {

THHalf THC_float2half(float a) {
  return TH_float2half(a);
}
float THC_half2float(THHalf a) {
  return TH_half2float(a);
}

void THCFloat2Half(THCState*, THHalf* out, float* in, ptrdiff_t len) {
  convert(out, aoti_torch_dtype_float16(), in, aoti_torch_dtype_float32(), len, "THCFloat2Half");
}
void THCHalf2Float(THCState*, float* out, THHalf* in, ptrdiff_t len) {
  convert(out, aoti_torch_dtype_float32(), in, aoti_torch_dtype_float16(), len, "THCHalf2Float");
}

// compute capability 5.3 and up, as THC said
int THC_nativeHalfInstructions(THCState* state) {
  const cudaDeviceProp* prop = THCState_getCurrentDeviceProperties(state);
  return prop->major > 5 || (prop->major == 5 && prop->minor == 3);
}
// 6.0 only (the P100), as THC said: its "performant" half
int THC_fastHalfInstructions(THCState* state) {
  const cudaDeviceProp* prop = THCState_getCurrentDeviceProperties(state);
  return prop->major == 6 && prop->minor == 0;
}

}  // extern "C"
