// The TH/THC C API of include/TH/TH.h and include/THC/THC.h, on torch's
// stable C ABI. Compiled into every extension create_extension builds (its
// symbols stay inside that extension). A tensor handle (THFloatTensor*, ...)
// points to a box (TH.h's struct) holding an AtenTensorHandle: for an
// argument, the one the extension's op was called with, borrowed.
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

namespace {

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
  StorageBox own_storage;  // past TH.h's fields
};
static_assert(sizeof(TensorBox) >= sizeof(THFloatTensor) &&
              offsetof(TensorBox, size) == offsetof(THFloatTensor, size) &&
              offsetof(TensorBox, stride) == offsetof(THFloatTensor, stride) &&
              offsetof(TensorBox, nDimension) == offsetof(THFloatTensor, nDimension) &&
              offsetof(TensorBox, storage) == offsetof(THFloatTensor, storage) &&
              offsetof(TensorBox, storageOffset) == offsetof(THFloatTensor, storageOffset));
static_assert(sizeof(StorageBox) == sizeof(THFloatStorage) &&
              offsetof(StorageBox, data) == offsetof(THFloatStorage, data) &&
              offsetof(StorageBox, size) == offsetof(THFloatStorage, size) &&
              offsetof(StorageBox, owner) == offsetof(THFloatStorage, kfl_owner));

