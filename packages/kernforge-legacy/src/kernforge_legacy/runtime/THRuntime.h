// What the runtime's files share (not an API): the boxes behind TH's handles,
// the registry of the handles TH code makes, and the helpers each family's
// functions are written with. Everything here has the runtime library's own
// linkage; the library exports only TH's and THC's functions (runtime.map).
#pragma once
#include <dlfcn.h>
#include <kernforge_legacy/glue.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_aten.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/stableivalue_conversions.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#ifdef KERNFORGE_LEGACY_WITH_CUDA
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h>
#endif
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>

// TH's random stream (THRandom.h): MT19937, seeded as TH seeded its own, so
// a seed gives TH's numbers; Box-Muller's second value kept for the next call.
struct THGenerator {
  std::mt19937 engine;  // seeded with 5489 until seeded otherwise, as TH's
  uint64_t initial_seed = 5489;
  bool has_normal = false;
  double normal = 0;
};

namespace kfl {

// What tensor and storage handles point to: TH.h's structs, one layout for
// every tensor type and one for every storage type, the tensor first. A
// tensor box holds the storage its `storage` field points to: data and size
// of the whole storage, the tensor box as its owner (a storage box made by
// hand_out, a view of the storage, has none).
struct StorageBox {
  AtenTensorHandle tensor;
  void* data;
  ptrdiff_t size;
  const void* owner;
};
struct TensorBox {
  AtenTensorHandle tensor;
  int64_t* size;
  int64_t* stride;
  int nDimension;
  StorageBox* storage;
  ptrdiff_t storageOffset;
  int64_t numel;           // TH.h's kfl_numel
  StorageBox own_storage;  // past TH.h's fields
};
static_assert(sizeof(TensorBox) >= sizeof(THFloatTensor) &&
              offsetof(TensorBox, size) == offsetof(THFloatTensor, size) &&
              offsetof(TensorBox, stride) == offsetof(THFloatTensor, stride) &&
              offsetof(TensorBox, nDimension) == offsetof(THFloatTensor, nDimension) &&
              offsetof(TensorBox, storage) == offsetof(THFloatTensor, storage) &&
              offsetof(TensorBox, storageOffset) == offsetof(THFloatTensor, storageOffset) &&
              offsetof(TensorBox, numel) == offsetof(THFloatTensor, kfl_numel));
static_assert(sizeof(StorageBox) == sizeof(THFloatStorage) &&
              offsetof(StorageBox, data) == offsetof(THFloatStorage, data) &&
              offsetof(StorageBox, size) == offsetof(THFloatStorage, size) &&
              offsetof(StorageBox, owner) == offsetof(THFloatStorage, kfl_owner));

// One handle argument of a TH function, for need(): NULL is an error, as TH's
// THArgCheck would have made it (TH itself crashed).
struct Arg {
  const void* handle;
  int index;  // 1-based, THC's state not counted
  const char* name;
  const char* type;  // "THFloatTensor*"
};

// Raises, naming the function and the argument, when a handle it needs is
// NULL; every TH function checks its handles with it before anything else.
inline void need(const char* fn, std::initializer_list<Arg> args) {
  for (const Arg& a : args)
    if (a.handle == nullptr)
      throw std::runtime_error(std::string(fn) + ": argument " + std::to_string(a.index) + " (" +
                               a.name + ", " + a.type + ") is NULL; a " + a.type +
                               " is needed here");
}

inline AtenTensorHandle handle(const void* t) {
  if (t == nullptr) throw std::runtime_error("kernforge_legacy: a NULL tensor or storage handle");
  return static_cast<const TensorBox*>(t)->tensor;  // a StorageBox's tensor is first too
}

// torch's message for the last error of this thread, where the running torch
// tells it (2.13 and later: torch_exception_get_what_without_backtrace); the
// binary targets 2.10, so it is looked up when the library loads.
inline const char* torch_reason() {
  using Fn = const char* (*)();
  static const Fn fn =
      reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "torch_exception_get_what_without_backtrace"));
  const char* what = fn ? fn() : nullptr;
  return what != nullptr && *what != 0 ? what : nullptr;
}

// A failed shim call: `what` (the TH function) and torch's reason.
inline void check(AOTITorchError err, const char* what) {
  if (err == AOTI_TORCH_SUCCESS) return;
  const char* reason = torch_reason();
  throw std::runtime_error(std::string(what) + ": " +
                           (reason ? reason
                                   : "torch refused the arguments (their sizes, dtypes "
                                     "or devices do not fit)"));
}

inline std::string format(const char* fmt, va_list args) {
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, args);
  return buf;
}

inline int64_t dim_of(const void* t) {
  int64_t d;
  check(aoti_torch_get_dim(handle(t), &d), "dim");
  return d;
}

// TH's count of a tensor's dimensions: its sizes before the first zero (TH
// stopped at a size of 0, so an empty tensor had none); torch's dim when it
// has elements.
inline int th_dims(const int64_t* size, int64_t dim) {
  int d = 0;
  while (d < dim && size[d] != 0) ++d;
  return d;
}

inline int64_t numel(const void* t) {
  int64_t n;
  check(aoti_torch_get_numel(handle(t), &n), "numel");
  return n;
}

inline int64_t element_size(AtenTensorHandle t) {
  int32_t dtype;
  check(aoti_torch_get_dtype(t, &dtype), "dtype");
  if (dtype == aoti_torch_dtype_float64() || dtype == aoti_torch_dtype_int64()) return 8;
  if (dtype == aoti_torch_dtype_float32() || dtype == aoti_torch_dtype_int32()) return 4;
  if (dtype == aoti_torch_dtype_float16() || dtype == aoti_torch_dtype_bfloat16() ||
      dtype == aoti_torch_dtype_int16())
    return 2;
  return 1;  // uint8, int8, bool
}

// A tensor handle's fields, from its tensor: after anything that may change
// its shape, strides or offset.
inline void refresh(const void* t) {
  auto* box = static_cast<TensorBox*>(const_cast<void*>(t));
  int64_t d, offset;
  check(aoti_torch_get_sizes(box->tensor, &box->size), "sizes");
  check(aoti_torch_get_strides(box->tensor, &box->stride), "strides");
  check(aoti_torch_get_dim(box->tensor, &d), "dim");
  check(aoti_torch_get_storage_offset(box->tensor, &offset), "storage offset");
  box->nDimension = th_dims(box->size, d);
  box->numel = 1;
  for (int64_t i = 0; i < d; ++i) box->numel *= box->size[i];
  box->storageOffset = offset;
  // the storage field: its first element and its size in elements
  void* data;
  int64_t nbytes;
  check(aoti_torch_get_data_ptr(box->tensor, &data), "data");
  check(aoti_torch_get_storage_size(box->tensor, &nbytes), "storage size");
  const int64_t item = element_size(box->tensor);
  box->own_storage = {box->tensor, static_cast<char*>(data) - offset * item, nbytes / item, box};
  box->storage = &box->own_storage;
}

