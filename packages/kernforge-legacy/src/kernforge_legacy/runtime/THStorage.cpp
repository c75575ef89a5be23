// TH's storages (THStorage.h), for every TH and THC storage type.
#include "THRuntime.h"

namespace {

// TH's and THC's S_resize: the storage itself grows or shrinks (torch's resize_ of the
// tensor over all of it, from element 0), kept elements kept, new ones
// uninitialized; every tensor over that storage sees the new memory. A
// tensor's own `storage` field is resized through the tensor instead.
void resize_storage(void* s, int64_t n, const char* fn) {
  auto* box = static_cast<StorageBox*>(s);
  if (n < 0)
    throw std::runtime_error(std::string(fn) + ": size must be >= 0, got " + std::to_string(n));
  if (box->owner != nullptr)
    throw std::runtime_error(
        std::string(fn) +
        ": this is a tensor's own storage field; resize the tensor, or its storage from T_storage");
  call(
      "aten::resize_", "",
      {torch::stable::detail::from(borrow(s)), torch::stable::detail::from(std::vector<int64_t>{n}),
       torch::stable::detail::from(std::nullopt)},
      fn);
  void* data = nullptr;
  check(aoti_torch_get_data_ptr(box->tensor, &data), fn);
  box->data = data;
  box->size = n;
}

}  // namespace