AtenTensorHandle handle(const void* t) {
  return static_cast<const TensorBox*>(t)->tensor;  // a StorageBox's tensor is first too
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

int64_t element_size(AtenTensorHandle t) {
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
void refresh(const void* t) {
  auto* box = static_cast<TensorBox*>(const_cast<void*>(t));
  int64_t d, offset;
  check(aoti_torch_get_sizes(box->tensor, &box->size), "sizes");
  check(aoti_torch_get_strides(box->tensor, &box->stride), "strides");
  check(aoti_torch_get_dim(box->tensor, &d), "dim");
  check(aoti_torch_get_storage_offset(box->tensor, &offset), "storage offset");
  box->nDimension = static_cast<int>(d);
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
TensorBox box_of(const Tensor& t) {
  TensorBox box{t.get(), nullptr, nullptr, 0, 0};
  refresh(&box);
  return box;
}

// The sizes of a tensor (not a handle).
std::vector<int64_t> sizes(const Tensor& t) {
  int64_t* values;
  check(aoti_torch_get_sizes(t.get(), &values), "sizes");
  return std::vector<int64_t>(values, values + t.dim());
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
std::mutex registry_mutex;
std::unordered_map<const void*, Count> registry;
// storages handed out during the current extension call, released at its end
// unless retained (kernforge_legacy::CallScope)
thread_local std::vector<const void*> call_storages;
// the boxes of the current call's tensor arguments (deque: they do not move)
thread_local std::deque<TensorBox> call_boxes;

// A new box of the handle's kind for t (a new reference), kept in the registry.
void* hand_out(const Tensor& t, long refs, bool storage) {
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
    box = new TensorBox{h, nullptr, nullptr, 0, 0};
    refresh(box);
  }
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry[box] = {refs, true, storage};
  return box;
}

// Deletes a box hand_out made, with its reference to the tensor.
void destroy(const void* box, bool storage) {
  aoti_torch_delete_tensor_object(handle(box));
  if (storage)
    delete static_cast<const StorageBox*>(box);
  else
    delete static_cast<const TensorBox*>(box);
}

void retain(const void* h, const char* fn) {
  if (h == nullptr) throw std::runtime_error(std::string(fn) + ": NULL");
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto it = registry.find(h);
  if (it == registry.end())
    registry[h] = {2, false,
                   false};  // the call's own, retained: one more reference than the call's
  else
    ++it->second.refs;
}

void release(const void* h) {
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
Tensor borrow(const void* h) {
  AtenTensorHandle ref;
  check(aoti_torch_new_tensor_handle(handle(h), &ref), "new tensor handle");
  return Tensor(ref);
}

// aten::<name>.<overload> through the dispatcher; returns the first result.
Tensor call(const char* name, const char* overload, std::vector<StableIValue> stack,
            const char* fn) {
  check(torch_call_dispatcher(name, overload, stack.data(), TORCH_ABI_VERSION), fn);
  return torch::stable::detail::to<Tensor>(stack[0]);
}

// self takes src's storage, offset, sizes and strides (aten::set_).
void set(const void* self, const Tensor& src, const char* fn) {
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

[[maybe_unused]] bool is_cuda(const Tensor& t) {
  int32_t device;
  check(aoti_torch_get_device_type(t.get(), &device), "device");
  return device == aoti_torch_device_type_cuda();
}

// r := value, resized as TH did, when value is a new tensor
void assign(const void* r, const Tensor& value, const char* fn) {
  resize(const_cast<void*>(r), sizes(value), fn);
  Tensor out = borrow(r);
  torch::stable::copy_(out, value);
}

// (device type, index): the CPU, or the current CUDA device.
std::pair<int32_t, int32_t> device_of(bool cuda, const char* fn) {
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
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape, const char* fn) {
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
Tensor empty(std::vector<int64_t> shape, int32_t dtype, bool cuda, const char* fn,
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

// A view of src with its own sizes, strides and offset, over the same storage
// (TH's newWithTensor; the storage view below).
Tensor view_of(const void* src, std::vector<int64_t> shape, std::vector<int64_t> strides,
               int64_t offset_change, const char* fn) {
  AtenTensorHandle h;
  check(aoti_torch__reinterpret_tensor(handle(src), static_cast<int64_t>(shape.size()),
                                       shape.data(), strides.data(), offset_change, &h),
        fn);
  return Tensor(h);
}

std::vector<int64_t> strides(const void* t) {
  int64_t* values;
  check(aoti_torch_get_strides(handle(t), &values), "strides");
  return std::vector<int64_t>(values, values + dim_of(t));
}

int64_t storage_offset(const void* t) {
  int64_t offset;
  check(aoti_torch_get_storage_offset(handle(t), &offset), "storage offset");
  return offset;
}

// The whole storage behind a storage handle, as a 1-D tensor from its first
// element: for a tensor's `storage` field, which has no tensor of its own, a
// view made now.
Tensor storage_tensor(const void* s, const char* fn) {
  const auto* box = static_cast<const StorageBox*>(s);
  if (box->owner == nullptr) return borrow(s);
  return view_of(box->owner, {box->size}, {1}, -storage_offset(box->owner), fn);
}

// A tensor's `storage` field lives as long as the tensor handle: it has no
// reference count of its own to retain or free.
void check_counted(const void* s, const char* fn) {
  if (s != nullptr && static_cast<const StorageBox*>(s)->owner != nullptr)
    throw std::runtime_error(std::string(fn) +
                             ": t->storage is not reference counted; to keep a tensor's "
                             "storage, retain the one T_storage(t) returns");
}

// The address of one element of t, each index checked against its size, as
// TH's get and set functions checked them.
char* element_at(const void* t, std::initializer_list<int64_t> index, size_t elem_size,
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
void cuda_element_copy(const void* t, void* dst, const void* src, size_t bytes, bool to_host,
                       const char* fn) {
#ifdef KERNFORGE_LEGACY_WITH_CUDA
  int32_t device;
  void* stream;
  check(aoti_torch_get_device_index(handle(t), &device), fn);
  check(aoti_torch_get_current_cuda_stream(device, &stream), fn);
  const auto s = static_cast<cudaStream_t>(stream);
  kfl_thc_check(cudaMemcpyAsync(dst, src, bytes,
                                to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice, s),
                __FILE__, __LINE__);
  kfl_thc_check(cudaStreamSynchronize(s), __FILE__, __LINE__);
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

// The values of a THLongStorage of sizes or strides.
std::vector<int64_t> longs_of(const THLongStorage* s, const char* fn) {
  if (s == nullptr) throw std::runtime_error(std::string(fn) + ": the sizes are NULL");
  return std::vector<int64_t>(s->data, s->data + s->size);
}

// "[2 x 3 x 4]" in TH's buffer; cut to its first characters and "...]"
// where it would not fit, as TH cut it.
THDescBuff describe(const std::vector<int64_t>& shape) {
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
Tensor squeezed(const Tensor& t, const char* fn) {
  const Tensor out = call("aten::squeeze", "", {torch::stable::detail::from(t)}, fn);
  if (out.dim() > 0 || t.dim() == 0) return out;
  return call(
      "aten::view", "",
      {torch::stable::detail::from(out), torch::stable::detail::from(std::vector<int64_t>{1})}, fn);
}

// TH's isSetTo: a and b view the same elements of one storage, in one layout
bool same_view(const void* a, const void* b) {
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
Tensor storage_view(const void* s, ptrdiff_t offset, std::vector<int64_t> shape,
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

THLongStorage* long_storage(const std::vector<int64_t>& values, const char* fn) {
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
void resize_to(void* self, std::vector<int64_t> shape,
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
template <class Real>
void* storage_of(const void* t, const char* fn) {
  int64_t nbytes;
  check(aoti_torch_get_storage_size(handle(t), &nbytes), fn);
  if (nbytes == 0) return nullptr;
  const Tensor view =
      view_of(t, {nbytes / static_cast<int64_t>(sizeof(Real))}, {1}, -storage_offset(t), fn);
  void* h = hand_out(view, 0, true);
  call_storages.push_back(h);
  return h;
}

// TH's copy: element by element in order, between tensors of one number of elements.
void copy_into(const void* self, const void* src, const char* fn) {
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
Tensor add_scaled(const Tensor& a, const Tensor& b, double alpha, const char* fn) {
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

#ifdef KFL_CUDA_KERNELS
extern "C" cudaError_t kfl_cuda_axpy(int kind, void* r, const void* a, const void* b, double alpha,
                                     double c, int64_t n, cudaStream_t stream);  // compat_cuda.cu
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
// double on the CPU, or any floating type on a CUDA device when the extension
// has compat_cuda.cu. False (nothing done) otherwise, for the two-pass route
// through torch's shims (whose add returns a new tensor to copy into r).
bool one_pass_axpy(const void* r, const void* t, const void* src, double alpha, double c,
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
#ifdef KFL_CUDA_KERNELS
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
#ifdef KFL_CUDA_KERNELS
  void* stream;
  check(aoti_torch_get_current_cuda_stream(index, &stream), fn);
  DeviceGuardHandle guard;
  check(aoti_torch_create_device_guard(index, &guard), fn);
  const cudaError_t err =
      kfl_cuda_axpy(kind, out, a, b, alpha, c, numel(t), static_cast<cudaStream_t>(stream));
  aoti_torch_delete_device_guard(guard);
  kfl_thc_check(err, __FILE__, __LINE__);
#endif
  return true;
}

// r := r * beta + alpha * mat1 @ mat2, in place (floating types)
void addmm_into(const void* r, const Tensor& mat1, const Tensor& mat2, double beta, double alpha,
                const char* fn) {
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
Tensor addmv_of(const Tensor& t, const Tensor& mat, const Tensor& vec, double beta, double alpha,
                const char* fn) {
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
Tensor wrap(void* data, std::vector<int64_t> shape, std::vector<int64_t> strides, int32_t dtype,
            bool cuda, const char* fn) {
  const auto [device, index] = device_of(cuda, fn);
  AtenTensorHandle h;
  check(aoti_torch_create_tensor_from_blob(data, static_cast<int64_t>(shape.size()), shape.data(),
                                           strides.data(), 0, dtype, device, index, &h),
        fn);
  return Tensor(h);
}

bool transposed(char trans, const char* fn) {
  if (trans == 'n' || trans == 'N') return false;
  if (trans == 't' || trans == 'T' || trans == 'c' || trans == 'C') return true;
  throw std::runtime_error(std::string(fn) + ": trans must be 'n', 't' or 'c', got '" + trans +
                           "'");
}

// The stored column-major matrix (ld >= rows) as the row-major tensor of its
// transpose: [cols, rows] with strides [ld, 1]; with batch >= 0, `batch` of
// them `stride` elements apart: [batch, cols, rows].
Tensor column_major_t(const void* data, int64_t rows, int64_t cols, int64_t ld, int32_t dtype,
                      bool cuda, const char* fn, int64_t batch = -1, int64_t stride = 0) {
  if (ld < (rows > 1 ? rows : 1))
    throw std::runtime_error(std::string(fn) + ": leading dimension " + std::to_string(ld) +
                             " is less than the " + std::to_string(rows) + " rows");
  void* p = const_cast<void*>(data);
  if (batch < 0) return wrap(p, {cols, rows}, {ld, 1}, dtype, cuda, fn);
  return wrap(p, {batch, cols, rows}, {stride, ld, 1}, dtype, cuda, fn);
}

// r := beta r + alpha batch1 @ batch2, in place (floating types)
void baddbmm_into(const Tensor& r, const Tensor& batch1, const Tensor& batch2, double beta,
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
void gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc, int32_t dtype,
          bool cuda, const char* fn, int64_t batch = -1, int64_t sa = 0, int64_t sb = 0,
          int64_t sc = 0) {
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
void gemv(char trans, int64_t m, int64_t n, double alpha, void* a, int64_t lda, void* x,
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
void out_op(const char* name, const void* r, std::vector<Tensor> args, const char* fn) {
  std::vector<StableIValue> stack;
  for (const Tensor& t : args) stack.push_back(torch::stable::detail::from(t));
  stack.push_back(torch::stable::detail::from(borrow(r)));
  call(name, "out", std::move(stack), fn);
  refresh(r);
}

double item(const Tensor& t, const char* fn) {
  const Tensor as_double = torch::stable::to(t, torch::headeronly::ScalarType::Double);
  double v;
  check(aoti_torch_item_float64(as_double.get(), &v), fn);
  return v;
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
                               ": integer math on CUDA needs the runtime's CUDA kernels, which "
                               "ffi.build() and build_py compile (setup.py's Extension does not)");
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

// beta * t + alpha * x, t left out where beta is 0 (as TH's BLAS-like math did)
Tensor scaled_sum(const Tensor& t, double beta, const Tensor& x, double alpha, const char* fn) {
  if (beta == 0) return aten("aten::mul", "Tensor", fn, x, scalar_like(x, alpha));
  return torch::stable::subtract(aten("aten::mul", "Tensor", fn, t, scalar_like(t, beta)), x,
                                 -alpha);
}

// r := value everywhere, in shape
void filled(const void* r, std::vector<int64_t> shape, double value, const char* fn) {
  resize(const_cast<void*>(r), std::move(shape), fn);
  check(aoti_torch_aten_fill__Scalar(handle(r), value), fn);
}

// TH's cat and catArray: the tensors joined along dimension, into r
void joined(const void* r, const void* const* inputs, int n, int dimension, const char* fn) {
  std::vector<Tensor> parts;
  for (int i = 0; i < n; ++i) parts.push_back(borrow(inputs[i]));
  into(r, "aten::cat", "", fn, parts, static_cast<int64_t>(dimension));
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

// one dimension as the int[1]? of sum, mean, std and var
std::optional<std::vector<int64_t>> dims(int dimension) {
  return std::vector<int64_t>{dimension};
}

// TH's round: halves away from zero, as C's round (torch's rounds them to even)
Tensor round_half_away(const Tensor& t, const char* fn) {
  const Tensor half = aten("aten::copysign", "Tensor", fn, scalar_like(t, 0.5), t);
  return aten("aten::trunc", "", fn, torch::stable::subtract(t, half, -1.0));
}

// TH's p-norm of t over the dimensions `over` (all of them when empty), each
// kept as size 1 where keepdim: p = 0 counts the nonzero elements, p = inf
// is the largest |t|. torch's norms take p as a Scalar, which the stable
// ABI's dispatcher calls do not carry: this is the same sum of powers.
Tensor p_norm(const Tensor& t, double p, const std::vector<int64_t>& over, bool keepdim,
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
Tensor renormed(const Tensor& t, double p, int dim, double maxnorm, const char* fn) {
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
Tensor stepped(const Tensor& like, int64_t n, double start, double step, const char* fn) {
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
void spaced_into(const void* r, double a, double b, int64_t n, bool powers_of_ten, const char* fn) {
  if (n < 0)
    throw std::runtime_error(std::string(fn) + ": invalid number of points " + std::to_string(n));
  const Tensor self = borrow(r);
  Tensor values = stepped(self, n, a, n > 1 ? (b - a) / static_cast<double>(n - 1) : 0.0, fn);
  if (powers_of_ten)
    values = aten("aten::pow", "Tensor_Tensor", fn, scalar_like(values, 10.0), values);
  assign(r, torch::stable::to(values, self.scalar_type()), fn);
}

// TH's dist: the p-norm of a - b, element by element in each one's order
double distance(const void* a, const void* b, double p, const char* fn) {
  if (numel(a) != numel(b))
    throw std::runtime_error(std::string(fn) + ": the tensors have " + std::to_string(numel(a)) +
                             " and " + std::to_string(numel(b)) + " elements");
  const std::vector<int64_t> flat = {-1};
  const Tensor x = aten("aten::reshape", "", fn, borrow(a), flat);
  const Tensor y = aten("aten::reshape", "", fn, borrow(b), flat);
  return item(p_norm(torch::stable::subtract(x, y, 1.0), p, {}, false, fn), fn);
}

// a mask of TH's bytes as torch's bool
Tensor as_bool(const void* mask) {
  return torch::stable::to(borrow(mask), torch::headeronly::ScalarType::Bool);
}

// index (1-D) shaped to broadcast along dim of like, then expanded to it
Tensor spread(const Tensor& index, const Tensor& like, int dim, const char* fn) {
  std::vector<int64_t> shape(sizes(like).size(), 1);
  if (dim < 0 || dim >= static_cast<int>(shape.size()))
    throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                             " out of range for a " + std::to_string(shape.size()) + "-D tensor");
  shape[dim] = -1;
  const Tensor view = aten("aten::view", "", fn, index, shape);
  return aten("aten::expand", "", fn, view, sizes(like), false);
}

// a number on [0, 1) from the generator's next 32 bits, as TH made it
double uniform01(THGenerator* gen) {
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

// TH's logNormal takes the distribution's own mean and standard deviation;
// torch's log_normal_ those of its logarithm
std::pair<double, double> log_normal_of(double mean, double stdv, const char* fn) {
  if (!(stdv > 0) || !(mean > 0))
    throw std::runtime_error(std::string(fn) + ": mean and standard deviation must be positive");
  const double m2 = mean * mean, v = stdv * stdv;
  return {std::log(m2 / std::sqrt(v + m2)), std::sqrt(std::log(v / m2 + 1))};
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
    if (t == nullptr) continue;
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
  TensorBox& box = call_boxes.emplace_back(TensorBox{t, nullptr, nullptr, 0, 0});
  refresh(&box);
  return &box;
}

}  // namespace kernforge_legacy

extern "C" {

THDescBuff THLongStorage_sizeDesc(const THLongStorage* size) {
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
  throw std::runtime_error(msg + " (" + file + ":" + std::to_string(line) + ")");
}

void kfl_th_assertion_failed(const char* file, int line, const char* condition, const char* fmt,
                             ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = format(fmt, args);
  va_end(args);
  throw std::runtime_error(std::string("Assertion `") + condition + "' failed. " + msg + " (" +
                           file + ":" + std::to_string(line) + ")");
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
  /* 0.4's legacy count: an empty tensor has no dimensions */                              \
  int T##__nDimension(__VA_ARGS__ const T* self) {                                         \
    return numel(self) == 0 ? 0 : static_cast<int>(dim_of(self));                          \
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
  THDescBuff T##_sizeDesc(__VA_ARGS__ const T* self) {                                     \
    return describe(sizes(self));                                                          \
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

// Tensors made and released, views, copies and storages of one handle type
// (TH/TH.h's TH_TENSOR_MEMORY_API); `cuda`: tensors it makes are on the
// current CUDA device. NONE is the parameter list of T_new.
#define KFL_DEFINE_MEMORY_API(T, S, real, dtype, cuda, NONE, ...)                                  \
  static T* T##_made(const Tensor& t) {                                                            \
    return static_cast<T*>(hand_out(t, 1, false));                                                 \
  }                                                                                                \
  T* T##_new(NONE) {                                                                               \
    return T##_made(empty({0}, aoti_torch_dtype_##dtype(), cuda, #T "_new"));                      \
  }                                                                                                \
  T* T##_newWithSize1d(__VA_ARGS__ int64_t s0) {                                                   \
    return T##_made(empty({s0}, aoti_torch_dtype_##dtype(), cuda, #T "_newWithSize1d"));           \
  }                                                                                                \
  T* T##_newWithSize2d(__VA_ARGS__ int64_t s0, int64_t s1) {                                       \
    return T##_made(empty({s0, s1}, aoti_torch_dtype_##dtype(), cuda, #T "_newWithSize2d"));       \
  }                                                                                                \
  T* T##_newWithSize3d(__VA_ARGS__ int64_t s0, int64_t s1, int64_t s2) {                           \
    return T##_made(empty({s0, s1, s2}, aoti_torch_dtype_##dtype(), cuda, #T "_newWithSize3d"));   \
  }                                                                                                \
  T* T##_newWithSize4d(__VA_ARGS__ int64_t s0, int64_t s1, int64_t s2, int64_t s3) {               \
    return T##_made(                                                                               \
        empty({s0, s1, s2, s3}, aoti_torch_dtype_##dtype(), cuda, #T "_newWithSize4d"));           \
  }                                                                                                \
  T* T##_newWithTensor(__VA_ARGS__ T* src) {                                                       \
    return T##_made(view_of(src, sizes(src), strides(src), 0, #T "_newWithTensor"));               \
  }                                                                                                \
  T* T##_newContiguous(__VA_ARGS__ T* src) {                                                       \
    return T##_made(torch::stable::contiguous(borrow(src)));                                       \
  }                                                                                                \
  T* T##_newClone(__VA_ARGS__ T* src) {                                                            \
    Tensor out = empty(sizes(src), aoti_torch_dtype_##dtype(), cuda, #T "_newClone");              \
    torch::stable::copy_(out, borrow(src));                                                        \
    return T##_made(out);                                                                          \
  }                                                                                                \
  T* T##_newSelect(__VA_ARGS__ T* src, int dim, int64_t index) {                                   \
    return T##_made(torch::stable::select(borrow(src), dim, index));                               \
  }                                                                                                \
  T* T##_newNarrow(__VA_ARGS__ T* src, int dim, int64_t first, int64_t size) {                     \
    Tensor t = borrow(src);                                                                        \
    return T##_made(torch::stable::narrow(t, dim, first, size));                                   \
  }                                                                                                \
  T* T##_newTranspose(__VA_ARGS__ T* src, int dim1, int dim2) {                                    \
    return T##_made(torch::stable::transpose(borrow(src), dim1, dim2));                            \
  }                                                                                                \
  T* T##_newWithSize(__VA_ARGS__ THLongStorage* size, THLongStorage* stride) {                     \
    const char* fn = #T "_newWithSize";                                                            \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = longs_of(stride, fn);                                                      \
    return T##_made(empty(longs_of(size, fn), aoti_torch_dtype_##dtype(), cuda, fn, steps));       \
  }                                                                                                \
  T* T##_newWithStorage(__VA_ARGS__ S* storage, ptrdiff_t offset, THLongStorage* size,             \
                        THLongStorage* stride) {                                                   \
    const char* fn = #T "_newWithStorage";                                                         \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = longs_of(stride, fn);                                                      \
    return T##_made(storage_view(storage, offset, longs_of(size, fn), steps,                       \
                                 aoti_torch_dtype_##dtype(), cuda, fn));                           \
  }                                                                                                \
  T* T##_newWithStorage1d(__VA_ARGS__ S* storage, ptrdiff_t offset, int64_t s0, int64_t t0) {      \
    return T##_made(storage_view(storage, offset, {s0}, std::vector<int64_t>{t0},                  \
                                 aoti_torch_dtype_##dtype(), cuda, #T "_newWithStorage1d"));       \
  }                                                                                                \
  T* T##_newWithStorage2d(__VA_ARGS__ S* storage, ptrdiff_t offset, int64_t s0, int64_t t0,        \
                          int64_t s1, int64_t t1) {                                                \
    return T##_made(storage_view(storage, offset, {s0, s1}, std::vector<int64_t>{t0, t1},          \
                                 aoti_torch_dtype_##dtype(), cuda, #T "_newWithStorage2d"));       \
  }                                                                                                \
  T* T##_newWithStorage3d(__VA_ARGS__ S* storage, ptrdiff_t offset, int64_t s0, int64_t t0,        \
                          int64_t s1, int64_t t1, int64_t s2, int64_t t2) {                        \
    return T##_made(storage_view(storage, offset, {s0, s1, s2}, std::vector<int64_t>{t0, t1, t2},  \
                                 aoti_torch_dtype_##dtype(), cuda, #T "_newWithStorage3d"));       \
  }                                                                                                \
  T* T##_newWithStorage4d(__VA_ARGS__ S* storage, ptrdiff_t offset, int64_t s0, int64_t t0,        \
                          int64_t s1, int64_t t1, int64_t s2, int64_t t2, int64_t s3,              \
                          int64_t t3) {                                                            \
    return T##_made(storage_view(storage, offset, {s0, s1, s2, s3},                                \
                                 std::vector<int64_t>{t0, t1, t2, t3}, aoti_torch_dtype_##dtype(), \
                                 cuda, #T "_newWithStorage4d"));                                   \
  }                                                                                                \
  void T##_setStorage(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, THLongStorage* size,      \
                      THLongStorage* stride) {                                                     \
    const char* fn = #T "_setStorage";                                                             \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = longs_of(stride, fn);                                                      \
    set(self,                                                                                      \
        storage_view(storage, offset, longs_of(size, fn), steps, aoti_torch_dtype_##dtype(), cuda, \
                     fn),                                                                          \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage1d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0,             \
                        int64_t t0) {                                                              \
    const char* fn = #T "_setStorage1d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0}, std::vector<int64_t>{t0}, aoti_torch_dtype_##dtype(),  \
                     cuda, fn),                                                                    \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage2d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0, int64_t t0, \
                        int64_t s1, int64_t t1) {                                                  \
    const char* fn = #T "_setStorage2d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0, s1}, std::vector<int64_t>{t0, t1},                      \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage3d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0, int64_t t0, \
                        int64_t s1, int64_t t1, int64_t s2, int64_t t2) {                          \
    const char* fn = #T "_setStorage3d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0, s1, s2}, std::vector<int64_t>{t0, t1, t2},              \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage4d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0, int64_t t0, \
                        int64_t s1, int64_t t1, int64_t s2, int64_t t2, int64_t s3, int64_t t3) {  \
    const char* fn = #T "_setStorage4d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0, s1, s2, s3}, std::vector<int64_t>{t0, t1, t2, t3},      \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorageNd(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int n, int64_t* size,   \
                        int64_t* stride) {                                                         \
    const char* fn = #T "_setStorageNd";                                                           \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = std::vector<int64_t>(stride, stride + n);                                  \
    set(self,                                                                                      \
        storage_view(storage, offset, std::vector<int64_t>(size, size + n), steps,                 \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_squeeze(__VA_ARGS__ T* self, T* src) {                                                  \
    set(self, squeezed(borrow(src ? src : self), #T "_squeeze"), #T "_squeeze");                   \
  }                                                                                                \
  void T##_unfold(__VA_ARGS__ T* self, T* src, int dim, int64_t size, int64_t step) {              \
    const char* fn = #T "_unfold";                                                                 \
    set(self, aten("aten::unfold", "", fn, borrow(src ? src : self), int64_t{dim}, size, step),    \
        fn);                                                                                       \
  }                                                                                                \
  T* T##_newUnfold(__VA_ARGS__ T* src, int dim, int64_t size, int64_t step) {                      \
    return T##_made(                                                                               \
        aten("aten::unfold", "", #T "_newUnfold", borrow(src), int64_t{dim}, size, step));         \
  }                                                                                                \
  void T##_expand(__VA_ARGS__ T* r, T* tensor, THLongStorage* size) {                              \
    const char* fn = #T "_expand";                                                                 \
    set(r, aten("aten::expand", "", fn, borrow(tensor), longs_of(size, fn), false), fn);           \
  }                                                                                                \
  T* T##_newExpand(__VA_ARGS__ T* tensor, THLongStorage* size) {                                   \
    const char* fn = #T "_newExpand";                                                              \
    return T##_made(aten("aten::expand", "", fn, borrow(tensor), longs_of(size, fn), false));      \
  }                                                                                                \
  int T##_isSize(__VA_ARGS__ const T* self, const THLongStorage* dims) {                           \
    return sizes(self) == longs_of(dims, #T "_isSize");                                            \
  }                                                                                                \
  int T##_isSetTo(__VA_ARGS__ const T* self, const T* src) {                                       \
    return same_view(self, src);                                                                   \
  }                                                                                                \
  T* T##_newView(__VA_ARGS__ T* src, THLongStorage* size) {                                        \
    const char* fn = #T "_newView";                                                                \
    return T##_made(call("aten::view", "",                                                         \
                         {torch::stable::detail::from(borrow(src)),                                \
                          torch::stable::detail::from(longs_of(size, fn))},                        \
                         fn));                                                                     \
  }                                                                                                \
  THLongStorage* T##_newSizeOf(__VA_ARGS__ T* self) {                                              \
    return long_storage(sizes(self), #T "_newSizeOf");                                             \
  }                                                                                                \
  THLongStorage* T##_newStrideOf(__VA_ARGS__ T* self) {                                            \
    return long_storage(strides(self), #T "_newStrideOf");                                         \
  }                                                                                                \
  void T##_resize(__VA_ARGS__ T* self, THLongStorage* size, THLongStorage* stride) {               \
    const char* fn = #T "_resize";                                                                 \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = longs_of(stride, fn);                                                      \
    resize_to(self, longs_of(size, fn), steps, aoti_torch_dtype_##dtype(), cuda, fn);              \
  }                                                                                                \
  void T##_resizeNd(__VA_ARGS__ T* self, int n, int64_t* size, int64_t* stride) {                  \
    const char* fn = #T "_resizeNd";                                                               \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = std::vector<int64_t>(stride, stride + n);                                  \
    resize_to(self, std::vector<int64_t>(size, size + n), steps, aoti_torch_dtype_##dtype(), cuda, \
              fn);                                                                                 \
  }                                                                                                \
  void T##_retain(__VA_ARGS__ T* self) {                                                           \
    retain(self, #T "_retain");                                                                    \
  }                                                                                                \
  void T##_free(__VA_ARGS__ T* self) {                                                             \
    release(self);                                                                                 \
  }                                                                                                \
  void T##_set(__VA_ARGS__ T* self, T* src) {                                                      \
    set(self, borrow(src), #T "_set");                                                             \
  }                                                                                                \
  void T##_select(__VA_ARGS__ T* self, T* src, int dim, int64_t index) {                           \
    set(self, torch::stable::select(borrow(src ? src : self), dim, index), #T "_select");          \
  }                                                                                                \
  void T##_narrow(__VA_ARGS__ T* self, T* src, int dim, int64_t first, int64_t size) {             \
    Tensor t = borrow(src ? src : self);                                                           \
    set(self, torch::stable::narrow(t, dim, first, size), #T "_narrow");                           \
  }                                                                                                \
  void T##_transpose(__VA_ARGS__ T* self, T* src, int dim1, int dim2) {                            \
    set(self, torch::stable::transpose(borrow(src ? src : self), dim1, dim2), #T "_transpose");    \
  }                                                                                                \
  void T##_squeeze1d(__VA_ARGS__ T* self, T* src, int dim) {                                       \
    set(self, torch::stable::squeeze(borrow(src ? src : self), dim), #T "_squeeze1d");             \
  }                                                                                                \
  void T##_unsqueeze1d(__VA_ARGS__ T* self, T* src, int dim) {                                     \
    set(self, torch::stable::unsqueeze(borrow(src ? src : self), dim), #T "_unsqueeze1d");         \
  }                                                                                                \
  void T##_copy(__VA_ARGS__ T* self, T* src) {                                                     \
    copy_into(self, src, #T "_copy");                                                              \
  }                                                                                                \
  S* T##_storage(__VA_ARGS__ const T* self) {                                                      \
    return static_cast<S*>(storage_of<real>(self, #T "_storage"));                                 \
  }                                                                                                \
  ptrdiff_t T##_storageOffset(__VA_ARGS__ const T* self) {                                         \
    return storage_offset(self);                                                                   \
  }                                                                                                \
  real T##_get1d(__VA_ARGS__ const T* self, int64_t x0) {                                          \
    return get_element<real>(self, {x0}, cuda, #T "_get1d");                                       \
  }                                                                                                \
  real T##_get2d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1) {                              \
    return get_element<real>(self, {x0, x1}, cuda, #T "_get2d");                                   \
  }                                                                                                \
  real T##_get3d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1, int64_t x2) {                  \
    return get_element<real>(self, {x0, x1, x2}, cuda, #T "_get3d");                               \
  }                                                                                                \
  real T##_get4d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1, int64_t x2, int64_t x3) {      \
    return get_element<real>(self, {x0, x1, x2, x3}, cuda, #T "_get4d");                           \
  }                                                                                                \
  void T##_set1d(__VA_ARGS__ T* self, int64_t x0, real value) {                                    \
    set_element(self, {x0}, value, cuda, #T "_set1d");                                             \
  }                                                                                                \
  void T##_set2d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, real value) {                        \
    set_element(self, {x0, x1}, value, cuda, #T "_set2d");                                         \
  }                                                                                                \
  void T##_set3d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, int64_t x2, real value) {            \
    set_element(self, {x0, x1, x2}, value, cuda, #T "_set3d");                                     \
  }                                                                                                \
  void T##_set4d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, int64_t x2, int64_t x3,              \
                 real value) {                                                                     \
    set_element(self, {x0, x1, x2, x3}, value, cuda, #T "_set4d");                                 \
  }                                                                                                \
  real* S##_data(__VA_ARGS__ const S* self) {                                                      \
    return static_cast<real*>(reinterpret_cast<const StorageBox*>(self)->data);                    \
  }                                                                                                \
  ptrdiff_t S##_size(__VA_ARGS__ const S* self) {                                                  \
    return reinterpret_cast<const StorageBox*>(self)->size;                                        \
  }                                                                                                \
  void S##_fill(__VA_ARGS__ S* self, real value) {                                                 \
    const Tensor whole = storage_tensor(self, #S "_fill");                                         \
    check(aoti_torch_aten_fill__Scalar(whole.get(), as_double(value)), #S "_fill");                \
  }                                                                                                \
  S* S##_new(NONE) {                                                                               \
    return static_cast<S*>(                                                                        \
        storage_of_values<real>({}, aoti_torch_dtype_##dtype(), cuda, #S "_new"));                 \
  }                                                                                                \
  S* S##_newWithSize(__VA_ARGS__ ptrdiff_t n) {                                                    \
    return static_cast<S*>(                                                                        \
        hand_out(empty({n}, aoti_torch_dtype_##dtype(), cuda, #S "_newWithSize"), 1, true));       \
  }                                                                                                \
  S* S##_newWithSize1(__VA_ARGS__ real v0) {                                                       \
    return static_cast<S*>(                                                                        \
        storage_of_values<real>({v0}, aoti_torch_dtype_##dtype(), cuda, #S "_newWithSize1"));      \
  }                                                                                                \
  S* S##_newWithSize2(__VA_ARGS__ real v0, real v1) {                                              \
    return static_cast<S*>(                                                                        \
        storage_of_values<real>({v0, v1}, aoti_torch_dtype_##dtype(), cuda, #S "_newWithSize2"));  \
  }                                                                                                \
  S* S##_newWithSize3(__VA_ARGS__ real v0, real v1, real v2) {                                     \
    return static_cast<S*>(storage_of_values<real>({v0, v1, v2}, aoti_torch_dtype_##dtype(), cuda, \
                                                   #S "_newWithSize3"));                           \
  }                                                                                                \
  S* S##_newWithSize4(__VA_ARGS__ real v0, real v1, real v2, real v3) {                            \
    return static_cast<S*>(storage_of_values<real>({v0, v1, v2, v3}, aoti_torch_dtype_##dtype(),   \
                                                   cuda, #S "_newWithSize4"));                     \
  }                                                                                                \
  real S##_get(__VA_ARGS__ const S* self, ptrdiff_t index) {                                       \
    const Tensor storage = storage_tensor(self, #S "_get");                                        \
    const TensorBox whole = box_of(storage);                                                       \
    return get_element<real>(&whole, {static_cast<int64_t>(index)}, cuda, #S "_get");              \
  }                                                                                                \
  void S##_set(__VA_ARGS__ S* self, ptrdiff_t index, real value) {                                 \
    const Tensor storage = storage_tensor(self, #S "_set");                                        \
    const TensorBox whole = box_of(storage);                                                       \
    set_element(&whole, {static_cast<int64_t>(index)}, value, cuda, #S "_set");                    \
  }                                                                                                \
  void S##_retain(__VA_ARGS__ S* self) {                                                           \
    check_counted(self, #S "_retain");                                                             \
    retain(self, #S "_retain");                                                                    \
  }                                                                                                \
  void S##_free(__VA_ARGS__ S* self) {                                                             \
    check_counted(self, #S "_free");                                                               \
    release(self);                                                                                 \
  }

// TH's math of every handle type T (TH/TH.h's TH_TENSOR_ARITH_API).
#define KFL_DEFINE_ARITH_API(T, real, accreal, ...)                                                \
  void T##_add(__VA_ARGS__ T* r, T* t, real value) {                                               \
    axpy_op<real>(r, t, nullptr, 0.0, as_double(value), #T "_add");                                \
  }                                                                                                \
  void T##_mul(__VA_ARGS__ T* r, T* t, real value) {                                               \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::mul", r, {self, scalar_like(self, value)}, #T "_mul");                           \
  }                                                                                                \
  void T##_div(__VA_ARGS__ T* r, T* t, real value) {                                               \
    const Tensor self = borrow(t);                                                                 \
    div_op<real>(r, self, scalar_like(self, value), #T "_div");                                    \
  }                                                                                                \
  void T##_cadd(__VA_ARGS__ T* r, T* t, real value, T* src) {                                      \
    axpy_op<real>(r, t, src, as_double(value), 0.0, #T "_cadd");                                   \
  }                                                                                                \
  void T##_csub(__VA_ARGS__ T* r, T* t, real value, T* src) {                                      \
    axpy_op<real>(r, t, src, -as_double(value), 0.0, #T "_csub");                                  \
  }                                                                                                \
  void T##_cmul(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    out_op("aten::mul", r, {borrow(t), borrow(src)}, #T "_cmul");                                  \
  }                                                                                                \
  void T##_cdiv(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    div_op<real>(r, borrow(t), borrow(src), #T "_cdiv");                                           \
  }                                                                                                \
  void T##_abs(__VA_ARGS__ T* r, T* t) {                                                           \
    out_op("aten::abs", r, {borrow(t)}, #T "_abs");                                                \
  }                                                                                                \
  void T##_clamp(__VA_ARGS__ T* r, T* t, real min_value, real max_value) {                         \
    const Tensor self = borrow(t);                                                                 \
    call("aten::clamp", "Tensor_out",                                                              \
         {torch::stable::detail::from(self),                                                       \
          torch::stable::detail::from(std::optional<Tensor>(scalar_like(self, min_value))),        \
          torch::stable::detail::from(std::optional<Tensor>(scalar_like(self, max_value))),        \
          torch::stable::detail::from(borrow(r))},                                                 \
         #T "_clamp");                                                                             \
    refresh(r);                                                                                    \
  }                                                                                                \
  accreal T##_sumall(__VA_ARGS__ T* t) {                                                           \
    return accumulate_all<accreal>("aten::sum", t, #T "_sumall");                                  \
  }                                                                                                \
  accreal T##_prodall(__VA_ARGS__ T* t) {                                                          \
    return accumulate_all<accreal>("aten::prod", t, #T "_prodall");                                \
  }                                                                                                \
  void T##_sub(__VA_ARGS__ T* r, T* t, real value) {                                               \
    axpy_op<real>(r, t, nullptr, 0.0, -as_double(value), #T "_sub");                               \
  }                                                                                                \
  void T##_neg(__VA_ARGS__ T* r, T* t) {                                                           \
    out_op("aten::neg", r, {borrow(t)}, #T "_neg");                                                \
  }                                                                                                \
  void T##_sign(__VA_ARGS__ T* r, T* t) {                                                          \
    out_op("aten::sign", r, {borrow(t)}, #T "_sign");                                              \
  }                                                                                                \
  void T##_fmod(__VA_ARGS__ T* r, T* t, real value) {                                              \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::fmod", "Tensor", #T "_fmod", self, scalar_like(self, value));                   \
  }                                                                                                \
  void T##_remainder(__VA_ARGS__ T* r, T* t, real value) {                                         \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::remainder", "Tensor", #T "_remainder", self, scalar_like(self, value));         \
  }                                                                                                \
  void T##_cfmod(__VA_ARGS__ T* r, T* t, T* src) {                                                 \
    into(r, "aten::fmod", "Tensor", #T "_cfmod", borrow(t), borrow(src));                          \
  }                                                                                                \
  void T##_cremainder(__VA_ARGS__ T* r, T* t, T* src) {                                            \
    into(r, "aten::remainder", "Tensor", #T "_cremainder", borrow(t), borrow(src));                \
  }                                                                                                \
  void T##_cmax(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    out_op("aten::maximum", r, {borrow(t), borrow(src)}, #T "_cmax");                              \
  }                                                                                                \
  void T##_cmin(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    out_op("aten::minimum", r, {borrow(t), borrow(src)}, #T "_cmin");                              \
  }                                                                                                \
  void T##_cmaxValue(__VA_ARGS__ T* r, T* t, real value) {                                         \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::maximum", r, {self, scalar_like(self, value)}, #T "_cmaxValue");                 \
  }                                                                                                \
  void T##_cminValue(__VA_ARGS__ T* r, T* t, real value) {                                         \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::minimum", r, {self, scalar_like(self, value)}, #T "_cminValue");                 \
  }                                                                                                \
  void T##_sum(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                               \
    into(r, "aten::sum", "dim_IntList", #T "_sum", borrow(t), dims(dimension), keepdim != 0,       \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_prod(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                              \
    into(r, "aten::prod", "dim_int", #T "_prod", borrow(t), static_cast<int64_t>(dimension),       \
         keepdim != 0, std::nullopt);                                                              \
  }                                                                                                \
  void T##_cumsum(__VA_ARGS__ T* r, T* t, int dimension) {                                         \
    into(r, "aten::cumsum", "", #T "_cumsum", borrow(t), static_cast<int64_t>(dimension),          \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_cumprod(__VA_ARGS__ T* r, T* t, int dimension) {                                        \
    into(r, "aten::cumprod", "", #T "_cumprod", borrow(t), static_cast<int64_t>(dimension),        \
         std::nullopt);                                                                            \
  }                                                                                                \
  ptrdiff_t T##_numel(__VA_ARGS__ T* t) {                                                          \
    return numel(t);                                                                               \
  }                                                                                                \
  void T##_zeros(__VA_ARGS__ T* r, THLongStorage* size) {                                          \
    filled(r, longs_of(size, #T "_zeros"), 0.0, #T "_zeros");                                      \
  }                                                                                                \
  void T##_ones(__VA_ARGS__ T* r, THLongStorage* size) {                                           \
    filled(r, longs_of(size, #T "_ones"), 1.0, #T "_ones");                                        \
  }                                                                                                \
  void T##_zerosLike(__VA_ARGS__ T* r, T* input) {                                                 \
    filled(r, sizes(input), 0.0, #T "_zerosLike");                                                 \
  }                                                                                                \
  void T##_onesLike(__VA_ARGS__ T* r, T* input) {                                                  \
    filled(r, sizes(input), 1.0, #T "_onesLike");                                                  \
  }                                                                                                \
  void T##_eye(__VA_ARGS__ T* r, int64_t n, int64_t m) {                                           \
    const char* fn = #T "_eye";                                                                    \
    filled(r, {n, m > 0 ? m : n}, 0.0, fn);                                                        \
    const Tensor self = borrow(r);                                                                 \
    const Tensor diagonal =                                                                        \
        aten("aten::diagonal", "", fn, self, int64_t{0}, int64_t{0}, int64_t{1});                  \
    aten("aten::fill_", "Tensor", fn, diagonal, scalar_like(self, 1));                             \
  }                                                                                                \
  void T##_diag(__VA_ARGS__ T* r, T* t, int k) {                                                   \
    into(r, "aten::diag", "", #T "_diag", borrow(t), static_cast<int64_t>(k));                     \
  }                                                                                                \
  void T##_tril(__VA_ARGS__ T* r, T* t, int64_t k) {                                               \
    into(r, "aten::tril", "", #T "_tril", borrow(t), k);                                           \
  }                                                                                                \
  void T##_triu(__VA_ARGS__ T* r, T* t, int64_t k) {                                               \
    into(r, "aten::triu", "", #T "_triu", borrow(t), k);                                           \
  }                                                                                                \
  accreal T##_trace(__VA_ARGS__ T* t) {                                                            \
    return accumulated<accreal>(aten("aten::trace", "", #T "_trace", borrow(t)), #T "_trace");     \
  }                                                                                                \
  int T##_equal(__VA_ARGS__ T* ta, T* tb) {                                                        \
    std::vector<StableIValue> stack = {torch::stable::detail::from(borrow(ta)),                    \
                                       torch::stable::detail::from(borrow(tb))};                   \
    check(torch_call_dispatcher("aten::equal", "", stack.data(), TORCH_ABI_VERSION), #T "_equal"); \
    return torch::stable::detail::to<bool>(stack[0]) ? 1 : 0;                                      \
  }                                                                                                \
  void T##_cat(__VA_ARGS__ T* r, T* ta, T* tb, int dimension) {                                    \
    const void* inputs[] = {ta, tb};                                                               \
    joined(r, inputs, 2, dimension, #T "_cat");                                                    \
  }                                                                                                \
  void T##_catArray(__VA_ARGS__ T* r, T** inputs, int n, int dimension) {                          \
    joined(r, reinterpret_cast<const void* const*>(inputs), n, dimension, #T "_catArray");         \
  }                                                                                                \
  void T##_range(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step) {                     \
    range_into(r, xmin, xmax, step, true, #T "_range");                                            \
  }                                                                                                \
  void T##_arange(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step) {                    \
    range_into(r, xmin, xmax, step, false, #T "_arange");                                          \
  }                                                                                                \
  real T##_maxall(__VA_ARGS__ T* t) {                                                              \
    return reduce_all<real>("aten::max", t, #T "_maxall");                                         \
  }                                                                                                \
  real T##_minall(__VA_ARGS__ T* t) {                                                              \
    return reduce_all<real>("aten::min", t, #T "_minall");                                         \
  }

// and of the floating types only (TH_TENSOR_FLOAT_MATH_API)
#define KFL_DEFINE_FLOAT_MATH_API(T, real, ...)                                                    \
  void T##_exp(__VA_ARGS__ T* r, T* t) {                                                           \
    out_op("aten::exp", r, {borrow(t)}, #T "_exp");                                                \
  }                                                                                                \
  void T##_sqrt(__VA_ARGS__ T* r, T* t) {                                                          \
    out_op("aten::sqrt", r, {borrow(t)}, #T "_sqrt");                                              \
  }                                                                                                \
  double T##_dot(__VA_ARGS__ T* t, T* src) {                                                       \
    return item(                                                                                   \
        call("aten::dot", "",                                                                      \
             {torch::stable::detail::from(borrow(t)), torch::stable::detail::from(borrow(src))},   \
             #T "_dot"),                                                                           \
        #T "_dot");                                                                                \
  }                                                                                                \
  void T##_addmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat1, T* mat2) {                \
    if (r != t) assign(r, borrow(t), #T "_addmm");                                                 \
    addmm_into(r, borrow(mat1), borrow(mat2), as_double(beta), as_double(alpha), #T "_addmm");     \
  }                                                                                                \
  void T##_addmv(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat, T* vec) {                  \
    assign(r,                                                                                      \
           addmv_of(borrow(t), borrow(mat), borrow(vec), as_double(beta), as_double(alpha),        \
                    #T "_addmv"),                                                                  \
           #T "_addmv");                                                                           \
  }                                                                                                \
  TH_FLOAT_UNARY_NAMES(KFL_DEFINE_UNARY, T, __VA_ARGS__)                                           \
  void T##_round(__VA_ARGS__ T* r, T* t) {                                                         \
    assign(r, round_half_away(borrow(t), #T "_round"), #T "_round");                               \
  }                                                                                                \
  void T##_cinv(__VA_ARGS__ T* r, T* t) {                                                          \
    out_op("aten::reciprocal", r, {borrow(t)}, #T "_cinv");                                        \
  }                                                                                                \
  void T##_atan2(__VA_ARGS__ T* r, T* tx, T* ty) {                                                 \
    out_op("aten::atan2", r, {borrow(tx), borrow(ty)}, #T "_atan2");                               \
  }                                                                                                \
  void T##_pow(__VA_ARGS__ T* r, T* t, real value) {                                               \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::pow", "Tensor_Tensor", #T "_pow", self, scalar_like(self, value));              \
  }                                                                                                \
  void T##_tpow(__VA_ARGS__ T* r, real value, T* t) {                                              \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::pow", "Tensor_Tensor", #T "_tpow", scalar_like(self, value), self);             \
  }                                                                                                \
  void T##_cpow(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    into(r, "aten::pow", "Tensor_Tensor", #T "_cpow", borrow(t), borrow(src));                     \
  }                                                                                                \
  void T##_lerp(__VA_ARGS__ T* r, T* a, T* b, real weight) {                                       \
    const Tensor self = borrow(a);                                                                 \
    into(r, "aten::lerp", "Tensor", #T "_lerp", self, borrow(b), scalar_like(self, weight));       \
  }                                                                                                \
  void T##_addcmul(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2) {                         \
    const Tensor product = aten("aten::mul", "Tensor", #T "_addcmul", borrow(src1), borrow(src2)); \
    assign(r, torch::stable::subtract(borrow(t), product, -as_double(value)), #T "_addcmul");      \
  }                                                                                                \
  void T##_addcdiv(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2) {                         \
    const Tensor quotient =                                                                        \
        aten("aten::div", "Tensor", #T "_addcdiv", borrow(src1), borrow(src2));                    \
    assign(r, torch::stable::subtract(borrow(t), quotient, -as_double(value)), #T "_addcdiv");     \
  }                                                                                                \
  void T##_mean(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                              \
    into(r, "aten::mean", "dim", #T "_mean", borrow(t), dims(dimension), keepdim != 0,             \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_std(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim) {                   \
    into(r, "aten::std", "dim", #T "_std", borrow(t), dims(dimension), biased == 0, keepdim != 0); \
  }                                                                                                \
  void T##_var(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim) {                   \
    into(r, "aten::var", "dim", #T "_var", borrow(t), dims(dimension), biased == 0, keepdim != 0); \
  }                                                                                                \
  double T##_meanall(__VA_ARGS__ T* t) {                                                           \
    return item(aten("aten::mean", "", #T "_meanall", borrow(t), std::nullopt), #T "_meanall");    \
  }                                                                                                \
  double T##_varall(__VA_ARGS__ T* t, int biased) {                                                \
    return item(aten("aten::var", "", #T "_varall", borrow(t), biased == 0), #T "_varall");        \
  }                                                                                                \
  double T##_stdall(__VA_ARGS__ T* t, int biased) {                                                \
    return item(aten("aten::std", "", #T "_stdall", borrow(t), biased == 0), #T "_stdall");        \
  }                                                                                                \
  void T##_addr(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* vec1, T* vec2) {                 \
    const char* fn = #T "_addr";                                                                   \
    const Tensor outer = aten("aten::outer", "", fn, borrow(vec1), borrow(vec2));                  \
    assign(r, scaled_sum(borrow(t), as_double(beta), outer, as_double(alpha), fn), fn);            \
  }                                                                                                \
  void T##_addbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2) {           \
    const char* fn = #T "_addbmm";                                                                 \
    const Tensor products = aten("aten::bmm", "", fn, borrow(batch1), borrow(batch2));             \
    const Tensor sum =                                                                             \
        aten("aten::sum", "dim_IntList", fn, products, dims(0), false, std::nullopt);              \
    assign(r, scaled_sum(borrow(t), as_double(beta), sum, as_double(alpha), fn), fn);              \
  }                                                                                                \
  void T##_baddbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2) {          \
    const char* fn = #T "_baddbmm";                                                                \
    if (r != t) assign(r, borrow(t), fn);                                                          \
    baddbmm_into(borrow(r), borrow(batch1), borrow(batch2), as_double(beta), as_double(alpha),     \
                 fn);                                                                              \
  }                                                                                                \
  void T##_norm(__VA_ARGS__ T* r, T* t, real value, int dimension, int keepdim) {                  \
    const char* fn = #T "_norm";                                                                   \
    assign(r, p_norm(borrow(t), as_double(value), {dimension}, keepdim != 0, fn), fn);             \
  }                                                                                                \
  double T##_normall(__VA_ARGS__ T* t, real value) {                                               \
    const char* fn = #T "_normall";                                                                \
    return item(p_norm(borrow(t), as_double(value), {}, false, fn), fn);                           \
  }                                                                                                \
  void T##_renorm(__VA_ARGS__ T* r, T* t, real value, int dimension, real maxnorm) {               \
    const char* fn = #T "_renorm";                                                                 \
    assign(r, renormed(borrow(t), as_double(value), dimension, as_double(maxnorm), fn), fn);       \
  }                                                                                                \
  double T##_dist(__VA_ARGS__ T* a, T* b, real value) {                                            \
    return distance(a, b, as_double(value), #T "_dist");                                           \
  }                                                                                                \
  void T##_linspace(__VA_ARGS__ T* r, real a, real b, int64_t n) {                                 \
    spaced_into(r, as_double(a), as_double(b), n, false, #T "_linspace");                          \
  }                                                                                                \
  void T##_logspace(__VA_ARGS__ T* r, real a, real b, int64_t n) {                                 \
    spaced_into(r, as_double(a), as_double(b), n, true, #T "_logspace");                           \
  }
#define KFL_DEFINE_UNARY(name, T, ...)                    \
  void T##_##name(__VA_ARGS__ T* r, T* t) {               \
    out_op("aten::" #name, r, {borrow(t)}, #T "_" #name); \
  }

// of every type (TH_TENSOR_INDEX_API)
#define KFL_DEFINE_INDEX_API(T, L, B, real, ...)                                                   \
  void T##_max(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {              \
    pair_into(values, indices, "aten::max", "dim", #T "_max", borrow(t),                           \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_min(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {              \
    pair_into(values, indices, "aten::min", "dim", #T "_min", borrow(t),                           \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_indexSelect(__VA_ARGS__ T* r, T* src, int dim, L* index) {                              \
    into(r, "aten::index_select", "", #T "_indexSelect", borrow(src), static_cast<int64_t>(dim),   \
         borrow(index));                                                                           \
  }                                                                                                \
  void T##_indexCopy(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                \
    aten("aten::index_copy_", "", #T "_indexCopy", borrow(t), static_cast<int64_t>(dim),           \
         borrow(index), borrow(src));                                                              \
  }                                                                                                \
  void T##_indexAdd(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                 \
    const Tensor source = borrow(src);                                                             \
    aten("aten::scatter_add_", "", #T "_indexAdd", borrow(t), static_cast<int64_t>(dim),           \
         spread(borrow(index), source, dim, #T "_indexAdd"), source);                              \
  }                                                                                                \
  void T##_indexFill(__VA_ARGS__ T* t, int dim, L* index, real value) {                            \
    const Tensor self = borrow(t);                                                                 \
    aten("aten::index_fill_", "int_Tensor", #T "_indexFill", self, static_cast<int64_t>(dim),      \
         borrow(index), scalar_like(self, value));                                                 \
  }                                                                                                \
  void T##_gather(__VA_ARGS__ T* r, T* src, int dim, L* index) {                                   \
    into(r, "aten::gather", "", #T "_gather", borrow(src), static_cast<int64_t>(dim),              \
         borrow(index), false);                                                                    \
  }                                                                                                \
  void T##_scatter(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                  \
    aten("aten::scatter_", "src", #T "_scatter", borrow(t), static_cast<int64_t>(dim),             \
         borrow(index), borrow(src));                                                              \
  }                                                                                                \
  void T##_scatterAdd(__VA_ARGS__ T* t, int dim, L* index, T* src) {                               \
    aten("aten::scatter_add_", "", #T "_scatterAdd", borrow(t), static_cast<int64_t>(dim),         \
         borrow(index), borrow(src));                                                              \
  }                                                                                                \
  void T##_scatterFill(__VA_ARGS__ T* t, int dim, L* index, real value) {                          \
    const Tensor self = borrow(t), at = borrow(index);                                             \
    aten("aten::scatter_", "src", #T "_scatterFill", self, static_cast<int64_t>(dim), at,          \
         aten("aten::expand", "", #T "_scatterFill", scalar_like(self, value), sizes(at), false)); \
  }                                                                                                \
  void T##_maskedFill(__VA_ARGS__ T* t, B* mask, real value) {                                     \
    const Tensor self = borrow(t);                                                                 \
    aten("aten::masked_fill_", "Tensor", #T "_maskedFill", self, as_bool(mask),                    \
         scalar_like(self, value));                                                                \
  }                                                                                                \
  void T##_maskedCopy(__VA_ARGS__ T* t, B* mask, T* src) {                                         \
    aten("aten::masked_scatter_", "", #T "_maskedCopy", borrow(t), as_bool(mask), borrow(src));    \
  }                                                                                                \
  void T##_maskedSelect(__VA_ARGS__ T* r, T* src, B* mask) {                                       \
    into(r, "aten::masked_select", "", #T "_maskedSelect", borrow(src), as_bool(mask));            \
  }                                                                                                \
  void T##_nonzero(__VA_ARGS__ L* subscript, T* t) {                                               \
    into(subscript, "aten::nonzero", "", #T "_nonzero", borrow(t));                                \
  }                                                                                                \
  void T##_sort(__VA_ARGS__ T* rt, L* ri, T* t, int dimension, int descendingOrder) {              \
    pair_into(rt, ri, "aten::sort", "", #T "_sort", borrow(t), static_cast<int64_t>(dimension),    \
              descendingOrder != 0);                                                               \
  }                                                                                                \
  void T##_topk(__VA_ARGS__ T* rt, L* ri, T* t, int64_t k, int dim, int dir, int sorted) {         \
    pair_into(rt, ri, "aten::topk", "", #T "_topk", borrow(t), k, static_cast<int64_t>(dim),       \
              dir != 0, sorted != 0);                                                              \
  }                                                                                                \
  void T##_kthvalue(__VA_ARGS__ T* values, L* indices, T* t, int64_t k, int dimension,             \
                    int keepdim) {                                                                 \
    pair_into(values, indices, "aten::kthvalue", "", #T "_kthvalue", borrow(t), k,                 \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_median(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {           \
    pair_into(values, indices, "aten::median", "dim", #T "_median", borrow(t),                     \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_mode(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {             \
    pair_into(values, indices, "aten::mode", "", #T "_mode", borrow(t),                            \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  real T##_medianall(__VA_ARGS__ T* t) {                                                           \
    return reduce_all<real>("aten::median", t, #T "_medianall");                                   \
  }                                                                                                \
  TH_COMPARISON_NAMES(KFL_DEFINE_COMPARISON, T, B, real, __VA_ARGS__)
#define KFL_DEFINE_COMPARISON(op, T, B, real, ...)                                       \
  void T##_##op##Value(__VA_ARGS__ B* r, T* t, real value) {                             \
    const Tensor self = borrow(t);                                                       \
    into(r, "aten::" #op, "Tensor", #T "_" #op "Value", self, scalar_like(self, value)); \
  }                                                                                      \
  void T##_##op##Tensor(__VA_ARGS__ B* r, T* a, T* b) {                                  \
    into(r, "aten::" #op, "Tensor", #T "_" #op "Tensor", borrow(a), borrow(b));          \
  }

void THFloatBlas_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                      float* a, int64_t lda, float* b, int64_t ldb, float beta, float* c,
                      int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float32(),
       false, "THFloatBlas_gemm");
}
void THDoubleBlas_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
                       double* a, int64_t lda, double* b, int64_t ldb, double beta, double* c,
                       int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float64(),
       false, "THDoubleBlas_gemm");
}
void THFloatBlas_gemv(char trans, int64_t m, int64_t n, float alpha, float* a, int64_t lda,
                      float* x, int64_t incx, float beta, float* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float32(), false,
       "THFloatBlas_gemv");
}
void THDoubleBlas_gemv(char trans, int64_t m, int64_t n, double alpha, double* a, int64_t lda,
                       double* x, int64_t incx, double beta, double* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float64(), false,
       "THDoubleBlas_gemv");
}