// size or stride of `dim`, with TH's bounds check.
inline int64_t size_at(const void* t, int dim, bool stride, const char* fn) {
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

inline std::vector<int64_t> sizes(const void* t) {
  int64_t* values;
  check(aoti_torch_get_sizes(handle(t), &values), "sizes");
  return std::vector<int64_t>(values, values + dim_of(t));
}

// aten::resize_ through the dispatcher: the caller's tensor itself changes.
// A resize to the shape it has is a no-op there, so it is skipped here.
inline void resize(void* t, std::vector<int64_t> shape, const char* fn) {
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
  refresh(t);
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

template <class Real>
Real from_double(double v) {
  if constexpr (std::is_same_v<Real, THHalf>)
    return TH_float2half(static_cast<float>(v));
  else if constexpr (std::is_same_v<Real, THBFloat16>)
    return TH_float2bfloat16(static_cast<float>(v));
  else
    return static_cast<Real>(v);
}

using torch::stable::Tensor;

// A handle for a tensor of this file's own, for the helpers that take
// handles; it lives as long as the box and the tensor.
inline TensorBox box_of(const Tensor& t) {
  TensorBox box{t.get(), nullptr, nullptr, 0, 0};
  refresh(&box);
  return box;
}

// The sizes of a tensor (not a handle).
inline std::vector<int64_t> sizes(const Tensor& t) {
  int64_t* values;
  check(aoti_torch_get_sizes(t.get(), &values), "sizes");
  return std::vector<int64_t>(values, values + t.dim());
}

// TH's checks of a view's arguments, made before torch sees them (whose
// errors would name its C shims): `dim` a dimension of t (of one more for
// unsqueeze), `index` inside it.
inline void check_dim(const Tensor& t, int64_t dim, const char* fn, int64_t extra = 0) {
  const int64_t n = t.dim() + extra;
  if (dim < 0 || dim >= n)
    throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                             " out of range of a " + std::to_string(t.dim()) + "-D tensor");
}
inline Tensor selected(const Tensor& t, int dim, int64_t index, const char* fn) {
  check_dim(t, dim, fn);
  const int64_t size = sizes(t)[dim];
  if (index < 0 || index >= size)
    throw std::runtime_error(std::string(fn) + ": index " + std::to_string(index) +
                             " out of range of dimension " + std::to_string(dim) + " (size " +
                             std::to_string(size) + ")");
  return torch::stable::select(t, dim, index);
}
inline Tensor narrowed(const Tensor& t, int dim, int64_t first, int64_t length, const char* fn) {
  check_dim(t, dim, fn);
  const int64_t size = sizes(t)[dim];
  if (first < 0 || length < 0 || first > size - length)
    throw std::runtime_error(std::string(fn) + ": elements " + std::to_string(first) + " to " +
                             std::to_string(first + length - 1) + " out of range of dimension " +
                             std::to_string(dim) + " (size " + std::to_string(size) + ")");
  return torch::stable::narrow(const_cast<Tensor&>(t), dim, first, length);
}
inline Tensor swapped(const Tensor& t, int dim1, int dim2, const char* fn) {
  check_dim(t, dim1, fn);
  check_dim(t, dim2, fn);
  return torch::stable::transpose(t, dim1, dim2);
}
inline Tensor squeezed_at(const Tensor& t, int dim, const char* fn) {
  check_dim(t, dim, fn);
  return torch::stable::squeeze(t, dim);
}
inline Tensor unsqueezed_at(const Tensor& t, int dim, const char* fn) {
  check_dim(t, dim, fn, 1);
  return torch::stable::unsqueeze(t, dim);
}
// unfold's arguments: slices of `size` every `step` along `dim`
inline void check_unfold(const Tensor& t, int dim, int64_t size, int64_t step, const char* fn) {
  check_dim(t, dim, fn);
  if (size < 0 || size > sizes(t)[dim] || step <= 0)
    throw std::runtime_error(std::string(fn) + ": slices of " + std::to_string(size) + " every " +
                             std::to_string(step) + " do not fit dimension " + std::to_string(dim) +
                             " (size " + std::to_string(sizes(t)[dim]) + ")");
}

// ---- handles TH code makes, with TH's reference counts
//
// A handle is an AtenTensorHandle. Those an extension function was called
// with belong to the call; those T_new* and T_storage make are kept here with
// their count, and deleted when it drops to 0. A call's own handle that C code
// retains is counted here too, and never deleted by it.
struct Count {
  long refs;
  bool owned;
  bool storage;  // a StorageBox, else a TensorBox
};
inline std::mutex registry_mutex;
inline std::unordered_map<const void*, Count> registry;
// storages handed out during the current extension call, released at its end
// unless retained (kernforge_legacy::CallScope)
inline thread_local std::vector<const void*> call_storages;
// the boxes of the current call's tensor arguments (deque: they do not move)
inline thread_local std::deque<TensorBox> call_boxes;

// A new box of the handle's kind for t (a new reference), kept in the registry.
inline void* hand_out(const Tensor& t, long refs, bool storage) {
  AtenTensorHandle h;
  check(aoti_torch_new_tensor_handle(t.get(), &h), "new tensor handle");
  void* box;
  if (storage) {
    void* data;
    int64_t n;
    check(aoti_torch_get_data_ptr(h, &data), "storage data");
    check(aoti_torch_get_numel(h, &n), "storage size");
    box = new StorageBox{h, data, n};
  } else {
    box = new TensorBox{h, nullptr, nullptr, 0, 0, 0};
    refresh(box);
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry[box] = {refs, true, storage};
  return box;
}

// Deletes a box hand_out made, with its reference to the tensor.
inline void destroy(const void* box, bool storage) {
  aoti_torch_delete_tensor_object(handle(box));
  if (storage)
    delete static_cast<const StorageBox*>(box);
  else
    delete static_cast<const TensorBox*>(box);
}

inline void retain(const void* h, const char* fn) {
  if (h == nullptr) throw std::runtime_error(std::string(fn) + ": NULL");
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(h);
  if (it == registry.end())
    registry[h] = {2, false,
                   false};  // the call's own, retained: one more reference than the call's
  else
    ++it->second.refs;
}

inline void release(const void* h) {
  if (h == nullptr) return;  // TH's _free(NULL) did nothing
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(h);
  if (it == registry.end()) return;  // the call's own, not retained: the call releases it
  if (--it->second.refs > (it->second.owned ? 0 : 1)) return;
  const Count count = it->second;
  registry.erase(it);
  if (count.owned) destroy(h, count.storage);
}

// The tensor behind a handle, as a new reference of its own.
inline Tensor borrow(const void* h) {
  AtenTensorHandle ref;
  check(aoti_torch_new_tensor_handle(handle(h), &ref), "new tensor handle");
  return Tensor(ref);
}

// aten::<name>.<overload> through the dispatcher; returns the first result.
inline Tensor call(const char* name, const char* overload, std::vector<StableIValue> stack,
                   const char* fn) {
  check(torch_call_dispatcher(name, overload, stack.data(), TORCH_ABI_VERSION), fn);
  return torch::stable::detail::to<Tensor>(stack[0]);
}

// self takes src's storage, offset, sizes and strides (aten::set_).
inline void set(const void* self, const Tensor& src, const char* fn) {
  call("aten::set_", "source_Tensor",
       {torch::stable::detail::from(borrow(self)), torch::stable::detail::from(src)}, fn);
  refresh(self);
}

// A 0-dim CPU tensor of v in the category of the handle's type, which keeps
// the other operand's dtype in arithmetic.
template <class Real>
Tensor scalar(Real v) {
  AtenTensorHandle h;
  check(aoti_torch_scalar_to_tensor_float64(as_double(v), &h), "scalar");
  return Tensor(h);
}

// A 0-dim tensor of v with like's dtype and device, for the ops whose
// tensor bounds must be on the operand's device (clamp).
template <class Real>
Tensor scalar_like(const Tensor& like, Real v) {
  Tensor s = torch::stable::new_empty(like, {});
  torch::stable::fill_(s, as_double(v));
  return s;
}

[[maybe_unused]] inline bool is_cuda(const Tensor& t) {
  int32_t device;
  check(aoti_torch_get_device_type(t.get(), &device), "device");
  return device == aoti_torch_device_type_cuda();
}

[[maybe_unused]] inline int32_t dtype_of(const Tensor& t) {
  int32_t dtype;
  check(aoti_torch_get_dtype(t.get(), &dtype), "dtype");
  return dtype;
}
inline bool is_floating_dtype(int32_t dtype) {
  return dtype == aoti_torch_dtype_float64() || dtype == aoti_torch_dtype_float32() ||
         dtype == aoti_torch_dtype_float16() || dtype == aoti_torch_dtype_bfloat16();
}

// r := value, resized as TH did, when value is a new tensor
inline void assign(const void* r, const Tensor& value, const char* fn) {
  resize(const_cast<void*>(r), sizes(value), fn);
  Tensor out = borrow(r);
  torch::stable::copy_(out, value);
}

// (device type, index): the CPU, or the current CUDA device.
inline std::pair<int32_t, int32_t> device_of(bool cuda, const char* fn) {
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  if (cuda) {
    int32_t index;
    check(aoti_torch_get_current_device_index(&index), fn);
    return {aoti_torch_device_type_cuda(), index};
  }
#else
  (void)cuda;
  (void)fn;
#endif
  return {aoti_torch_device_type_cpu(), 0};
}

// The strides of a contiguous tensor of `shape` (a size 0 steps as a size 1).
inline std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape, const char* fn) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] < 0)
      throw std::runtime_error(std::string(fn) + ": negative size " + std::to_string(shape[i]));
    strides[i] = stride;
    stride *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

// A new tensor of `shape`, contiguous or with `strides`: on the CPU, or on
// the current CUDA device.
inline Tensor empty(std::vector<int64_t> shape, int32_t dtype, bool cuda, const char* fn,
                    const std::optional<std::vector<int64_t>>& strides = std::nullopt) {
  const std::vector<int64_t> steps = strides ? *strides : contiguous_strides(shape, fn);
  if (steps.size() != shape.size())
    throw std::runtime_error(std::string(fn) + ": " + std::to_string(shape.size()) + " sizes and " +
                             std::to_string(steps.size()) + " strides");
  const auto [device, index] = device_of(cuda, fn);
  AtenTensorHandle h;
  check(aoti_torch_empty_strided(static_cast<int64_t>(shape.size()), shape.data(), steps.data(),
                                 dtype, device, index, &h),
        fn);
  return Tensor(h);
}

