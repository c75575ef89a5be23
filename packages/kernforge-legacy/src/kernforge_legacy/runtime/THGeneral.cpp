// TH's general functions (THGeneral.h: THError, THArgCheck, THAlloc, half
// and bfloat16) and what the op wrappers an extension's ops.cpp is made of
// call here (kernforge_legacy/glue.h).
#include <thread>

#include "THRuntime.h"

namespace {

// TH's error handlers: the thread's, else the process's default, called with
// the message before the error is raised (a handler that returns does not
// stop the raise: TH's handlers did not return).
template <class F>
struct Handler {
  F fn = nullptr;
  void* data = nullptr;
};
struct Handlers {
  Handler<THErrorHandlerFunction> error;
  Handler<THArgErrorHandlerFunction> arg;
};
std::mutex handlers_mutex;
Handlers default_handlers;
thread_local Handlers thread_handlers;
Handler<void (*)(void*)> gc_handler;

[[noreturn]] void raise_error(const std::string& msg) {
  Handler<THErrorHandlerFunction> h = thread_handlers.error;
  if (h.fn == nullptr) {
    std::lock_guard<std::mutex> lock(handlers_mutex);
    h = default_handlers.error;
  }
  if (h.fn != nullptr) h.fn(msg.c_str(), h.data);
  throw std::runtime_error(msg);
}

[[noreturn]] void raise_arg_error(int arg, const std::string& msg) {
  Handler<THArgErrorHandlerFunction> h = thread_handlers.arg;
  if (h.fn == nullptr) {
    std::lock_guard<std::mutex> lock(handlers_mutex);
    h = default_handlers.arg;
  }
  if (h.fn != nullptr) h.fn(arg, msg.c_str(), h.data);
  throw std::runtime_error("invalid argument " + std::to_string(arg) + ": " + msg);
}

}  // namespace

