// The TH/THC C API of include/TH/TH.h and include/THC/THC.h, on torch's
// stable C ABI. Compiled into every extension create_extension builds (its
// symbols stay inside that extension). A tensor handle (THFloatTensor*, ...)
// is the AtenTensorHandle the extension's op was called with, borrowed.
#include <kernforge_legacy/glue.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_aten.h>
#include <torch/csrc/stable/stableivalue_conversions.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstdarg>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace {

AtenTensorHandle handle(const void* t) {
  return reinterpret_cast<AtenTensorHandle>(const_cast<void*>(t));
}

void check(AOTITorchError err, const char* what) {
  if (err != AOTI_TORCH_SUCCESS)
    throw std::runtime_error(std::string("kernforge_legacy: ") + what + " failed");
}

std::string format(const char* fmt, va_list args) {
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  return buf;
}

int64_t dim_of(const void* t) {
  int64_t d;
  check(aoti_torch_get_dim(handle(t), &d), "dim");
  return d;
}

int64_t numel(const void* t) {
  int64_t n;
  check(aoti_torch_get_numel(handle(t), &n), "numel");
  return n;
}

// size or stride of `dim`, with TH's bounds check.
int64_t size_at(const void* t, int dim, bool stride, const char* fn) {
  const int64_t ndim = dim_of(t);
  if (dim < 0 || dim >= ndim)
    throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                             " out of range of a " + std::to_string(ndim) + "-D tensor");
  int64_t* values;
  check(stride ? aoti_torch_get_strides(handle(t), &values)
               : aoti_torch_get_sizes(handle(t), &values),
        fn);
  return values[dim];
}

std::vector<int64_t> sizes(const void* t) {
  int64_t* values;
  check(aoti_torch_get_sizes(handle(t), &values), "sizes");
  return std::vector<int64_t>(values, values + dim_of(t));
}

// aten::resize_ through the dispatcher: the caller's tensor itself changes.
// A resize to the shape it has is a no-op there, so it is skipped here.
void resize(void* t, std::vector<int64_t> shape, const char* fn) {
  for (int64_t s : shape)
    if (s < 0) throw std::runtime_error(std::string(fn) + ": negative size " + std::to_string(s));
  if (shape == sizes(t)) return;
  AtenTensorHandle ref;
  check(aoti_torch_new_tensor_handle(handle(t), &ref), fn);
  StableIValue stack[3] = {torch::stable::detail::from(ref),
                           torch::stable::detail::from(std::move(shape)),
                           torch::stable::detail::from(std::nullopt)};
  check(torch_call_dispatcher("aten::resize_", "", stack, TORCH_ABI_VERSION), "aten::resize_");
  torch::stable::detail::to<torch::stable::Tensor>(stack[0]);  // drops the returned reference
}

template <class Real>
double as_double(Real v) {
  if constexpr (std::is_same_v<Real, THHalf>)
    return TH_half2float(v);
  else if constexpr (std::is_same_v<Real, THBFloat16>)
    return TH_bfloat162float(v);
  else
    return static_cast<double>(v);
}

}  // namespace

namespace kernforge_legacy {

std::string describe(const torch::stable::Tensor& t) {
  static const std::pair<int32_t (*)(), const char*> names[] = {
      {aoti_torch_dtype_uint8, "uint8"},       {aoti_torch_dtype_int8, "int8"},
      {aoti_torch_dtype_int16, "int16"},       {aoti_torch_dtype_int32, "int32"},
      {aoti_torch_dtype_int64, "int64"},       {aoti_torch_dtype_float16, "float16"},
      {aoti_torch_dtype_bfloat16, "bfloat16"}, {aoti_torch_dtype_float32, "float32"},
      {aoti_torch_dtype_float64, "float64"},   {aoti_torch_dtype_bool, "bool"}};
  int32_t dtype, device, index;
  check(aoti_torch_get_dtype(t.get(), &dtype), "dtype");
  check(aoti_torch_get_device_type(t.get(), &device), "device");
  check(aoti_torch_get_device_index(t.get(), &index), "device");
  std::string type = "another dtype";
  for (const auto& [code, name] : names)
    if (code() == dtype) type = name;
  if (device == aoti_torch_device_type_cpu()) return "cpu tensor of " + type;
  if (device == aoti_torch_device_type_cuda())
    return "cuda:" + std::to_string(index) + " tensor of " + type;
  return "tensor of " + type + " on another device";
}

void bad_argument(const char* fn, int index, const char* param, const char* c_type,
                  const std::string& problem) {
  throw std::runtime_error(std::string(fn) + ": argument " + std::to_string(index) + " (" + param +
                           ", " + c_type + "): " + problem);
}

DeviceGuard::DeviceGuard(std::initializer_list<const torch::stable::Tensor*> args) {
  for (const torch::stable::Tensor* t : args) {
    int32_t device, index;
    check(aoti_torch_get_device_type(t->get(), &device), "device");
    if (device != aoti_torch_device_type_cuda()) continue;
    check(aoti_torch_get_device_index(t->get(), &index), "device");
    check(aoti_torch_create_device_guard(index, &guard_), "device guard");
    return;
  }
}

DeviceGuard::~DeviceGuard() {
  if (guard_ != nullptr) aoti_torch_delete_device_guard(guard_);
}

}  // namespace kernforge_legacy