// t as a contiguous float64 tensor on the host, and back into model's dtype and device
inline Tensor on_host(const Tensor& t, const char* fn) {
  Tensor out = empty(sizes(t), aoti_torch_dtype_float64(), false, fn);
  torch::stable::copy_(out, t);
  return out;
}
inline Tensor like(const Tensor& host, const Tensor& model, const char* fn) {
  Tensor out = empty(sizes(host), dtype_of(model), is_cuda(model), fn);
  torch::stable::copy_(out, host);
  return out;
}

// A view of src with its own sizes, strides and offset, over the same storage
// (TH's newWithTensor; the storage view below).
inline Tensor view_of(const void* src, std::vector<int64_t> shape, std::vector<int64_t> strides,
                      int64_t offset_change, const char* fn) {
  AtenTensorHandle h;
  check(aoti_torch__reinterpret_tensor(handle(src), static_cast<int64_t>(shape.size()),
                                       shape.data(), strides.data(), offset_change, &h),
        fn);
  return Tensor(h);
}

inline std::vector<int64_t> strides(const void* t) {
  int64_t* values;
  check(aoti_torch_get_strides(handle(t), &values), "strides");
  return std::vector<int64_t>(values, values + dim_of(t));
}

inline int64_t storage_offset(const void* t) {
  int64_t offset;
  check(aoti_torch_get_storage_offset(handle(t), &offset), "storage offset");
  return offset;
}

// The whole storage behind a storage handle, as a 1-D tensor from its first
// element: for a tensor's `storage` field, which has no tensor of its own, a
// view made now.
inline Tensor storage_tensor(const void* s, const char* fn) {
  const auto* box = static_cast<const StorageBox*>(s);
  if (box->owner == nullptr) return borrow(s);
  return view_of(box->owner, {box->size}, {1}, -storage_offset(box->owner), fn);
}

// A tensor's `storage` field lives as long as the tensor handle: it has no
// reference count of its own to retain or free.
inline void check_counted(const void* s, const char* fn) {
  if (s != nullptr && static_cast<const StorageBox*>(s)->owner != nullptr)
    throw std::runtime_error(std::string(fn) +
                             ": t->storage is not reference counted; to keep a tensor's "
                             "storage, retain the one T_storage(t) returns");
}

// The address of one element of t, each index checked against its size, as
// TH's get and set functions checked them.
inline char* element_at(const void* t, std::initializer_list<int64_t> index, size_t elem_size,
                        const char* fn) {
  const int64_t ndim = dim_of(t);
  if (ndim != static_cast<int64_t>(index.size()))
    throw std::runtime_error(std::string(fn) + ": the tensor must have " +
                             std::to_string(index.size()) + " dimension(s), it has " +
                             std::to_string(ndim));
  const std::vector<int64_t> size = sizes(t), stride = strides(t);
  int64_t offset = 0;
  size_t d = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= size[d])
      throw std::runtime_error(std::string(fn) + ": index " + std::to_string(i) +
                               " out of range of dimension " + std::to_string(d) + " (size " +
                               std::to_string(size[d]) + ")");
    offset += i * stride[d++];
  }
  void* p;
  check(aoti_torch_get_data_ptr(handle(t), &p), fn);
  return static_cast<char*>(p) + offset * static_cast<int64_t>(elem_size);
}

// One element between the host and a CUDA tensor's memory, on the current
// stream of the tensor's device, waited for.
inline void cuda_element_copy(const void* t, void* dst, const void* src, size_t bytes, bool to_host,
                              const char* fn) {
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  int32_t device;
  void* stream;
  check(aoti_torch_get_device_index(handle(t), &device), fn);
  check(aoti_torch_get_current_cuda_stream(device, &stream), fn);
  const auto s = static_cast<cudaStream_t>(stream);
  __THCudaCheck(cudaMemcpyAsync(dst, src, bytes,
                                to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, s),
                __FILE__, __LINE__);
  __THCudaCheck(cudaStreamSynchronize(s), __FILE__, __LINE__);
#else
  (void)t, (void)dst, (void)src, (void)bytes, (void)to_host;
  throw std::runtime_error(std::string(fn) + ": a CUDA tensor in a build without CUDA");
#endif
}

template <class Real>
Real get_element(const void* t, std::initializer_list<int64_t> index, bool cuda, const char* fn) {
  const char* p = element_at(t, index, sizeof(Real), fn);
  Real value;
  if (cuda)
    cuda_element_copy(t, &value, p, sizeof(Real), true, fn);
  else
    std::memcpy(&value, p, sizeof(Real));
  return value;
}

template <class Real>
void set_element(const void* t, std::initializer_list<int64_t> index, Real value, bool cuda,
                 const char* fn) {
  char* p = element_at(t, index, sizeof(Real), fn);
  if (cuda)
    cuda_element_copy(t, p, &value, sizeof(Real), false, fn);
  else
    std::memcpy(p, &value, sizeof(Real));
}

// The n values at p (sizes or strides given as a C array); NULL is none
// (strides) or an error (sizes, `needed`).
inline std::optional<std::vector<int64_t>> values_at(const int64_t* p, int n, bool needed,
                                                     const char* what, const char* fn) {
  if (n < 0)
    throw std::runtime_error(std::string(fn) + ": negative number of dimensions " +
                             std::to_string(n));
  if (p == nullptr && (needed && n > 0))
    throw std::runtime_error(std::string(fn) + ": " + what + " is NULL for " + std::to_string(n) +
                             " dimensions");
  if (p == nullptr) return needed ? std::optional(std::vector<int64_t>{}) : std::nullopt;
  return std::vector<int64_t>(p, p + n);
}

// The values of a THLongStorage of sizes or strides.
inline std::vector<int64_t> longs_of(const THLongStorage* s, const char* fn) {
  if (s == nullptr) throw std::runtime_error(std::string(fn) + ": the sizes are NULL");
  return std::vector<int64_t>(s->data, s->data + s->size);
}

// "[2 x 3 x 4]" in TH's buffer; cut to its first characters and "...]"
// where it would not fit, as TH cut it.
inline THDescBuff describe(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d ? " x " : "") + std::to_string(shape[d]);
  text += "]";
  constexpr size_t room = TH_DESC_BUFF_LEN - 1;
  if (text.size() > room) text = text.substr(0, room - 4) + "...]";
  THDescBuff out{};
  std::memcpy(out.str, text.c_str(), text.size() + 1);
  return out;
}

// t without its dimensions of size 1 (TH's squeeze), keeping one where all
// are: TH had no tensors of 0 dimensions
inline Tensor squeezed(const Tensor& t, const char* fn) {
  const Tensor out = call("aten::squeeze", "", {torch::stable::detail::from(t)}, fn);
  if (out.dim() > 0 || t.dim() == 0) return out;
  return call(
      "aten::view", "",
      {torch::stable::detail::from(out), torch::stable::detail::from(std::vector<int64_t>{1})}, fn);
}

// TH's isSetTo: a and b view the same elements of one storage, in one layout
inline bool same_view(const void* a, const void* b) {
  if (dim_of(a) != dim_of(b) || sizes(a) != sizes(b) || strides(a) != strides(b)) return false;
  void *pa, *pb;
  check(aoti_torch_get_data_ptr(handle(a), &pa), "isSetTo");
  check(aoti_torch_get_data_ptr(handle(b), &pb), "isSetTo");
  return pa == pb && pa != nullptr && storage_offset(a) == storage_offset(b);
}

