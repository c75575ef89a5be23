// What the op wrappers create_extension generates are made of (C++ only): a
// legacy C function is registered as a torch op whose arguments are checked
// here against the C parameter types before the call.
#pragma once

#include <TH/TH.h>
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#include <THC/THC.h>
#endif

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace kernforge_legacy {

// The dtype and device each handle type stands for.
template <class T>
struct Handle;

#define KFL_HANDLE(T, real, dtype_name, device_name)                                \
  template <>                                                                       \
  struct Handle<T> {                                                                \
    static constexpr const char* pointer = #T "*";                                  \
    static constexpr size_t element_size = sizeof(real);                            \
    static constexpr const char* dtype = #dtype_name;                               \
    static constexpr const char* device = #device_name;                             \
    static int32_t dtype_code() { return aoti_torch_dtype_##dtype_name(); }         \
    static int32_t device_code() { return aoti_torch_device_type_##device_name(); } \
  };
// a tensor type and its storage type
#define KFL_CPU_HANDLE(T, S, real, dtype) \
  KFL_HANDLE(T, real, dtype, cpu)         \
  KFL_HANDLE(S, real, dtype, cpu)
TH_FORALL_CPU_TENSORS(KFL_CPU_HANDLE)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_CUDA_HANDLE(T, S, real, dtype) \
  KFL_HANDLE(T, real, dtype, cuda)         \
  KFL_HANDLE(S, real, dtype, cuda)
TH_FORALL_CUDA_TENSORS(KFL_CUDA_HANDLE)
#endif

// "cpu tensor of float32", "cuda:1 tensor of int64"
std::string describe(AtenTensorHandle t);

// "fn: argument 2 (index, THIntTensor*): <problem>"
[[noreturn]] void bad_argument(const char* fn, int index, const char* param, const char* c_type,
                               const std::string& problem);

// The handle a C function gets for a tensor argument: a box holding t with
// TH's fields (TH.h), which lives until the call ends (CallScope).
void* call_handle(AtenTensorHandle t);

// The handle a C function gets for a storage argument (t: the storage as a
// tensor over it): TH's T_storage of t, whose data and size are the whole
// storage's, borrowed until the call ends.
void* call_storage(AtenTensorHandle t, size_t element_size);

// A tensor or storage handle a C function returned (a new one, the caller's
// reference in TH): a new reference to its torch tensor (a storage's: 1-D
// over all of it); the C function's reference is released. NULL raises,
// naming the function.
AtenTensorHandle returned_tensor(const void* h, bool storage, const char* fn);

// t, once its dtype and device are those of the handle type H
template <class H>
const torch::stable::Tensor* checked_arg(const std::optional<torch::stable::Tensor>& arg,
                                         const char* fn, int index, const char* param,
                                         const char* what) {
  if (!arg) return nullptr;
  const torch::stable::Tensor& t = *arg;
  int32_t dtype, device;
  if (aoti_torch_get_dtype(t.get(), &dtype) != AOTI_TORCH_SUCCESS ||
      aoti_torch_get_device_type(t.get(), &device) != AOTI_TORCH_SUCCESS ||
      dtype != Handle<H>::dtype_code() || device != Handle<H>::device_code()) {
    std::string got = describe(t.get());  // "cpu tensor of float32": a storage says so
    got.replace(got.find("tensor"), 6, what);
    bad_argument(fn, index, param, Handle<H>::pointer,
                 std::string("expected a ") + Handle<H>::device + " " + what + " of " +
                     Handle<H>::dtype + ", got a " + got);
  }
  return &t;
}

// The tensor as the C parameter type T*; None is NULL, as cffi passed it.
template <class T>
T* tensor_arg(const std::optional<torch::stable::Tensor>& arg, const char* fn, int index,
              const char* param) {
  const torch::stable::Tensor* t = checked_arg<T>(arg, fn, index, param, "tensor");
  return t ? static_cast<T*>(call_handle(t->get())) : nullptr;
}

// A storage (as a tensor over it) as the C parameter type S*; None is NULL.
template <class S>
S* storage_arg(const std::optional<torch::stable::Tensor>& arg, const char* fn, int index,
               const char* param) {
  const torch::stable::Tensor* t = checked_arg<S>(arg, fn, index, param, "storage");
  return t ? static_cast<S*>(call_storage(t->get(), Handle<S>::element_size)) : nullptr;
}

// What a `void *` parameter gets: the address `a` (0: NULL), or for a < 0 the
// handle of the tensor vt[-a - 1], of its own type, as torch.utils.ffi gave
// cffi a tensor as its type's pointer, which a `void *` took.
inline void* void_arg(int64_t a, const std::vector<std::optional<torch::stable::Tensor>>& vt,
                      const char* fn, int index, const char* param) {
  if (a >= 0) return reinterpret_cast<void*>(static_cast<uintptr_t>(a));
  const size_t k = static_cast<size_t>(-(a + 1));
  if (k >= vt.size())
    bad_argument(fn, index, param, "void*",
                 "tensor " + std::to_string(k) + " of " + std::to_string(vt.size()) + " given");
  return vt[k] ? call_handle(vt[k]->get()) : nullptr;
}

// The first CUDA tensor of ts (for DeviceGuard), or null.
inline AtenTensorHandle first_cuda_tensor(
    const std::vector<std::optional<torch::stable::Tensor>>& ts) {
  for (const auto& t : ts) {
    int32_t device;
    if (t && aoti_torch_get_device_type(t->get(), &device) == AOTI_TORCH_SUCCESS &&
        device == aoti_torch_device_type_cuda())
      return t->get();
  }
  return nullptr;
}

// A Python int (int64_t) or float (double) as the C parameter type C, if it fits.
template <class C, class V>
C scalar_arg(V value, const char* fn, int index, const char* param, const char* c_type) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    bool fits;
    if constexpr (std::is_signed_v<C>)
      fits = value >= std::numeric_limits<C>::min() && value <= std::numeric_limits<C>::max();
    else  // compared as uint64_t: the max of a 64-bit C is -1 as an int64_t
      fits = value >= 0 && static_cast<uint64_t>(value) <= std::numeric_limits<C>::max();
    if (!fits) bad_argument(fn, index, param, c_type, std::to_string(value) + " does not fit");
  }
  return static_cast<C>(value);
}

// Lives for one call of an extension function: the storage handles the call
// borrowed (T_storage) and did not retain, and its arguments' boxes, are
// released when it ends.
class CallScope {
 public:
  CallScope() = default;
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};

// Makes the device of the first CUDA tensor argument current for the call, so
// THCState_getCurrentStream and THCudaMalloc use that device (null: a None
// argument). Its arguments are plain handles: the runtime library's exports
// take no type of torch's stable C++ API, whose symbols each library keeps
// to itself.
class DeviceGuard {
 public:
  DeviceGuard(std::initializer_list<AtenTensorHandle> args);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  bool on_cuda() const { return guard_ != nullptr; }

 private:
  DeviceGuardHandle guard_ = nullptr;
};

#ifdef KERNFORGE_LEGACY_WITH_CUDA
// After a function with CUDA tensor arguments returns: a kernel launch in it
// that failed, and that its C code left unchecked (as most 2017 code did),
// raises here naming the function, where torch's next launch check would
// have blamed its own op.
void check_launches(const char* fn);
#endif

}  // namespace kernforge_legacy