namespace kernforge_legacy {

std::string describe(AtenTensorHandle t) {
  static const std::pair<int32_t (*)(), const char*> names[] = {
      {aoti_torch_dtype_uint8, "uint8"},       {aoti_torch_dtype_int8, "int8"},
      {aoti_torch_dtype_int16, "int16"},       {aoti_torch_dtype_int32, "int32"},
      {aoti_torch_dtype_int64, "int64"},       {aoti_torch_dtype_float16, "float16"},
      {aoti_torch_dtype_bfloat16, "bfloat16"}, {aoti_torch_dtype_float32, "float32"},
      {aoti_torch_dtype_float64, "float64"},   {aoti_torch_dtype_bool, "bool"}};
  int32_t dtype, device, index;
  check(aoti_torch_get_dtype(t, &dtype), "dtype");
  check(aoti_torch_get_device_type(t, &device), "device");
  check(aoti_torch_get_device_index(t, &index), "device");
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

DeviceGuard::DeviceGuard(std::initializer_list<AtenTensorHandle> args) {
  for (AtenTensorHandle t : args) {
    if (t == nullptr) continue;
    int32_t device, index;
    check(aoti_torch_get_device_type(t, &device), "device");
    if (device != aoti_torch_device_type_cuda()) continue;
    check(aoti_torch_get_device_index(t, &index), "device");
    check(aoti_torch_create_device_guard(index, &guard_), "device guard");
    return;
  }
}

DeviceGuard::~DeviceGuard() {
  if (guard_ != nullptr) aoti_torch_delete_device_guard(guard_);
}

CallScope::~CallScope() {
  std::vector<const void*> storages;
  storages.swap(call_storages);
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (const void* h : storages) {
    auto it = registry.find(h);
    if (it == registry.end() || it->second.refs > 0) continue;  // freed, or retained
    registry.erase(it);
    destroy(h, true);
  }
  call_boxes.clear();
}

void* call_handle(AtenTensorHandle t) {
  TensorBox& box = call_boxes.emplace_back(TensorBox{t, nullptr, nullptr, 0, 0, 0});
  refresh(&box);
  return &box;
}

void* call_storage(AtenTensorHandle t, size_t element_size) {
  return storage_view(call_handle(t), static_cast<int64_t>(element_size), "storage argument");
}

AtenTensorHandle returned_tensor(const void* h, bool storage, const char* fn) {
  if (h == nullptr)
    throw std::runtime_error(std::string(fn) + " returned NULL where it returns a " +
                             (storage ? "storage" : "tensor"));
  const Tensor t = storage ? storage_tensor(h, fn) : borrow(h);
  AtenTensorHandle out;
  check(aoti_torch_new_tensor_handle(t.get(), &out), fn);
  // a tensor's `storage` field has no count of its own; anything else the
  // C function returned is its reference, now the returned tensor's
  if (!storage || static_cast<const StorageBox*>(h)->owner == nullptr) release(h);
  return out;
}

}  // namespace kernforge_legacy

extern "C" {

THDescBuff THLongStorage_sizeDesc(const THLongStorage* size) {
  need("THLongStorage_sizeDesc", {{size, 1, "size", "THLongStorage*"}});
  return describe(longs_of(size, "THLongStorage_sizeDesc"));
}

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

void* THAlloc(ptrdiff_t size) {
  if (size < 0) throw std::runtime_error("THAlloc: invalid memory size " + std::to_string(size));
  if (size == 0) return nullptr;
  void* p = std::malloc(static_cast<size_t>(size));
  if (!p)
    throw std::runtime_error("THAlloc: out of memory allocating " + std::to_string(size) +
                             " bytes");
  return p;
}
void* THRealloc(void* ptr, ptrdiff_t size) {
  if (size < 0) throw std::runtime_error("THRealloc: invalid memory size " + std::to_string(size));
  if (size == 0) {
    std::free(ptr);
    return nullptr;
  }
  void* p = std::realloc(ptr, static_cast<size_t>(size));
  if (!p)
    throw std::runtime_error("THRealloc: out of memory allocating " + std::to_string(size) +
                             " bytes");
  return p;
}
void THFree(void* ptr) {
  std::free(ptr);
}
double THLog1p(const double x) {
  return std::log1p(x);
}

void* kfl_th_data(const void* tensor) {
  void* p;
  check(aoti_torch_get_data_ptr(handle(tensor), &p), "TH_TENSOR_APPLY");
  return p;
}

long kfl_live_handles(void) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  return static_cast<long>(registry.size());
}

void kfl_th_error(const char* file, int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  raise_error(msg + " (" + file + ":" + std::to_string(line) + ")");
}

void kfl_th_assertion_failed(const char* file, int line, const char* condition, const char* fmt,
                             ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  raise_error(std::string("Assertion `") + condition + "' failed. " + msg + " (" + file + ":" +
              std::to_string(line) + ")");
}

void kfl_th_arg_check(const char* file, int line, int condition, int arg, const char* fmt, ...) {
  if (condition) return;
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  raise_arg_error(arg, msg + " (" + file + ":" + std::to_string(line) + ")");
}

// TH's names of the same three, for code that called them rather than the macros
void _THError(const char* file, const int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  raise_error(msg + " (" + file + ":" + std::to_string(line) + ")");
}

void _THAssertionFailed(const char* file, const int line, const char* exp, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  raise_error(std::string("Assertion `") + (exp ? exp : "") + "' failed. " + msg + " (" + file +
              ":" + std::to_string(line) + ")");
}

void _THArgCheck(const char* file, int line, int condition, int argNumber, const char* fmt, ...) {
  if (condition) return;
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  raise_arg_error(argNumber, msg + " (" + file + ":" + std::to_string(line) + ")");
}

void THSetErrorHandler(THErrorHandlerFunction handler, void* data) {
  thread_handlers.error = {handler, data};
}
void THSetDefaultErrorHandler(THErrorHandlerFunction handler, void* data) {
  std::lock_guard<std::mutex> lock(handlers_mutex);
  default_handlers.error = {handler, data};
}
void THSetArgErrorHandler(THArgErrorHandlerFunction handler, void* data) {
  thread_handlers.arg = {handler, data};
}
void THSetDefaultArgErrorHandler(THArgErrorHandlerFunction handler, void* data) {
  std::lock_guard<std::mutex> lock(handlers_mutex);
  default_handlers.arg = {handler, data};
}

THDescBuff _THSizeDesc(const int64_t* size, const int64_t ndim) {
  if (ndim < 0 || (ndim > 0 && size == nullptr))
    throw std::runtime_error("_THSizeDesc: size is NULL or ndim " + std::to_string(ndim) +
                             " is negative");
  return describe(std::vector<int64_t>(size, size + ndim));
}

// The heap accounting and garbage-collector hook were Lua's: kept, unused.
void THSetGCHandler(void (*handler)(void* data), void* data) {
  std::lock_guard<std::mutex> lock(handlers_mutex);
  gc_handler = {handler, data};
}
void THHeapUpdate(ptrdiff_t) {}

// torch's intra-op threads (at::set_num_threads), which TH's were
void THSetNumThreads(int num_threads) {
  if (num_threads <= 0)
    throw std::runtime_error("THSetNumThreads: num_threads must be positive, got " +
                             std::to_string(num_threads));
  using Fn = void (*)(int);
  static const Fn set = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "_ZN2at15set_num_threadsEi"));
  if (set == nullptr)
    throw std::runtime_error("THSetNumThreads: torch's at::set_num_threads is not found");
  set(num_threads);
}
int THGetNumThreads(void) {
  return static_cast<int>(torch::stable::get_num_threads());
}
int THGetNumCores(void) {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}
void THInferNumThreads(void) {}

}  // extern "C"