// A view of storage s from its element `offset`, with sizes and strides as TH
// took them (a negative stride: contiguous over the dimensions after it), for
// TH's newWithStorage and setStorage; s NULL: a new tensor of that layout.
// The view must lie inside the storage, which it cannot grow.
inline Tensor storage_view(const void* s, ptrdiff_t offset, std::vector<int64_t> shape,
                           std::optional<std::vector<int64_t>> steps, int32_t dtype, bool cuda,
                           const char* fn) {
  const size_t n = shape.size();
  std::vector<int64_t> stride = steps ? *steps : std::vector<int64_t>(n, -1);
  if (stride.size() != n)
    throw std::runtime_error(std::string(fn) + ": " + std::to_string(n) + " sizes and " +
                             std::to_string(stride.size()) + " strides");
  for (size_t d = n; d-- > 0;) {
    if (shape[d] < 0)
      throw std::runtime_error(std::string(fn) + ": negative size " + std::to_string(shape[d]));
    if (stride[d] < 0)
      stride[d] = d + 1 == n ? 1 : stride[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  }
  if (s == nullptr) return empty(shape, dtype, cuda, fn, stride);
  int64_t last = offset, numel = 1;
  for (size_t d = 0; d < n; ++d) {
    last += (shape[d] - 1) * stride[d];
    numel *= shape[d];
  }
  const ptrdiff_t size = static_cast<const StorageBox*>(s)->size;
  if (offset < 0 || (numel > 0 && last >= size))
    throw std::runtime_error(std::string(fn) + ": the view (offset " + std::to_string(offset) +
                             ", last element " + std::to_string(last) +
                             ") lies outside the storage of " + std::to_string(size) + " elements");
  const Tensor base = storage_tensor(s, fn);
  AtenTensorHandle h;
  check(aoti_torch__reinterpret_tensor(base.get(), static_cast<int64_t>(n), shape.data(),
                                       stride.data(), offset, &h),
        fn);
  return Tensor(h);
}

// A new storage of `values` (TH's reference count 1): THLongStorage for
// sizes and strides, and S_newWithSize1 ... 4 of every type.
template <class Real>
void* storage_of_values(std::initializer_list<Real> values, int32_t dtype, bool cuda,
                        const char* fn) {
  void* box =
      hand_out(empty({static_cast<int64_t>(values.size())}, dtype, cuda, fn), 1, /*storage=*/true);
  int64_t i = 0;
  for (Real v : values) set_element(box, {i++}, v, cuda, fn);
  return box;
}

inline THLongStorage* long_storage(const std::vector<int64_t>& values, const char* fn) {
  void* box =
      hand_out(empty({static_cast<int64_t>(values.size())}, aoti_torch_dtype_int64(), false, fn), 1,
               /*storage=*/true);
  if (!values.empty())
    std::memcpy(static_cast<StorageBox*>(box)->data, values.data(),
                values.size() * sizeof(int64_t));
  return static_cast<THLongStorage*>(box);
}

// TH's resize with strides: contiguous (no strides, or contiguous ones) keeps
// the storage, as aten::resize_; other strides give self a new storage of that
// layout (TH reused the old one when large enough; its contents were not kept
// in place either way).
inline void resize_to(void* self, std::vector<int64_t> shape,
                      const std::optional<std::vector<int64_t>>& stride, int32_t dtype, bool cuda,
                      const char* fn) {
  if (!stride || *stride == contiguous_strides(shape, fn))
    return resize(self, std::move(shape), fn);
  if (shape == sizes(self) && *stride == strides(self)) return;
  set(self, empty(shape, dtype, cuda, fn, stride), fn);
}

// TH's T_storage: a 1-D view of the whole storage, from element 0; NULL for a
// tensor without storage. Borrowed: released when the extension call ends
// unless retained.
inline void* storage_view(const void* t, int64_t element_size, const char* fn) {
  int64_t nbytes;
  check(aoti_torch_get_storage_size(handle(t), &nbytes), fn);
  if (nbytes == 0) return nullptr;
  const Tensor view = view_of(t, {nbytes / element_size}, {1}, -storage_offset(t), fn);
  void* h = hand_out(view, 0, true);
  call_storages.push_back(h);
  return h;
}
template <class Real>
void* storage_of(const void* t, const char* fn) {
  return storage_view(t, static_cast<int64_t>(sizeof(Real)), fn);
}

// TH's copy: element by element in order, between tensors of one number of elements.
inline void copy_into(const void* self, const void* src, const char* fn) {
  Tensor out = borrow(self);
  Tensor from = borrow(src);
  if (sizes(self) != sizes(src)) {
    if (numel(self) != numel(src))
      throw std::runtime_error(std::string(fn) +
                               ": sizes do not match: " + std::to_string(numel(self)) + " and " +
                               std::to_string(numel(src)) + " elements");
    from = torch::stable::reshape(torch::stable::contiguous(from), sizes(self));
  }
  torch::stable::copy_(out, from);
}

// a + alpha * b (floating types), on the device's backend
inline Tensor add_scaled(const Tensor& a, const Tensor& b, double alpha, const char* fn) {
  AtenTensorHandle h;
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  if (is_cuda(a)) {
    check(aoti_torch_cuda_add_Tensor(a.get(), b.get(), alpha, &h), fn);
    return Tensor(h);
  }
#endif
  check(aoti_torch_cpu_add_Tensor(a.get(), b.get(), alpha, &h), fn);
  return Tensor(h);
}

#ifdef KERNFORGE_LEGACY_WITH_CUDA
extern "C" cudaError_t kfl_cuda_axpy(int kind, void* r, const void* a, const void* b, double alpha,
                                     double c, int64_t n, cudaStream_t stream);  // THCTensorMath.cu
#endif

// r = a + alpha * b (b NULL: r = a + c) on the CPU, in T's own precision
template <class T>
void cpu_axpy(void* out, const void* x, const void* y, double alpha, double c, int64_t n) {
  T* r = static_cast<T*>(out);
  const T *a = static_cast<const T*>(x), *b = static_cast<const T*>(y);
  // integers through int64_t: a negative double converted straight to an
  // unsigned type is undefined; through int64_t it wraps, as C's arithmetic
  const auto as_t = [](double v) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<int64_t>(v));
    else
      return static_cast<T>(v);
  };
  const T al = as_t(alpha), cc = as_t(c);
  torch::stable::parallel_for(0, n, int64_t{1} << 15, [&](int64_t begin, int64_t end) {
    if (b != nullptr)
      for (int64_t i = begin; i < end; i++) r[i] = a[i] + al * b[i];
    else
      for (int64_t i = begin; i < end; i++) r[i] = a[i] + cc;
  });
}

// r := t + alpha * src (src NULL: r := t + c) in one pass, r resized as t,
// when every tensor is contiguous, of t's size, dtype and device: float or
// double on the CPU, or any floating type on a CUDA device when the runtime
// is a CUDA build. False (nothing done) otherwise, for the two-pass route
// through torch's shims (whose add returns a new tensor to copy into r).
inline bool one_pass_axpy(const void* r, const void* t, const void* src, double alpha, double c,
                          const char* fn) {
  int32_t dtype, device, index;
  check(aoti_torch_get_dtype(handle(t), &dtype), fn);
  check(aoti_torch_get_device_type(handle(t), &device), fn);
  check(aoti_torch_get_device_index(handle(t), &index), fn);
  // the kinds of kfl_cuda_axpy; the CPU loop takes all but half and bfloat16
  const int32_t kinds[] = {
      aoti_torch_dtype_float32(),  aoti_torch_dtype_float64(), aoti_torch_dtype_float16(),
      aoti_torch_dtype_bfloat16(), aoti_torch_dtype_uint8(),   aoti_torch_dtype_int8(),
      aoti_torch_dtype_int16(),    aoti_torch_dtype_int32(),   aoti_torch_dtype_int64()};
  int kind = -1;
  for (int i = 0; i < 9; i++)
    if (kinds[i] == dtype) kind = i;
  const bool cpu = device == aoti_torch_device_type_cpu();
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  const bool cuda = device == aoti_torch_device_type_cuda();
#else
  const bool cuda = false;
#endif
  if (kind < 0 || !(cuda || (cpu && kind != 2 && kind != 3))) return false;
  const auto same = [&](const void* x) {
    int32_t x_dtype, x_device, x_index;
    bool contiguous;
    check(aoti_torch_get_dtype(handle(x), &x_dtype), fn);
    check(aoti_torch_get_device_type(handle(x), &x_device), fn);
    check(aoti_torch_get_device_index(handle(x), &x_index), fn);
    check(aoti_torch_is_contiguous(handle(x), &contiguous), fn);
    return x_dtype == dtype && x_device == device && x_index == index && contiguous &&
           sizes(x) == sizes(t);
  };
  if (!same(t) || (src != nullptr && !same(src))) return false;
  resize(const_cast<void*>(r), sizes(t), fn);
  if (!same(r)) return false;
  void *out, *a, *b = nullptr;
  check(aoti_torch_get_data_ptr(handle(r), &out), fn);
  check(aoti_torch_get_data_ptr(handle(t), &a), fn);
  if (src != nullptr) check(aoti_torch_get_data_ptr(handle(src), &b), fn);
  if (cpu) {
    const int64_t n = numel(t);
    switch (kind) {
      case 0: cpu_axpy<float>(out, a, b, alpha, c, n); break;
      case 1: cpu_axpy<double>(out, a, b, alpha, c, n); break;
      case 4: cpu_axpy<uint8_t>(out, a, b, alpha, c, n); break;
      case 5: cpu_axpy<int8_t>(out, a, b, alpha, c, n); break;
      case 6: cpu_axpy<int16_t>(out, a, b, alpha, c, n); break;
      case 7: cpu_axpy<int32_t>(out, a, b, alpha, c, n); break;
      default: cpu_axpy<int64_t>(out, a, b, alpha, c, n); break;
    }
    return true;
  }
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  void* stream;
  check(aoti_torch_get_current_cuda_stream(index, &stream), fn);
  DeviceGuardHandle guard;
  check(aoti_torch_create_device_guard(index, &guard), fn);
  const cudaError_t err =
      kfl_cuda_axpy(kind, out, a, b, alpha, c, numel(t), static_cast<cudaStream_t>(stream));
  aoti_torch_delete_device_guard(guard);
  __THCudaCheck(err, __FILE__, __LINE__);
#endif
  return true;
}