#define KFL_DEFINE_CPU(T, S, real, dtype) \
  KFL_DEFINE_TENSOR_API(T, real, )        \
  KFL_DEFINE_MEMORY_API(T, S, real, dtype, false, void, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU)
#define KFL_DEFINE_CPU_INT_MATH(T, S, real, dtype) KFL_DEFINE_ARITH_API(T, real, int64_t, )
TH_FORALL_CPU_INT_TENSORS(KFL_DEFINE_CPU_INT_MATH)
#define KFL_DEFINE_CPU_FLOAT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, double, )            \
  KFL_DEFINE_FLOAT_MATH_API(T, real, )
TH_FORALL_CPU_FLOAT_TENSORS(KFL_DEFINE_CPU_FLOAT_MATH)
#define KFL_DEFINE_CPU_INDEX(T, S, real, dtype) \
  KFL_DEFINE_INDEX_API(T, THLongTensor, THByteTensor, real, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_INDEX)

// Cross-type copies (TH.h's TH_COPY_FROM), and THC's (THC.h): all one copy.
#define KFL_DEFINE_COPY_FROM(Name, Src, T, ...)        \
  void T##_copy##Name(__VA_ARGS__ T* self, Src* src) { \
    copy_into(self, src, #T "_copy" #Name);            \
  }