extern "C" {

// Storages of one handle type (TH/TH.h's storage API); `cuda`: storages it
// makes are on the current CUDA device. NONE is the parameter list of S_new.
#define KFL_DEFINE_STORAGE_API(S, real, dtype, cuda, NONE, ...)                                    \
  real* S##_data(__VA_ARGS__ const S* self) {                                                      \
    need(#S "_data", {{self, 1, "self", #S "*"}});                                                 \
    return static_cast<real*>(reinterpret_cast<const StorageBox*>(self)->data);                    \
  }                                                                                                \
  ptrdiff_t S##_size(__VA_ARGS__ const S* self) {                                                  \
    need(#S "_size", {{self, 1, "self", #S "*"}});                                                 \
    return reinterpret_cast<const StorageBox*>(self)->size;                                        \
  }                                                                                                \
  void S##_fill(__VA_ARGS__ S* self, real value) {                                                 \
    need(#S "_fill", {{self, 1, "self", #S "*"}});                                                 \
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
    need(#S "_get", {{self, 1, "self", #S "*"}});                                                  \
    const Tensor storage = storage_tensor(self, #S "_get");                                        \
    const TensorBox whole = box_of(storage);                                                       \
    return get_element<real>(&whole, {static_cast<int64_t>(index)}, cuda, #S "_get");              \
  }                                                                                                \
  void S##_set(__VA_ARGS__ S* self, ptrdiff_t index, real value) {                                 \
    need(#S "_set", {{self, 1, "self", #S "*"}});                                                  \
    const Tensor storage = storage_tensor(self, #S "_set");                                        \
    const TensorBox whole = box_of(storage);                                                       \
    set_element(&whole, {static_cast<int64_t>(index)}, value, cuda, #S "_set");                    \
  }                                                                                                \
  void S##_retain(__VA_ARGS__ S* self) {                                                           \
    need(#S "_retain", {{self, 1, "self", #S "*"}});                                               \
    check_counted(self, #S "_retain");                                                             \
    retain(self, #S "_retain");                                                                    \
  }                                                                                                \
  void S##_free(__VA_ARGS__ S* self) {                                                             \
    check_counted(self, #S "_free");                                                               \
    release(self);                                                                                 \
  }

#define KFL_DEFINE_STORAGE_RESIZE(S, ...)                \
  void S##_resize(__VA_ARGS__ S* self, ptrdiff_t size) { \
    need(#S "_resize", {{self, 1, "self", #S "*"}});     \
    resize_storage(self, size, #S "_resize");            \
  }
#define KFL_DEFINE_CPU_STORAGE(T, S, real, dtype)       \
  KFL_DEFINE_STORAGE_API(S, real, dtype, false, void, ) \
  KFL_DEFINE_STORAGE_RESIZE(S, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_STORAGE)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA_STORAGE(T, S, real, dtype)                     \
  KFL_DEFINE_STORAGE_API(S, real, dtype, true, THCState*, THCState*, ) \
  KFL_DEFINE_STORAGE_RESIZE(S, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_STORAGE)
#endif

}  // extern "C"

// THStorage.h's shape arithmetic over THLongStorage: a size with one -1
// inferred, and the shapes tensors broadcast or expand to. The infer
// functions answer -1 with a message in error_buffer (TH's way) for shapes
// that do not broadcast; NULL arguments raise.
namespace {

// The shape n shapes broadcast to, aligned at their last dimension, or the reason they do not
std::optional<std::string> broadcast(const std::vector<std::vector<int64_t>>& shapes,
                                     std::vector<int64_t>& out) {
  size_t dims = 0;
  for (const auto& s : shapes) dims = std::max(dims, s.size());
  out.assign(dims, 1);
  for (size_t k = 0; k < shapes.size(); ++k)
    for (size_t i = 0; i < dims; ++i) {
      const std::vector<int64_t>& s = shapes[k];
      if (i >= s.size()) continue;
      const int64_t size = s[s.size() - 1 - i];
      int64_t& into = out[dims - 1 - i];
      if (size == into || size == 1) continue;
      if (into != 1)
        return "The size of tensor a (" + std::to_string(into) +
               ") must match the size of tensor b (" + std::to_string(size) +
               ") at non-singleton dimension " + std::to_string(dims - 1 - i);
      into = size;
    }
  return std::nullopt;
}

int report(const std::string& why, char* error_buffer, int buffer_len) {
  if (error_buffer != nullptr && buffer_len > 0)
    std::snprintf(error_buffer, buffer_len, "%s", why.c_str());
  return -1;
}

// output := values, resized to their number
void write_longs(THLongStorage* output, const std::vector<int64_t>& values, const char* fn) {
  resize_storage(output, static_cast<int64_t>(values.size()), fn);
  if (!values.empty())
    std::memcpy(reinterpret_cast<StorageBox*>(output)->data, values.data(),
                values.size() * sizeof(int64_t));
}

std::vector<int64_t> array_of(const int64_t* p, int64_t n, const char* name, const char* fn) {
  if (n < 0 || (n > 0 && p == nullptr))
    throw std::runtime_error(std::string(fn) + ": " + name + " is NULL or its count " +
                             std::to_string(n) + " is negative");
  return std::vector<int64_t>(p, p + n);
}

}  // namespace

extern "C" {

THLongStorage* THLongStorage_newInferSize(THLongStorage* size, ptrdiff_t nElement) {
  const char* fn = "THLongStorage_newInferSize";
  need(fn, {{size, 1, "size", "THLongStorage*"}});
  std::vector<int64_t> shape = longs_of(size, fn);
  int64_t total = shape.empty() ? 0 : 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] != -1) {
      total *= shape[i];
      continue;
    }
    if (infer != -1)
      throw std::runtime_error(std::string(fn) + ": only one dimension can be inferred");
    infer = static_cast<int64_t>(i);
  }
  const bool fits = infer != -1 ? total > 0 && nElement % total == 0 : nElement == total;
  if (!fits)
    throw std::runtime_error(std::string(fn) + ": size '" + describe(shape).str +
                             "' is invalid for input with " + std::to_string(nElement) +
                             " elements");
  if (infer != -1) shape[infer] = nElement / total;
  return long_storage(shape, fn);
}

int THLongStorage_inferSize2(THLongStorage* output, int64_t* sizesA, int64_t dimsA, int64_t* sizesB,
                             int64_t dimsB, char* error_buffer, int buffer_len) {
  const char* fn = "THLongStorage_inferSize2";
  need(fn, {{output, 1, "output", "THLongStorage*"}});
  std::vector<int64_t> out;
  if (auto why = broadcast(
          {array_of(sizesA, dimsA, "sizesA", fn), array_of(sizesB, dimsB, "sizesB", fn)}, out))
    return report(*why, error_buffer, buffer_len);
  write_longs(output, out, fn);
  return 0;
}

int THLongStorage_inferSizeN(THLongStorage* output, int n, int64_t** sizes, int64_t* dims,
                             char* error_buffer, int buffer_len) {
  const char* fn = "THLongStorage_inferSizeN";
  need(fn, {{output, 1, "output", "THLongStorage*"}});
  if (n <= 0 || sizes == nullptr || dims == nullptr)
    throw std::runtime_error(std::string(fn) +
                             ": needs n > 0 shapes, got n = " + std::to_string(n) +
                             (sizes == nullptr || dims == nullptr ? " (sizes or dims NULL)" : ""));
  std::vector<std::vector<int64_t>> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back(array_of(sizes[i], dims[i], "sizes[i]", fn));
  std::vector<int64_t> out;
  if (auto why = broadcast(shapes, out)) return report(*why, error_buffer, buffer_len);
  write_longs(output, out, fn);
  return 0;
}

int THLongStorage_inferExpandGeometry(int64_t* tensorSizes, int64_t* tensorStrides,
                                      int64_t tensorDim, THLongStorage* sizes,
                                      int64_t** expandedSizes, int64_t** expandedStrides,
                                      char* error_buffer, int buffer_len) {
  const char* fn = "THLongStorage_inferExpandGeometry";
  need(fn, {{sizes, 4, "sizes", "THLongStorage*"}});
  if (expandedSizes == nullptr || expandedStrides == nullptr)
    throw std::runtime_error(std::string(fn) + ": expandedSizes or expandedStrides is NULL");
  const std::vector<int64_t> have = array_of(tensorSizes, tensorDim, "tensorSizes", fn),
                             steps = array_of(tensorStrides, tensorDim, "tensorStrides", fn),
                             want = longs_of(sizes, fn);
  const int64_t dims = static_cast<int64_t>(want.size());
  if (dims < tensorDim)
    return report("the number of sizes provided (" + std::to_string(dims) +
                      ") must be greater or equal to the number of dimensions in the tensor (" +
                      std::to_string(tensorDim) + ")",
                  error_buffer, buffer_len);
  std::vector<int64_t> out_sizes(dims), out_strides(dims);
  for (int64_t i = dims - 1; i >= 0; --i) {
    const int64_t dim = tensorDim - dims + i;
    int64_t size = dim >= 0 ? have[dim] : 1;
    int64_t stride =
        dim >= 0 ? steps[dim] : (i + 1 < dims ? out_sizes[i + 1] * out_strides[i + 1] : 1);
    int64_t target = want[i];
    if (target == -1) {
      if (dim < 0)
        return report(
            "The expanded size of the tensor (-1) isn't allowed in a leading, "
            "non-existing dimension " +
                std::to_string(i),
            error_buffer, buffer_len);
      target = size;
    }
    if (size != target) {
      if (size != 1)
        return report("The expanded size of the tensor (" + std::to_string(target) +
                          ") must match the existing size (" + std::to_string(size) +
                          ") at non-singleton dimension " + std::to_string(i),
                      error_buffer, buffer_len);
      size = target;
      stride = 0;
    }
    out_sizes[i] = size;
    out_strides[i] = stride;
  }
  *expandedSizes = static_cast<int64_t*>(THAlloc(sizeof(int64_t) * dims));
  *expandedStrides = static_cast<int64_t*>(THAlloc(sizeof(int64_t) * dims));
  std::copy(out_sizes.begin(), out_sizes.end(), *expandedSizes);
  std::copy(out_strides.begin(), out_strides.end(), *expandedStrides);
  return 0;
}

}  // extern "C"