// r := r * beta + alpha * mat1 @ mat2, in place (floating types)
inline void addmm_into(const void* r, const Tensor& mat1, const Tensor& mat2, double beta,
                       double alpha, const char* fn) {
  const Tensor out = borrow(r);
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  if (is_cuda(out)) {
    check(aoti_torch_cuda_addmm_out(out.get(), out.get(), mat1.get(), mat2.get(), beta, alpha), fn);
    return;
  }
#endif
  check(aoti_torch_cpu_addmm_out(out.get(), out.get(), mat1.get(), mat2.get(), beta, alpha), fn);
}

// beta * t + alpha * mat @ vec (floating types)
inline Tensor addmv_of(const Tensor& t, const Tensor& mat, const Tensor& vec, double beta,
                       double alpha, const char* fn) {
  AtenTensorHandle h;
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  if (is_cuda(t)) {
    check(aoti_torch_cuda_addmv(t.get(), mat.get(), vec.get(), beta, alpha, &h), fn);
    return Tensor(h);
  }
#endif
  check(aoti_torch_cpu_addmv(t.get(), mat.get(), vec.get(), beta, alpha, &h), fn);
  return Tensor(h);
}

// Raw data as a tensor (no copy): on the CPU, or on the current CUDA device.
inline Tensor wrap(void* data, std::vector<int64_t> shape, std::vector<int64_t> strides,
                   int32_t dtype, bool cuda, const char* fn) {
  const auto [device, index] = device_of(cuda, fn);
  AtenTensorHandle h;
  check(aoti_torch_create_tensor_from_blob(data, static_cast<int64_t>(shape.size()), shape.data(),
                                           strides.data(), 0, dtype, device, index, &h),
        fn);
  return Tensor(h);
}

// TH's storage copy: element by element, converted, between storages of one size
inline void storage_copy(const void* self, const void* src, const char* fn) {
  const ptrdiff_t n = static_cast<const StorageBox*>(self)->size;
  const ptrdiff_t m = static_cast<const StorageBox*>(src)->size;
  if (n != m)
    throw std::runtime_error(std::string(fn) + ": size mismatch, " + std::to_string(n) + " and " +
                             std::to_string(m) + " elements");
  Tensor out = storage_tensor(self, fn);
  torch::stable::copy_(out, storage_tensor(src, fn));
}

// TH's rawCopy: the storage's size of elements from memory of its type at src
// (host memory; device memory of the current device for a CUDA storage)
inline void storage_raw_copy(const void* self, const void* src, int32_t dtype, bool cuda,
                             const char* fn) {
  const ptrdiff_t n = static_cast<const StorageBox*>(self)->size;
  if (n == 0) return;
  if (src == nullptr)
    throw std::runtime_error(std::string(fn) + ": src is NULL for " + std::to_string(n) +
                             " elements");
  Tensor out = storage_tensor(self, fn);
  torch::stable::copy_(out, wrap(const_cast<void*>(src), {n}, {1}, dtype, cuda, fn));
}

inline bool transposed(char trans, const char* fn) {
  if (trans == 'n' || trans == 'N') return false;
  if (trans == 't' || trans == 'T' || trans == 'c' || trans == 'C') return true;
  throw std::runtime_error(std::string(fn) + ": trans must be 'n', 't' or 'c', got '" + trans +
                           "'");
}

// The stored column-major matrix (ld >= rows) as the row-major tensor of its
// transpose: [cols, rows] with strides [ld, 1]; with batch >= 0, `batch` of
// them `stride` elements apart: [batch, cols, rows].
inline Tensor column_major_t(const void* data, int64_t rows, int64_t cols, int64_t ld,
                             int32_t dtype, bool cuda, const char* fn, int64_t batch = -1,
                             int64_t stride = 0) {
  if (ld < (rows > 1 ? rows : 1))
    throw std::runtime_error(std::string(fn) + ": leading dimension " + std::to_string(ld) +
                             " is less than the " + std::to_string(rows) + " rows");
  void* p = const_cast<void*>(data);
  if (batch < 0) return wrap(p, {cols, rows}, {ld, 1}, dtype, cuda, fn);
  return wrap(p, {batch, cols, rows}, {stride, ld, 1}, dtype, cuda, fn);
}

// r := beta r + alpha batch1 @ batch2, in place (floating types)
inline void baddbmm_into(const Tensor& r, const Tensor& batch1, const Tensor& batch2, double beta,
                         double alpha, const char* fn) {
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  if (is_cuda(r)) {
    check(aoti_torch_cuda_baddbmm_out(r.get(), r.get(), batch1.get(), batch2.get(), beta, alpha),
          fn);
    return;
  }
#endif
  check(aoti_torch_cpu_baddbmm_out(r.get(), r.get(), batch1.get(), batch2.get(), beta, alpha), fn);
}

// C (m x n, column-major) = alpha op(A) op(B) + beta C, as BLAS's gemm: in
// row-major terms C^T = alpha op(B)^T op(A)^T + beta C^T, one addmm. With
// batch >= 0, `batch` products at a + i * sa, b + i * sb, c + i * sc: one baddbmm.
inline void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
                 const void* a, int64_t lda, const void* b, int64_t ldb, double beta, void* c,
                 int64_t ldc, int32_t dtype, bool cuda, const char* fn, int64_t batch = -1,
                 int64_t sa = 0, int64_t sb = 0, int64_t sc = 0) {
  if (m == 0 || n == 0 || batch == 0) return;
  const bool ta = transposed(transa, fn), tb = transposed(transb, fn);
  const int d = batch < 0 ? 0 : 1;  // the first matrix dimension
  // op(A)^T: A stored m x k ('n') is [k, m] as stored-transpose; stored k x m ('t') is its
  // transpose
  const Tensor a_t = ta ? torch::stable::transpose(
                              column_major_t(a, k, m, lda, dtype, cuda, fn, batch, sa), d, d + 1)
                        : column_major_t(a, m, k, lda, dtype, cuda, fn, batch, sa);
  const Tensor b_t = tb ? torch::stable::transpose(
                              column_major_t(b, n, k, ldb, dtype, cuda, fn, batch, sb), d, d + 1)
                        : column_major_t(b, k, n, ldb, dtype, cuda, fn, batch, sb);
  const Tensor c_t = column_major_t(c, m, n, ldc, dtype, cuda, fn, batch, sc);
  if (batch < 0) {
    const TensorBox c_box = box_of(c_t);
    addmm_into(&c_box, b_t, a_t, beta, alpha, fn);
  } else {
    baddbmm_into(c_t, b_t, a_t, beta, alpha, fn);
  }
}

// y = alpha op(A) x + beta y, as BLAS's gemv (A m x n, column-major)
inline void gemv(char trans, int64_t m, int64_t n, double alpha, void* a, int64_t lda, void* x,
                 int64_t incx, double beta, void* y, int64_t incy, int32_t dtype, bool cuda,
                 const char* fn) {
  const bool t = transposed(trans, fn);
  const int64_t len_x = t ? m : n, len_y = t ? n : m;
  if (len_y == 0) return;
  const Tensor stored_t = column_major_t(a, m, n, lda, dtype, cuda, fn);  // [n, m]
  const Tensor op_a = t ? stored_t : torch::stable::transpose(stored_t, 0, 1);
  const Tensor xs = wrap(x, {len_x}, {incx}, dtype, cuda, fn);
  Tensor ys = wrap(y, {len_y}, {incy}, dtype, cuda, fn);
  torch::stable::copy_(ys, addmv_of(ys, op_a, xs, beta, alpha, fn));
}

// r := op(args..., out=r), the fields of r brought up to date (torch resizes it)
inline void out_op(const char* name, const void* r, std::vector<Tensor> args, const char* fn) {
  std::vector<StableIValue> stack;
  for (const Tensor& t : args) stack.push_back(torch::stable::detail::from(t));
  stack.push_back(torch::stable::detail::from(borrow(r)));
  call(name, "out", std::move(stack), fn);
  refresh(r);
}

inline double item(const Tensor& t, const char* fn) {
  const Tensor as_double = torch::stable::to(t, torch::headeronly::ScalarType::Double);
  double v;
  check(aoti_torch_item_float64(as_double.get(), &v), fn);
  return v;
}