extern "C" {

float TH_half2float(THHalf value) {
  return torch::headeronly::detail::fp16_ieee_to_fp32_value(value.x);
}
THHalf TH_float2half(float value) {
  return {torch::headeronly::detail::fp16_ieee_from_fp32_value(value)};
}
float TH_bfloat162float(THBFloat16 value) {
  return torch::headeronly::detail::f32_from_bits(value.x);
}
THBFloat16 TH_float2bfloat16(float value) {
  return {torch::headeronly::detail::round_to_nearest_even(value)};
}

void kfl_th_error(const char* file, int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  throw std::runtime_error(msg + " (" + file + ":" + std::to_string(line) + ")");
}

void kfl_th_arg_check(const char* file, int line, int condition, int arg, const char* fmt, ...) {
  if (condition) return;
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  throw std::runtime_error("invalid argument " + std::to_string(arg) + ": " + msg + " (" + file +
                           ":" + std::to_string(line) + ")");
}

// The functions of one handle type T; the variadic arguments are the leading
// parameters (THC's state, nothing for TH).
#define KFL_DEFINE_TENSOR_API(T, real, ...)                                                \
  real* T##_data(__VA_ARGS__ const T* self) {                                              \
    void* p;                                                                               \
    check(aoti_torch_get_data_ptr(handle(self), &p), #T "_data");                          \
    return static_cast<real*>(p);                                                          \
  }                                                                                        \
  ptrdiff_t T##_nElement(__VA_ARGS__ const T* self) {                                      \
    return numel(self);                                                                    \
  }                                                                                        \
  int T##_nDimension(__VA_ARGS__ const T* self) {                                          \
    return static_cast<int>(dim_of(self));                                                 \
  }                                                                                        \
  int64_t T##_size(__VA_ARGS__ const T* self, int dim) {                                   \
    return size_at(self, dim, false, #T "_size");                                          \
  }                                                                                        \
  int64_t T##_stride(__VA_ARGS__ const T* self, int dim) {                                 \
    return size_at(self, dim, true, #T "_stride");                                         \
  }                                                                                        \
  int T##_isContiguous(__VA_ARGS__ const T* self) {                                        \
    bool c;                                                                                \
    check(aoti_torch_is_contiguous(handle(self), &c), #T "_isContiguous");                 \
    return c;                                                                              \
  }                                                                                        \
  int T##_isSameSizeAs(__VA_ARGS__ const T* self, const T* other) {                        \
    return sizes(self) == sizes(other);                                                    \
  }                                                                                        \
  void T##_resize1d(__VA_ARGS__ T* self, int64_t s0) {                                     \
    resize(self, {s0}, #T "_resize1d");                                                    \
  }                                                                                        \
  void T##_resize2d(__VA_ARGS__ T* self, int64_t s0, int64_t s1) {                         \
    resize(self, {s0, s1}, #T "_resize2d");                                                \
  }                                                                                        \
  void T##_resize3d(__VA_ARGS__ T* self, int64_t s0, int64_t s1, int64_t s2) {             \
    resize(self, {s0, s1, s2}, #T "_resize3d");                                            \
  }                                                                                        \
  void T##_resize4d(__VA_ARGS__ T* self, int64_t s0, int64_t s1, int64_t s2, int64_t s3) { \
    resize(self, {s0, s1, s2, s3}, #T "_resize4d");                                        \
  }                                                                                        \
  void T##_resize5d(__VA_ARGS__ T* self, int64_t s0, int64_t s1, int64_t s2, int64_t s3,   \
                    int64_t s4) {                                                          \
    resize(self, {s0, s1, s2, s3, s4}, #T "_resize5d");                                    \
  }                                                                                        \
  void T##_resizeAs(__VA_ARGS__ T* self, const T* src) {                                   \
    resize(self, sizes(src), #T "_resizeAs");                                              \
  }                                                                                        \
  void T##_zero(__VA_ARGS__ T* self) {                                                     \
    check(aoti_torch_zero_(handle(self)), #T "_zero");                                     \
  }                                                                                        \
  void T##_fill(__VA_ARGS__ T* self, real value) {                                         \
    check(aoti_torch_aten_fill__Scalar(handle(self), as_double(value)), #T "_fill");       \
  }

#define KFL_DEFINE_CPU(T, real, dtype) KFL_DEFINE_TENSOR_API(T, real, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU)

#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA(T, real, dtype) KFL_DEFINE_TENSOR_API(T, real, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA)
#endif

}  // extern "C"

#ifdef KERNFORGE_LEGACY_WITH_CUDA

// The `state` legacy sources declare `extern THCState *state;` for: nothing
// is kept in it, each function asks torch for the current device and stream.
struct THCState {};
namespace {
THCState the_state;
}

extern "C" {

THCState* state = &the_state;

cudaStream_t THCState_getCurrentStream(THCState*) {
  int32_t device;
  void* stream;
  check(aoti_torch_get_current_device_index(&device), "THCState_getCurrentStream");
  check(aoti_torch_get_current_cuda_stream(device, &stream), "THCState_getCurrentStream");
  return static_cast<cudaStream_t>(stream);
}

void kfl_thc_check(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // a launch error is taken, so the next check does not see it again
  throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err) + " (" + file + ":" + std::to_string(line) +
                           ")");
}

void* kfl_thc_malloc(THCState*, size_t size) {
  void* ptr = nullptr;
  if (size > 0) check(aoti_torch_cuda_caching_allocator_raw_alloc(size, &ptr), "THCudaMalloc");
  return ptr;
}

cudaError_t kfl_thc_malloc_into(THCState* s, void** ptr, size_t size) {
  *ptr = kfl_thc_malloc(s, size);
  return cudaSuccess;
}

cudaError_t THCudaFree(THCState*, void* ptr) {
  if (ptr != nullptr) check(aoti_torch_cuda_caching_allocator_raw_delete(ptr), "THCudaFree");
  return cudaSuccess;
}

}  // extern "C"

#endif  // KERNFORGE_LEGACY_WITH_CUDA
