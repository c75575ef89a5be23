// TH's storages (THStorage.h), for every TH and THC storage type.
#include "THRuntime.h"

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

#define KFL_DEFINE_CPU_STORAGE(T, S, real, dtype) \
  KFL_DEFINE_STORAGE_API(S, real, dtype, false, void, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_STORAGE)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA_STORAGE(T, S, real, dtype) \
  KFL_DEFINE_STORAGE_API(S, real, dtype, true, THCState*, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_STORAGE)
#endif

}  // extern "C"