// The least and the greatest value of t (not empty), read on the host: one
// synchronization for a CUDA tensor. For checks of values that torch's CUDA
// kernels would meet with a device-side assert, after which every CUDA call
// of the process fails.
inline std::pair<double, double> value_range(const Tensor& t, const char* fn) {
  std::vector<StableIValue> stack = {torch::stable::detail::from(t),
                                     torch::stable::detail::from(std::optional<int64_t>()),
                                     torch::stable::detail::from(false)};
  check(torch_call_dispatcher("aten::aminmax", "", stack.data(), TORCH_ABI_VERSION), fn);
  return {item(torch::stable::detail::to<Tensor>(stack[0]), fn),
          item(torch::stable::detail::to<Tensor>(stack[1]), fn)};
}

template <class Real>
Real reduce_all(const char* name, const void* t, const char* fn) {
  return from_double<Real>(item(call(name, "", {torch::stable::detail::from(borrow(t))}, fn), fn));
}

// A 0-dim result as TH's accreal: an int64_t for the integer types (exact,
// wrapping as C's), a double for the others
template <class Acc>
Acc accumulated(const Tensor& value, const char* fn) {
  if constexpr (std::is_integral_v<Acc>) {
    const Tensor as_long = torch::stable::to(value, torch::headeronly::ScalarType::Long);
    int64_t v;
    check(aoti_torch_item_int64(as_long.get(), &v), fn);
    return v;
  } else {
    return item(value, fn);
  }
}
// TH's sumall and prodall (name: aten::sum or aten::prod)
template <class Acc>
Acc accumulate_all(const char* name, const void* t, const char* fn) {
  return accumulated<Acc>(
      call(name, "",
           {torch::stable::detail::from(borrow(t)), torch::stable::detail::from(std::nullopt)}, fn),
      fn);
}

// r := t / other: truncated for the integer types, as C divides them
template <class Real>
void div_op(const void* r, const Tensor& t, const Tensor& other, const char* fn) {
  if constexpr (std::is_integral_v<Real>) {
    call("aten::div", "out_mode",
         {torch::stable::detail::from(t), torch::stable::detail::from(other),
          torch::stable::detail::from(std::optional<std::string>("trunc")),
          torch::stable::detail::from(borrow(r))},
         fn);
    refresh(r);
  } else
    out_op("aten::div", r, {t, other}, fn);
}

// r := t + alpha * src (src NULL: r := t + c): TH's add, cadd and csub. One
// pass where one_pass_axpy can; else torch's add into a new tensor, copied
// into r. Integer tensors take the one pass over contiguous copies instead
// (torch's add takes alpha only as a double, which it refuses for them).
template <class Real>
void axpy_op(const void* r, const void* t, const void* src, double alpha, double c,
             const char* fn) {
  if (one_pass_axpy(r, t, src, alpha, c, fn)) return;
  const Tensor a = borrow(t);
  if constexpr (std::is_integral_v<Real>) {
    const Tensor ac = torch::stable::contiguous(a);
    std::optional<Tensor> bc;
    if (src != nullptr) bc = torch::stable::contiguous(borrow(src));
    if (bc.has_value() && sizes(*bc) != sizes(t))
      throw std::runtime_error(std::string(fn) + ": sizes do not match");
    const Tensor out = torch::stable::empty_like(ac);
    const TensorBox out_box = box_of(out), a_box = box_of(ac);
    const std::optional<TensorBox> b_box =
        bc.has_value() ? std::optional(box_of(*bc)) : std::nullopt;
    if (!one_pass_axpy(&out_box, &a_box, b_box.has_value() ? &*b_box : nullptr, alpha, c, fn))
      throw std::runtime_error(std::string(fn) +
                               ": integer math on this device is not provided (CPU and CUDA are)");
    assign(r, out, fn);
  } else {
    assign(
        r,
        src == nullptr ? add_scaled(a, scalar(c), 1.0, fn) : add_scaled(a, borrow(src), alpha, fn),
        fn);
  }
}

// aten::<name>.<overload>(args...) through the dispatcher: its first result
template <class... A>
Tensor aten(const char* name, const char* overload, const char* fn, const A&... args) {
  return call(name, overload, {torch::stable::detail::from(args)...}, fn);
}

// r := aten::<name>.<overload>(args...), resized as TH did
template <class... A>
void into(const void* r, const char* name, const char* overload, const char* fn, const A&... args) {
  assign(r, aten(name, overload, fn, args...), fn);
}

// The floating types of TH's handles (real of THFloatTensor, ..., THHalf, THBFloat16)
template <class Real>
constexpr bool is_floating = std::is_floating_point_v<Real> || std::is_same_v<Real, THHalf> ||
                             std::is_same_v<Real, THBFloat16>;

// TH's expandNd: rets[i] := ops[i] expanded to the shape all of them
// broadcast to (sizes aligned at the last dimension; 1 stretches)
inline void expand_all(void* const* rets, const void* const* ops, int count, const char* fn) {
  if (count < 1 || rets == nullptr || ops == nullptr)
    throw std::runtime_error(std::string(fn) + ": count should be >= 1 with rets and ops, got " +
                             std::to_string(count));
  std::vector<int64_t> shape;
  for (int i = 0; i < count; ++i) {
    if (rets[i] == nullptr || ops[i] == nullptr)
      throw std::runtime_error(std::string(fn) + ": tensor " + std::to_string(i) + " is NULL");
    const std::vector<int64_t> s = sizes(ops[i]);
    if (s.size() > shape.size()) shape.insert(shape.begin(), s.size() - shape.size(), 1);
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& d = shape[shape.size() - s.size() + k];
      if (s[k] == d || s[k] == 1) continue;
      if (d != 1)
        throw std::runtime_error(std::string(fn) + ": the sizes of tensor " + std::to_string(i) +
                                 ", " + describe(s).str + ", do not broadcast with " +
                                 describe(shape).str);
      d = s[k];
    }
  }
  for (int i = 0; i < count; ++i)
    set(rets[i], aten("aten::expand", "", fn, borrow(ops[i]), shape, false), fn);
}

// TH's addcmul and addcdiv: r := t + value * src1 * src2, or t + value * src1 /
// src2; for the integer types (value * src1) / src2 truncated, as C computed it
template <class Real>
void addc_into(const void* r, const void* t, Real value, const void* src1, const void* src2,
               bool divide, const char* fn) {
  const Tensor a = borrow(src1), b = borrow(src2);
  if constexpr (is_floating<Real>) {
    const Tensor term = aten(divide ? "aten::div" : "aten::mul", "Tensor", fn, a, b);
    assign(r, torch::stable::subtract(borrow(t), term, -as_double(value)), fn);
  } else {
    const Tensor scaled = aten("aten::mul", "Tensor", fn, a, scalar_like(a, value));
    const Tensor term = divide ? aten("aten::div", "Tensor_mode", fn, scaled, b,
                                      std::optional<std::string>("trunc"))
                               : aten("aten::mul", "Tensor", fn, scaled, b);
    const TensorBox term_box = box_of(term);
    axpy_op<Real>(r, t, &term_box, 1.0, 0.0, fn);
  }
}

// beta * t + alpha * x, t left out where beta is 0 (as TH's BLAS-like math did)
inline Tensor scaled_sum(const Tensor& t, double beta, const Tensor& x, double alpha,
                         const char* fn) {
  if (beta == 0) return aten("aten::mul", "Tensor", fn, x, scalar_like(x, alpha));
  return torch::stable::subtract(aten("aten::mul", "Tensor", fn, t, scalar_like(t, beta)), x,
                                 -alpha);
}

// r := value everywhere, in shape
inline void filled(const void* r, std::vector<int64_t> shape, double value, const char* fn) {
  resize(const_cast<void*>(r), std::move(shape), fn);
  check(aoti_torch_aten_fill__Scalar(handle(r), value), fn);
}

// TH's cat and catArray: the tensors joined along dimension, into r
inline void joined(const void* r, const void* const* inputs, int n, int dimension, const char* fn) {
  if (n < 1 || inputs == nullptr)
    throw std::runtime_error(std::string(fn) + ": needs at least one tensor, got " +
                             std::to_string(n) + (inputs ? "" : " (inputs is NULL)"));
  std::vector<Tensor> parts;
  for (int i = 0; i < n; ++i) {
    if (inputs[i] == nullptr)
      throw std::runtime_error(std::string(fn) + ": tensor " + std::to_string(i) + " of " +
                               std::to_string(n) + " is NULL");
    parts.push_back(borrow(inputs[i]));
  }
  into(r, "aten::cat", "", fn, parts, static_cast<int64_t>(dimension));
}