#define KFL_DEFINE_CPU_COPY(T, S, real, dtype) TH_FORALL_CPU_NAMES(KFL_DEFINE_COPY_FROM, T, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_COPY)

THGenerator* THGenerator_new(void) {
  return new THGenerator();
}
THGenerator* THGenerator_copy(THGenerator* self, THGenerator* from) {
  *self = *from;
  return self;
}
void THGenerator_free(THGenerator* gen) {
  delete gen;
}
int THGenerator_isValid(THGenerator* gen) {
  return gen != nullptr;
}
void THRandom_manualSeed(THGenerator* gen, uint64_t seed) {
  gen->engine.seed(static_cast<std::mt19937::result_type>(seed & 0xffffffffu));
  gen->initial_seed = seed;
  gen->has_normal = false;
}
uint64_t THRandom_seed(THGenerator* gen) {
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) | device();
  THRandom_manualSeed(gen, seed);
  return seed;
}
uint64_t THRandom_initialSeed(THGenerator* gen) {
  return gen->initial_seed;
}
uint64_t THRandom_random(THGenerator* gen) {
  return gen->engine();
}
double THRandom_uniform(THGenerator* gen, double a, double b) {
  return uniform01(gen) * (b - a) + a;
}
double THRandom_normal(THGenerator* gen, double mean, double stdv) {
  if (!(stdv > 0))
    throw std::runtime_error("THRandom_normal: standard deviation must be strictly positive");
  if (gen->has_normal) {
    gen->has_normal = false;
    return gen->normal * stdv + mean;
  }
  const double x = uniform01(gen), y = uniform01(gen);
  const double rho = std::sqrt(-2 * std::log(1.0 - y)), angle = 2 * M_PI * x;
  gen->normal = rho * std::sin(angle);
  gen->has_normal = true;
  return rho * std::cos(angle) * stdv + mean;
}
double THRandom_exponential(THGenerator* gen, double lambda) {
  return -1.0 / lambda * std::log(1 - uniform01(gen));
}
double THRandom_cauchy(THGenerator* gen, double median, double sigma) {
  return median + sigma * std::tan(M_PI * (uniform01(gen) - 0.5));
}
double THRandom_logNormal(THGenerator* gen, double mean, double stdv) {
  const auto [mu, sigma] = log_normal_of(mean, stdv, "THRandom_logNormal");
  return std::exp(THRandom_normal(gen, mu, sigma));
}
int THRandom_geometric(THGenerator* gen, double p) {
  if (!(p > 0 && p < 1)) throw std::runtime_error("THRandom_geometric: p must be in (0, 1)");
  return static_cast<int>(std::log(1 - uniform01(gen)) / std::log(p)) + 1;
}
int THRandom_bernoulli(THGenerator* gen, double p) {
  if (!(p >= 0 && p <= 1)) throw std::runtime_error("THRandom_bernoulli: p must be in [0, 1]");
  return uniform01(gen) <= p;
}