// THSize.h, THLogAdd.h and THHalf.h's bit conversions
namespace {

const int64_t* sizes_at(const int64_t* p, int64_t n, const char* name, const char* fn) {
  if (n < 0 || (n > 0 && p == nullptr))
    throw std::runtime_error(std::string(fn) + ": " + name + " is NULL or its count " +
                             std::to_string(n) + " is negative");
  return p;
}

// log(a + b) and log(a - b) from log a and log b, as TH: below this difference
// the smaller term does not count
constexpr double kMinusLogThreshold = -39.14;

}  // namespace

extern "C" {

int THSize_isSameSizeAs(const int64_t* sizeA, int64_t dimsA, const int64_t* sizeB, int64_t dimsB) {
  sizes_at(sizeA, dimsA, "sizeA", "THSize_isSameSizeAs");
  sizes_at(sizeB, dimsB, "sizeB", "THSize_isSameSizeAs");
  return dimsA == dimsB && std::equal(sizeA, sizeA + dimsA, sizeB);
}

ptrdiff_t THSize_nElement(int64_t dims, int64_t* size) {
  sizes_at(size, dims, "size", "THSize_nElement");
  if (dims == 0) return 0;  // TH's: no dimensions, no elements
  ptrdiff_t n = 1;
  for (int64_t d = 0; d < dims; ++d) n *= size[d];
  return n;
}

double THLogAdd(double log_a, double log_b) {
  if (log_a < log_b) std::swap(log_a, log_b);
  const double minusdif = log_b - log_a;
  return minusdif < kMinusLogThreshold ? log_a : log_a + std::log1p(std::exp(minusdif));
}

double THLogSub(double log_a, double log_b) {
  if (log_a < log_b)
    raise_error("THLogSub: log_a (" + std::to_string(log_a) + ") should be greater than log_b (" +
                std::to_string(log_b) + ")");
  if (log_a == log_b) return -std::numeric_limits<double>::infinity();
  const double minusdif = log_b - log_a;
  return minusdif < kMinusLogThreshold ? log_a : log_a + std::log1p(-std::exp(minusdif));
}

// exp(-x) for x >= 0, 0 from x = 13 on, where TH's approximation stopped
double THExpMinusApprox(const double x) {
  if (x < 0) raise_error("THExpMinusApprox: x must be >= 0, got " + std::to_string(x));
  return x < 13.0 ? std::exp(-x) : 0.0;
}

void TH_float2halfbits(float* src, unsigned short* dest) {
  if (src == nullptr || dest == nullptr)
    throw std::runtime_error("TH_float2halfbits: src or dest is NULL");
  *dest = torch::headeronly::detail::fp16_ieee_from_fp32_value(*src);
}

void TH_halfbits2float(unsigned short* src, float* res) {
  if (src == nullptr || res == nullptr)
    throw std::runtime_error("TH_halfbits2float: src or res is NULL");
  *res = torch::headeronly::detail::fp16_ieee_to_fp32_value(*src);
}

}  // extern "C"