// Every result (the first n) of aten::<name>.<overload>(args...)
template <class... A>
std::vector<Tensor> results(size_t n, const char* name, const char* overload, const char* fn,
                            const A&... args) {
  std::vector<StableIValue> stack = {torch::stable::detail::from(args)...};
  stack.resize(std::max(stack.size(), n));
  check(torch_call_dispatcher(name, overload, stack.data(), TORCH_ABI_VERSION), fn);
  std::vector<Tensor> out;
  for (size_t i = 0; i < n; ++i) out.push_back(torch::stable::detail::to<Tensor>(stack[i]));
  return out;
}

// values and indices := the two results of aten::<name>.<overload>(args...):
// TH's max, min, sort, topk, kthvalue, median and mode
template <class... A>
void pair_into(const void* values, const void* indices, const char* name, const char* overload,
               const char* fn, const A&... args) {
  std::vector<StableIValue> stack = {torch::stable::detail::from(args)...};
  check(torch_call_dispatcher(name, overload, stack.data(), TORCH_ABI_VERSION), fn);
  const Tensor v = torch::stable::detail::to<Tensor>(stack[0]);
  const Tensor i = torch::stable::detail::to<Tensor>(stack[1]);
  assign(values, v, fn);
  assign(indices, i, fn);
}

// r := a <op> b bit by bit (name: aten::bitwise_and, ...), for the integer
// types; TH refused the floating ones, in these words
template <class Real>
void bitwise_into(const void* r, const char* name, const char* what, const Tensor& a,
                  const Tensor& b, const char* fn) {
  if constexpr (is_floating<Real>)
    throw std::runtime_error(std::string(fn) + ": " + what +
                             " is only supported for integer type tensors");
  else
    into(r, name, "Tensor", fn, a, b);
}

// r := a shifted left or right by b: bits for the integer types; for the
// floating ones a times or over 2^b, as TH did
template <class Real>
void shift_into(const void* r, bool left, const Tensor& a, const Tensor& b, const char* fn) {
  if constexpr (is_floating<Real>) {
    const Tensor factor = aten("aten::pow", "Tensor_Tensor", fn, scalar_like(b, 2.0), b);
    into(r, left ? "aten::mul" : "aten::div", "Tensor", fn, a, factor);
  } else {
    into(r, left ? "aten::bitwise_left_shift" : "aten::bitwise_right_shift", "Tensor", fn, a, b);
  }
}

// TH's cross: along `dimension`, which must have size 3 (< 0: the first that does)
inline void cross_into(const void* r, const void* a, const void* b, int dimension, const char* fn) {
  const Tensor x = borrow(a), y = borrow(b);
  const std::vector<int64_t> sa = sizes(x), sb = sizes(y);
  if (sa != sb)
    throw std::runtime_error(std::string(fn) + ": the tensors' sizes differ, " + describe(sa).str +
                             " and " + describe(sb).str);
  int64_t dim = dimension;
  if (dim < 0) {
    for (size_t d = 0; d < sa.size() && dim < 0; ++d)
      if (sa[d] == 3) dim = static_cast<int64_t>(d);
    if (dim < 0) throw std::runtime_error(std::string(fn) + ": no dimension of size 3");
  }
  check_dim(x, dim, fn);
  if (sa[dim] != 3)
    throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) + " has size " +
                             std::to_string(sa[dim]) + ", not 3");
  into(r, "aten::linalg_cross", "", fn, x, y, dim);
}

// TH's histc: nbins equal bins over [lo, hi], or over t's [min, max] when the
// two are equal (widened by 1 each way when those are equal too)
inline void histc_into(const void* hist, const void* t, int64_t nbins, double lo, double hi,
                       const char* fn) {
  if (nbins <= 0)
    throw std::runtime_error(std::string(fn) + ": nbins must be positive, got " +
                             std::to_string(nbins));
  const Tensor x = borrow(t);
  if (lo == hi && numel(t) > 0) {
    lo = item(aten("aten::min", "", fn, x), fn);
    hi = item(aten("aten::max", "", fn, x), fn);
  }
  if (lo == hi) lo -= 1, hi += 1;
  AtenTensorHandle h;
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  if (is_cuda(x)) {
    check(aoti_torch_cuda_histc(x.get(), nbins, lo, hi, &h), fn);
    return assign(hist, Tensor(h), fn);
  }
#endif
  check(aoti_torch_cpu_histc(x.get(), nbins, lo, hi, &h), fn);
  assign(hist, Tensor(h), fn);
}

// TH's vector loops (THVector.h): out[i] = op(a[i], b[i * b_step]) over n
// elements of raw host memory (b_step 0: one constant), computed in double
// for half and bfloat16, checked first: no NULL where elements are, n >= 0,
// no integer division by 0
template <class Real, class Op>
void vector_loop(Real* out, const Real* a, const Real* b, ptrdiff_t b_step, ptrdiff_t n,
                 bool divides, const char* fn, const Op& op) {
  if (n < 0) throw std::runtime_error(std::string(fn) + ": negative n " + std::to_string(n));
  if (n == 0) return;
  if (out == nullptr || a == nullptr || b == nullptr)
    throw std::runtime_error(std::string(fn) + ": a NULL vector for " + std::to_string(n) +
                             " elements");
  if constexpr (!is_floating<Real>)
    if (divides)
      for (ptrdiff_t i = 0; i < n; ++i)
        if (b[i * b_step] == 0)
          throw std::runtime_error(std::string(fn) + ": integer division by 0");
  for (ptrdiff_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<Real, THHalf> || std::is_same_v<Real, THBFloat16>)
      out[i] = from_double<Real>(op(as_double(a[i]), as_double(b[i * b_step])));
    else
      out[i] = static_cast<Real>(op(a[i], b[i * b_step]));
  }
}

// one dimension as the int[1]? of sum, mean, std and var
inline std::optional<std::vector<int64_t>> dims(int dimension) {
  return std::vector<int64_t>{dimension};
}

// TH's round: halves away from zero, as C's round (torch's rounds them to even)
inline Tensor round_half_away(const Tensor& t, const char* fn) {
  const Tensor half = aten("aten::copysign", "Tensor", fn, scalar_like(t, 0.5), t);
  return aten("aten::trunc", "", fn, torch::stable::subtract(t, half, -1.0));
}

// TH's p-norm of t over the dimensions `over` (all of them when empty), each
// kept as size 1 where keepdim: p = 0 counts the nonzero elements, p = inf
// is the largest |t|. torch's norms take p as a Scalar, which the stable
// ABI's dispatcher calls do not carry: this is the same sum of powers.
inline Tensor p_norm(const Tensor& t, double p, const std::vector<int64_t>& over, bool keepdim,
                     const char* fn) {
  const Tensor a = aten("aten::abs", "", fn, t);
  if (std::isinf(p)) return aten("aten::amax", "", fn, a, over, keepdim);
  const std::optional<std::vector<int64_t>> dims =
      over.empty() ? std::nullopt : std::optional<std::vector<int64_t>>(over);
  const auto sum = [&](const Tensor& x) {
    return aten("aten::sum", "dim_IntList", fn, x, dims, keepdim, std::nullopt);
  };
  if (p == 0) {
    const Tensor nonzero = aten("aten::ne", "Tensor", fn, a, scalar_like(a, 0.0));
    return sum(torch::stable::to(nonzero, t.scalar_type()));
  }
  if (p == 1) return sum(a);
  const Tensor powers = aten("aten::pow", "Tensor_Tensor", fn, a, scalar_like(a, p));
  return aten("aten::pow", "Tensor_Tensor", fn, sum(powers), scalar_like(a, 1.0 / p));
}

// t scaled, slice by slice along dim, to a p-norm of at most maxnorm (TH's renorm)
inline Tensor renormed(const Tensor& t, double p, int dim, double maxnorm, const char* fn) {
  const int64_t n = t.dim();
  if (n < 2)
    throw std::runtime_error(std::string(fn) + ": needs a tensor of 2 dimensions or more, got " +
                             std::to_string(n));
  if (dim < 0 || dim >= n)
    throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                             " out of range for a " + std::to_string(n) + "-D tensor");
  if (!(p > 0)) throw std::runtime_error(std::string(fn) + ": the norm's p must be positive");
  std::vector<int64_t> others;
  for (int64_t d = 0; d < n; ++d)
    if (d != dim) others.push_back(d);
  const Tensor norms = p_norm(t, p, others, true, fn);
  const Tensor scale = aten("aten::div", "Tensor", fn, scalar_like(norms, maxnorm),
                            add_scaled(norms, scalar_like(norms, 1e-7), 1.0, fn));
  const Tensor over = aten("aten::gt", "Tensor", fn, norms, scalar_like(norms, maxnorm));
  const Tensor factor = aten("aten::where", "self", fn, over, scale, scalar_like(norms, 1.0));
  return aten("aten::mul", "Tensor", fn, t, factor);
}