// The tensor functions: from gen with TH's formulas, or (gen NULL) from
// torch's default generator with the same distribution (random: uniform
// below TH's modulus and 2^32).
#define KFL_DEFINE_RANDOM_API(T, S, real, dtype)                                                   \
  void T##_random(T* self, THGenerator* gen) {                                                     \
    if (gen == nullptr) /* TH's values: 32 bits, below the modulus */                              \
      return torch_drawn(                                                                          \
          self, "aten::random_", "from", #T "_random", int64_t{0},                                 \
          std::optional<int64_t>(std::min(random_modulus<real>(), uint64_t{1} << 32)));            \
    const uint64_t modulus = random_modulus<real>();                                               \
    fill_drawn(self, [&] { return static_cast<double>(THRandom_random(gen) % modulus); });         \
  }                                                                                                \
  void T##_geometric(T* self, THGenerator* gen, double p) {                                        \
    if (gen == nullptr) /* TH's p is the chance of going on; torch's of stopping */                \
      return torch_drawn(self, "aten::geometric_", "", #T "_geometric", 1 - p);                    \
    fill_drawn(self, [&] { return static_cast<double>(THRandom_geometric(gen, p)); });             \
  }                                                                                                \
  void T##_bernoulli(T* self, THGenerator* gen, double p) {                                        \
    if (gen == nullptr) return torch_drawn(self, "aten::bernoulli_", "float", #T "_bernoulli", p); \
    fill_drawn(self, [&] { return static_cast<double>(THRandom_bernoulli(gen, p)); });             \
  }