// start + i * step for i = 0 .. n - 1, in double on like's device (exact for
// the integers of TH's integer ranges up to 2^53)
inline Tensor stepped(const Tensor& like, int64_t n, double start, double step, const char* fn) {
  Tensor ones = torch::stable::new_empty(like, {n}, torch::headeronly::ScalarType::Double);
  torch::stable::fill_(ones, 1.0);
  const Tensor index = add_scaled(aten("aten::cumsum", "", fn, ones, int64_t{0}, std::nullopt),
                                  scalar_like(ones, -1.0), 1.0, fn);  // 0 .. n - 1
  return add_scaled(aten("aten::mul", "Tensor", fn, index, scalar_like(ones, step)),
                    scalar_like(ones, start), 1.0, fn);
}

// TH's range (xmax included: floor((xmax - xmin) / step) + 1 values) and
// arange (xmax left out: ceil), into r as its type
template <class Acc>
void range_into(const void* r, Acc xmin, Acc xmax, Acc step, bool inclusive, const char* fn) {
  if (step == 0) throw std::runtime_error(std::string(fn) + ": step must be nonzero");
  if ((step > 0 && xmax < xmin) || (step < 0 && xmax > xmin))
    throw std::runtime_error(std::string(fn) +
                             ": upper bound and larger bound inconsistent with step sign");
  const double steps =
      (static_cast<double>(xmax) - static_cast<double>(xmin)) / static_cast<double>(step);
  const int64_t n = inclusive ? static_cast<int64_t>(std::floor(steps)) + 1
                              : static_cast<int64_t>(std::ceil(steps));
  const Tensor self = borrow(r);
  const Tensor values = stepped(self, n, static_cast<double>(xmin), static_cast<double>(step), fn);
  assign(r, torch::stable::to(values, self.scalar_type()), fn);
}

// TH's linspace (n values from a to b) and logspace (10 to those powers)
inline void spaced_into(const void* r, double a, double b, int64_t n, bool powers_of_ten,
                        const char* fn) {
  if (n < 0)
    throw std::runtime_error(std::string(fn) + ": invalid number of points " + std::to_string(n));
  const Tensor self = borrow(r);
  Tensor values = stepped(self, n, a, n > 1 ? (b - a) / static_cast<double>(n - 1) : 0.0, fn);
  if (powers_of_ten)
    values = aten("aten::pow", "Tensor_Tensor", fn, scalar_like(values, 10.0), values);
  assign(r, torch::stable::to(values, self.scalar_type()), fn);
}

// TH's dist: the p-norm of a - b, element by element in each one's order
inline double distance(const void* a, const void* b, double p, const char* fn) {
  if (numel(a) != numel(b))
    throw std::runtime_error(std::string(fn) + ": the tensors have " + std::to_string(numel(a)) +
                             " and " + std::to_string(numel(b)) + " elements");
  const std::vector<int64_t> flat = {-1};
  Tensor x = aten("aten::reshape", "", fn, borrow(a), flat);
  Tensor y = aten("aten::reshape", "", fn, borrow(b), flat);
  if (!is_floating_dtype(dtype_of(x))) {  // THC's integer types: in double
    x = torch::stable::to(x, torch::headeronly::ScalarType::Double);
    y = torch::stable::to(y, torch::headeronly::ScalarType::Double);
  }
  return item(p_norm(torch::stable::subtract(x, y, 1.0), p, {}, false, fn), fn);
}

// a mask of TH's bytes as torch's bool
inline Tensor as_bool(const void* mask) {
  return torch::stable::to(borrow(mask), torch::headeronly::ScalarType::Bool);
}

// index (1-D) shaped to broadcast along dim of like, then expanded to it
inline Tensor spread(const Tensor& index, const Tensor& like, int dim, const char* fn) {
  std::vector<int64_t> shape(sizes(like).size(), 1);
  if (dim < 0 || dim >= static_cast<int>(shape.size()))
    throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                             " out of range for a " + std::to_string(shape.size()) + "-D tensor");
  shape[dim] = -1;
  const Tensor view = aten("aten::view", "", fn, index, shape);
  return aten("aten::expand", "", fn, view, sizes(like), false);
}

// a number on [0, 1) from the generator's next 32 bits, as TH made it
inline double uniform01(THGenerator* gen) {
  return gen->engine() * (1.0 / 4294967296.0);
}

// self := draw() element by element, in self's element order (a CPU tensor)
template <class Draw>
void fill_drawn(const void* self, const Draw& draw) {
  Tensor t = borrow(self);
  const int64_t n = numel(self);
  Tensor values = torch::stable::new_empty(t, sizes(t), torch::headeronly::ScalarType::Double);
  double* p = static_cast<double*>(values.data_ptr());
  for (int64_t i = 0; i < n; ++i) p[i] = draw();
  torch::stable::copy_(t, values);
}

// self := aten::<name>_(self, params..., generator=None): torch's default generator
template <class... A>
void torch_drawn(const void* self, const char* name, const char* overload, const char* fn,
                 const A&... params) {
  aten(name, overload, fn, borrow(self), params..., std::nullopt);
}

// TH's bernoulli with a probability per element: p (as many elements as self,
// in its order) from gen with TH's formula, or (gen NULL) torch's generator
inline void bernoulli_each(const void* self, THGenerator* gen, const void* p, const char* fn) {
  if (numel(p) != numel(self))
    throw std::runtime_error(std::string(fn) + ": p has " + std::to_string(numel(p)) +
                             " elements, self " + std::to_string(numel(self)));
  const Tensor probs = torch::stable::reshape(torch::stable::contiguous(borrow(p)), sizes(self));
  if (numel(p) > 0) {
    const auto [lo, hi] = value_range(probs, fn);
    if (!(lo >= 0 && hi <= 1))
      throw std::runtime_error(std::string(fn) + ": p must be in [0, 1], got a value of " +
                               std::to_string(lo < 0 || lo != lo ? lo : hi));
  }
  if (gen == nullptr) {
    aten("aten::bernoulli_", "Tensor", fn, borrow(self), probs, std::nullopt);
    return;
  }
  const Tensor q = torch::stable::to(probs, torch::headeronly::ScalarType::Double);
  const double* values = static_cast<const double*>(q.data_ptr());
  int64_t i = 0;
  fill_drawn(self, [&] { return static_cast<double>(THRandom_bernoulli(gen, values[i++])); });
}

// TH's clampedRandom: integers in [min, max), from gen (its 32-bit numbers,
// two of them for a range of 2^32 or more) or (gen NULL) torch's generator
inline void clamped_random(const void* self, THGenerator* gen, int64_t min, int64_t max,
                           const char* fn) {
  if (max <= min)
    throw std::runtime_error(std::string(fn) + ": max must be greater than min, got min " +
                             std::to_string(min) + " and max " + std::to_string(max));
  if (gen == nullptr) {
    aten("aten::random_", "from", fn, borrow(self), min, std::optional<int64_t>(max), std::nullopt);
    return;
  }
  const uint64_t range = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
  fill_drawn(self, [&] {
    uint64_t v = THRandom_random(gen);
    if (range >= (uint64_t{1} << 32)) v = (v << 32) | THRandom_random(gen);
    return static_cast<double>(static_cast<int64_t>(v % range) + min);
  });
}

// What TH's random() takes its generator's number modulo: the largest value
// the type holds exactly, plus one
template <class Real>
uint64_t random_modulus() {
  if constexpr (std::is_same_v<Real, THHalf>)
    return (uint64_t{1} << 11) + 1;
  else if constexpr (std::is_same_v<Real, THBFloat16>)
    return (uint64_t{1} << 8) + 1;
  else if constexpr (std::is_same_v<Real, float>)
    return (uint64_t{1} << 24) + 1;
  else if constexpr (std::is_same_v<Real, double>)
    return (uint64_t{1} << 53) + 1;
  else
    return static_cast<uint64_t>(std::numeric_limits<Real>::max()) + 1;
}

// TH's normal draws need a positive standard deviation (torch's take 0)
inline void check_stdv(double stdv, const char* fn) {
  if (!(stdv > 0))
    throw std::runtime_error(std::string(fn) + ": standard deviation must be strictly positive");
}

// TH's logNormal takes the distribution's own mean and standard deviation;
// torch's log_normal_ those of its logarithm
inline std::pair<double, double> log_normal_of(double mean, double stdv, const char* fn) {
  if (!(stdv > 0) || !(mean > 0))
    throw std::runtime_error(std::string(fn) + ": mean and standard deviation must be positive");
  const double m2 = mean * mean, v = stdv * stdv;
  return {std::log(m2 / std::sqrt(v + m2)), std::sqrt(std::log(v / m2 + 1))};
}

}  // namespace kfl

using namespace kfl;