#define KFL_DEFINE_FLOAT_RANDOM_API(T, S, real, dtype)                                           \
  void T##_uniform(T* self, THGenerator* gen, double a, double b) {                              \
    if (gen == nullptr) return torch_drawn(self, "aten::uniform_", "", #T "_uniform", a, b);     \
    fill_drawn(self, [&] { return THRandom_uniform(gen, a, b); });                               \
  }                                                                                              \
  void T##_normal(T* self, THGenerator* gen, double mean, double stdv) {                         \
    if (gen == nullptr) return torch_drawn(self, "aten::normal_", "", #T "_normal", mean, stdv); \
    fill_drawn(self, [&] { return THRandom_normal(gen, mean, stdv); });                          \
  }                                                                                              \
  void T##_exponential(T* self, THGenerator* gen, double lambda) {                               \
    if (gen == nullptr)                                                                          \
      return torch_drawn(self, "aten::exponential_", "", #T "_exponential", lambda);             \
    fill_drawn(self, [&] { return THRandom_exponential(gen, lambda); });                         \
  }                                                                                              \
  void T##_cauchy(T* self, THGenerator* gen, double median, double sigma) {                      \
    if (gen == nullptr)                                                                          \
      return torch_drawn(self, "aten::cauchy_", "", #T "_cauchy", median, sigma);                \
    fill_drawn(self, [&] { return THRandom_cauchy(gen, median, sigma); });                       \
  }                                                                                              \
  void T##_logNormal(T* self, THGenerator* gen, double mean, double stdv) {                      \
    if (gen == nullptr) {                                                                        \
      const auto [mu, sigma] = log_normal_of(mean, stdv, #T "_logNormal");                       \
      return torch_drawn(self, "aten::log_normal_", "", #T "_logNormal", mu, sigma);             \
    }                                                                                            \
    fill_drawn(self, [&] { return THRandom_logNormal(gen, mean, stdv); });                       \
  }                                                                                              \
  void T##_rand(T* r, THGenerator* gen, THLongStorage* size) {                                   \
    resize(r, longs_of(size, #T "_rand"), #T "_rand");                                           \
    T##_uniform(r, gen, 0, 1);                                                                   \
  }                                                                                              \
  void T##_randn(T* r, THGenerator* gen, THLongStorage* size) {                                  \
    resize(r, longs_of(size, #T "_randn"), #T "_randn");                                         \
    T##_normal(r, gen, 0, 1);                                                                    \
  }
TH_FORALL_CPU_TENSORS(KFL_DEFINE_RANDOM_API)
TH_FORALL_CPU_FLOAT_TENSORS(KFL_DEFINE_FLOAT_RANDOM_API)

#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA(T, S, real, dtype)    \
  KFL_DEFINE_TENSOR_API(T, real, THCState*, ) \
  KFL_DEFINE_MEMORY_API(T, S, real, dtype, true, THCState*, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA)
#define KFL_DEFINE_CUDA_INT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, int64_t, THCState*, )
TH_FORALL_CUDA_INT_TENSORS(KFL_DEFINE_CUDA_INT_MATH)
#define KFL_DEFINE_CUDA_FLOAT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, double, THCState*, )  \
  KFL_DEFINE_FLOAT_MATH_API(T, real, THCState*, )
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_FLOAT_MATH)
#define KFL_DEFINE_CUDA_INDEX(T, S, real, dtype) \
  KFL_DEFINE_INDEX_API(T, THCudaLongTensor, THCudaByteTensor, real, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_INDEX)

// THC's random numbers: torch's CUDA generator, THC's parameters
#define KFL_DEFINE_CUDA_RANDOM(T, S, real, dtype)                       \
  void T##_bernoulli(THCState*, T* self, double p) {                    \
    torch_drawn(self, "aten::bernoulli_", "float", #T "_bernoulli", p); \
  }                                                                     \
  void T##_geometric(THCState*, T* self, double p) {                    \
    torch_drawn(self, "aten::geometric_", "", #T "_geometric", p);      \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_RANDOM)
#define KFL_DEFINE_CUDA_FLOAT_RANDOM(T, S, real, dtype)                      \
  void T##_uniform(THCState*, T* self, double a, double b) {                 \
    torch_drawn(self, "aten::uniform_", "", #T "_uniform", a, b);            \
  }                                                                          \
  void T##_normal(THCState*, T* self, double mean, double stdv) {            \
    torch_drawn(self, "aten::normal_", "", #T "_normal", mean, stdv);        \
  }                                                                          \
  void T##_logNormal(THCState*, T* self, double mean, double stdv) {         \
    torch_drawn(self, "aten::log_normal_", "", #T "_logNormal", mean, stdv); \
  }                                                                          \
  void T##_exponential(THCState*, T* self, double lambda) {                  \
    torch_drawn(self, "aten::exponential_", "", #T "_exponential", lambda);  \
  }                                                                          \
  void T##_cauchy(THCState*, T* self, double median, double sigma) {         \
    torch_drawn(self, "aten::cauchy_", "", #T "_cauchy", median, sigma);     \
  }                                                                          \
  void T##_rand(THCState*, T* r, THLongStorage* size) {                      \
    resize(r, longs_of(size, #T "_rand"), #T "_rand");                       \
    torch_drawn(r, "aten::uniform_", "", #T "_rand", 0.0, 1.0);              \
  }                                                                          \
  void T##_randn(THCState*, T* r, THLongStorage* size) {                     \
    resize(r, longs_of(size, #T "_randn"), #T "_randn");                     \
    torch_drawn(r, "aten::normal_", "", #T "_randn", 0.0, 1.0);              \
  }
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_FLOAT_RANDOM)

#define KFL_DEFINE_COPY_FROM_CUDA(Name, Src, T, ...)       \
  void T##_copyCuda##Name(__VA_ARGS__ T* self, Src* src) { \
    copy_into(self, src, #T "_copyCuda" #Name);            \
  }
#define KFL_DEFINE_CUDA_COPY(T, S, real, dtype)                   \
  TH_FORALL_CPU_NAMES(KFL_DEFINE_COPY_FROM, T, THCState*, )       \
  TH_FORALL_CUDA_NAMES(KFL_DEFINE_COPY_FROM_CUDA, T, THCState*, ) \
  void T##_copyIgnoringOverlaps(THCState*, T* self, T* src) {     \
    copy_into(self, src, #T "_copyIgnoringOverlaps");             \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_COPY)
#define KFL_DEFINE_CPU_FROM_CUDA(T, S, real, dtype) \
  TH_FORALL_CUDA_NAMES(KFL_DEFINE_COPY_FROM_CUDA, T, THCState*, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_FROM_CUDA)
#define KFL_DEFINE_PAIR_COPY(CPU, CUDA)                       \
  void CUDA##_copyCPU(THCState*, CUDA* self, CPU* src) {      \
    copy_into(self, src, #CUDA "_copyCPU");                   \
  }                                                           \
  void CUDA##_copyAsyncCPU(THCState*, CUDA* self, CPU* src) { \
    copy_into(self, src, #CUDA "_copyAsyncCPU");              \
  }                                                           \
  void CPU##_copyCuda(THCState*, CPU* self, CUDA* src) {      \
    copy_into(self, src, #CPU "_copyCuda");                   \
  }                                                           \
  void CPU##_copyAsyncCuda(THCState*, CPU* self, CUDA* src) { \
    copy_into(self, src, #CPU "_copyAsyncCuda");              \
  }                                                           \
  void CUDA##_copyCuda(THCState*, CUDA* self, CUDA* src) {    \
    copy_into(self, src, #CUDA "_copyCuda");                  \
  }
TH_FORALL_CPU_CUDA_PAIRS(KFL_DEFINE_PAIR_COPY)
#endif

}  // extern "C"

#ifdef KERNFORGE_LEGACY_WITH_CUDA

// The `state` legacy sources declare `extern THCState *state;` for: nothing
// is kept in it, each function asks torch for the current device and stream.
struct THCState {};
namespace {
THCState the_state;

// THC's cuBLAS handles and device properties, one of each per device, made
// on first use and kept for the process (as THC kept them until shutdown;
// destroying them at exit could come after the CUDA context is gone).
std::mutex per_device_mutex;
std::unordered_map<int, cublasHandle_t> blas_handles;
std::unordered_map<int, cudaDeviceProp> device_properties;  // nodes: their addresses stay

// The current device's, or `device`'s with it made current while cuBLAS
// creates the handle there.
cublasHandle_t blas_handle(int device) {
  std::lock_guard<std::mutex> lock(per_device_mutex);
  auto found = blas_handles.find(device);
  if (found != blas_handles.end()) return found->second;
  int current;
  kfl_thc_check(cudaGetDevice(&current), __FILE__, __LINE__);
  if (current != device) kfl_thc_check(cudaSetDevice(device), __FILE__, __LINE__);
  cublasHandle_t h;
  const cublasStatus_t status = cublasCreate(&h);
  if (current != device) kfl_thc_check(cudaSetDevice(current), __FILE__, __LINE__);
  kfl_thc_cublas_check(status, __FILE__, __LINE__);
  return blas_handles.emplace(device, h).first->second;
}

// cuBLAS's pointer-array batch (the arrays in device memory): read back, then
// one strided baddbmm when the matrices lie at equal distances, as they
// mostly do, else one gemm each.
void gemm_pointer_batched(char transa, char transb, int64_t m, int64_t n, int64_t k, double alpha,
                          const void* const* a, int64_t lda, const void* const* b, int64_t ldb,
                          double beta, void* const* c, int64_t ldc, int64_t batch, size_t elem_size,
                          int32_t dtype, const char* fn) {
  if (batch <= 0) return;
  std::vector<const void*> ptrs(3 * static_cast<size_t>(batch));
  int32_t device;
  void* stream;
  check(aoti_torch_get_current_device_index(&device), fn);
  check(aoti_torch_get_current_cuda_stream(device, &stream), fn);
  const size_t bytes = sizeof(void*) * static_cast<size_t>(batch);
  const void* const* arrays[3] = {a, b, const_cast<const void* const*>(c)};
  for (int i = 0; i < 3; i++)
    kfl_thc_check(cudaMemcpyAsync(ptrs.data() + i * batch, arrays[i], bytes, cudaMemcpyDeviceToHost,
                                  static_cast<cudaStream_t>(stream)),
                  __FILE__, __LINE__);
  kfl_thc_check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), __FILE__, __LINE__);
  // the distance between consecutive matrices, in elements, or -1 when not one for all
  auto stride_of = [&](int which) -> int64_t {
    const auto* p = reinterpret_cast<const char* const*>(ptrs.data() + which * batch);
    if (batch == 1) return 0;
    const std::ptrdiff_t step = p[1] - p[0];
    if (step < 0 || step % static_cast<std::ptrdiff_t>(elem_size) != 0) return -1;
    for (int64_t i = 2; i < batch; i++)
      if (p[i] - p[i - 1] != step) return -1;
    return step / static_cast<std::ptrdiff_t>(elem_size);
  };
  const int64_t sa = stride_of(0), sb = stride_of(1), sc = stride_of(2);
  if (sa >= 0 && sb >= 0 && sc > 0) {
    gemm(transa, transb, m, n, k, alpha, ptrs[0], lda, ptrs[batch], ldb, beta,
         const_cast<void*>(ptrs[2 * batch]), ldc, dtype, true, fn, batch, sa, sb, sc);
    return;
  }
  for (int64_t i = 0; i < batch; i++)
    gemm(transa, transb, m, n, k, alpha, ptrs[i], lda, ptrs[batch + i], ldb, beta,
         const_cast<void*>(ptrs[2 * batch + i]), ldc, dtype, true, fn);
}
}  // namespace

extern "C" {

THCState* state = &the_state;

cudaStream_t THCState_getCurrentStream(THCState*) {
  int32_t device;
  void* stream;
  check(aoti_torch_get_current_device_index(&device), "THCState_getCurrentStream");
  check(aoti_torch_get_current_cuda_stream(device, &stream), "THCState_getCurrentStream");
  return static_cast<cudaStream_t>(stream);
}

cudaStream_t THCState_getCurrentStreamOnDevice(THCState*, int device) {
  void* stream;
  check(aoti_torch_get_current_cuda_stream(device, &stream), "THCState_getCurrentStreamOnDevice");
  return static_cast<cudaStream_t>(stream);
}

int THCState_getCurrentDevice(THCState*) {
  int32_t device;
  check(aoti_torch_get_current_device_index(&device), "THCState_getCurrentDevice");
  return device;
}

struct cudaDeviceProp* THCState_getCurrentDeviceProperties(THCState* s) {
  const int device = THCState_getCurrentDevice(s);
  std::lock_guard<std::mutex> lock(per_device_mutex);
  auto found = device_properties.find(device);
  if (found == device_properties.end()) {
    cudaDeviceProp prop;
    kfl_thc_check(cudaGetDeviceProperties(&prop, device), __FILE__, __LINE__);
    found = device_properties.emplace(device, prop).first;
  }
  return &found->second;
}

cublasHandle_t THCState_getDeviceBlasHandle(THCState* s, int device, int index) {
  if (index != 1)
    throw std::runtime_error("THCState_getDeviceBlasHandle: handle " + std::to_string(index) +
                             " does not exist (there is one per device, handle 1)");
  if (device < 0 || device >= THCState_getNumDevices(s))
    throw std::runtime_error("THCState_getDeviceBlasHandle: no CUDA device " +
                             std::to_string(device));
  cublasHandle_t h = blas_handle(device);
  kfl_thc_cublas_check(cublasSetStream(h, THCState_getCurrentStreamOnDevice(s, device)), __FILE__,
                       __LINE__);
  return h;
}

cublasHandle_t THCState_getCurrentBlasHandle(THCState* s) {
  return THCState_getDeviceBlasHandle(s, THCState_getCurrentDevice(s), 1);
}

int THCState_getNumBlasHandles(THCState*) {
  return 1;
}

int THCState_getCurrentBlasHandleIndex(THCState*) {
  return 1;
}

void kfl_thc_cublas_check(cublasStatus_t status, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuBLAS error: ") + cublasGetStatusName(status) + ": " +
                           cublasGetStatusString(status) + " (" + file + ":" +
                           std::to_string(line) + ")");
}

int THCState_getNumDevices(THCState*) {
  int count = 0;
  kfl_thc_check(cudaGetDeviceCount(&count), __FILE__, __LINE__);
  return count;
}

#define KFL_DEFINE_DEVICE_API(T, S, real, dtype)                               \
  int T##_getDevice(THCState*, const T* self) {                                \
    int32_t index;                                                             \
    check(aoti_torch_get_device_index(handle(self), &index), #T "_getDevice"); \
    return index;                                                              \
  }                                                                            \
  int T##_checkGPU(THCState* s, unsigned int n_tensors, ...) {                 \
    const int current = THCState_getCurrentDevice(s);                          \
    va_list args;                                                              \
    va_start(args, n_tensors);                                                 \
    int same = 1;                                                              \
    for (unsigned int i = 0; i < n_tensors; i++) {                             \
      const T* t = va_arg(args, const T*);                                     \
      if (t != nullptr && T##_getDevice(s, t) != current) same = 0;            \
    }                                                                          \
    va_end(args);                                                              \
    return same;                                                               \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_DEVICE_API)

void kfl_thc_check(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // a launch error is taken, so the next check does not see it again
  throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err) + " (" + file + ":" + std::to_string(line) +
                           ")");
}

void kfl_thc_check_warn(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  std::fprintf(stderr, "THCudaCheckWarn FAIL file=%s line=%i error=%i : %s\n", file, line,
               static_cast<int>(err), cudaGetErrorString(err));
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

void THCudaBlas_Sgemm(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      float alpha, float* a, int64_t lda, float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float32(),
       true, "THCudaBlas_Sgemm");
}
void THCudaBlas_Dgemm(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      double alpha, double* a, int64_t lda, double* b, int64_t ldb, double beta,
                      double* c, int64_t ldc) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float64(),
       true, "THCudaBlas_Dgemm");
}
void THCudaBlas_Hgemm(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                      THHalf alpha, THHalf* a, int64_t lda, THHalf* b, int64_t ldb, THHalf beta,
                      THHalf* c, int64_t ldc) {
  gemm(transa, transb, m, n, k, as_double(alpha), a, lda, b, ldb, as_double(beta), c, ldc,
       aoti_torch_dtype_float16(), true, "THCudaBlas_Hgemm");
}
void THCudaBlas_SgemmStridedBatched(THCState*, char transa, char transb, int64_t m, int64_t n,
                                    int64_t k, float alpha, const float* a, int64_t lda,
                                    int64_t strideA, const float* b, int64_t ldb, int64_t strideB,
                                    float beta, float* c, int64_t ldc, int64_t strideC,
                                    int64_t batchCount) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float32(),
       true, "THCudaBlas_SgemmStridedBatched", batchCount, strideA, strideB, strideC);
}
void THCudaBlas_DgemmStridedBatched(THCState*, char transa, char transb, int64_t m, int64_t n,
                                    int64_t k, double alpha, const double* a, int64_t lda,
                                    int64_t strideA, const double* b, int64_t ldb, int64_t strideB,
                                    double beta, double* c, int64_t ldc, int64_t strideC,
                                    int64_t batchCount) {
  gemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, aoti_torch_dtype_float64(),
       true, "THCudaBlas_DgemmStridedBatched", batchCount, strideA, strideB, strideC);
}
void THCudaBlas_SgemmBatched(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                             float alpha, const float* a[], int64_t lda, const float* b[],
                             int64_t ldb, float beta, float* c[], int64_t ldc, int64_t batchCount) {
  gemm_pointer_batched(transa, transb, m, n, k, alpha, reinterpret_cast<const void* const*>(a), lda,
                       reinterpret_cast<const void* const*>(b), ldb, beta,
                       reinterpret_cast<void* const*>(c), ldc, batchCount, sizeof(float),
                       aoti_torch_dtype_float32(), "THCudaBlas_SgemmBatched");
}
void THCudaBlas_DgemmBatched(THCState*, char transa, char transb, int64_t m, int64_t n, int64_t k,
                             double alpha, const double* a[], int64_t lda, const double* b[],
                             int64_t ldb, double beta, double* c[], int64_t ldc,
                             int64_t batchCount) {
  gemm_pointer_batched(transa, transb, m, n, k, alpha, reinterpret_cast<const void* const*>(a), lda,
                       reinterpret_cast<const void* const*>(b), ldb, beta,
                       reinterpret_cast<void* const*>(c), ldc, batchCount, sizeof(double),
                       aoti_torch_dtype_float64(), "THCudaBlas_DgemmBatched");
}
void THCudaBlas_Sgemv(THCState*, char trans, int64_t m, int64_t n, float alpha, float* a,
                      int64_t lda, float* x, int64_t incx, float beta, float* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float32(), true,
       "THCudaBlas_Sgemv");
}
void THCudaBlas_Dgemv(THCState*, char trans, int64_t m, int64_t n, double alpha, double* a,
                      int64_t lda, double* x, int64_t incx, double beta, double* y, int64_t incy) {
  gemv(trans, m, n, alpha, a, lda, x, incx, beta, y, incy, aoti_torch_dtype_float64(), true,
       "THCudaBlas_Dgemv");
}

cudaError_t THCudaFree(THCState*, void* ptr) {
  if (ptr != nullptr) check(aoti_torch_cuda_caching_allocator_raw_delete(ptr), "THCudaFree");
  return cudaSuccess;
}

}  // extern "C"

#endif  // KERNFORGE_LEGACY_WITH_CUDA
