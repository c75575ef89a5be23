// TH's tensors (THTensor.h): their fields, sizes, lifecycle, views, resize
// and element access, for every TH and THC tensor type.
#include "THRuntime.h"

extern "C" {

// The functions of one handle type T; the variadic arguments are the leading
// parameters (THC's state, nothing for TH).
#define KFL_DEFINE_TENSOR_API(T, real, ...)                                                \
  real* T##_data(__VA_ARGS__ const T* self) {                                              \
    need(#T "_data", {{self, 1, "self", #T "*"}});                                         \
    void* p;                                                                               \
    check(aoti_torch_get_data_ptr(handle(self), &p), #T "_data");                          \
    return static_cast<real*>(p);                                                          \
  }                                                                                        \
  ptrdiff_t T##_nElement(__VA_ARGS__ const T* self) {                                      \
    need(#T "_nElement", {{self, 1, "self", #T "*"}});                                     \
    return numel(self);                                                                    \
  }                                                                                        \
  int T##_nDimension(__VA_ARGS__ const T* self) {                                          \
    need(#T "_nDimension", {{self, 1, "self", #T "*"}});                                   \
    return th_dims(sizes(self).data(), dim_of(self));                                      \
  }                                                                                        \
  /* 0.4's legacy count: an empty tensor has no dimensions */                              \
  int T##__nDimension(__VA_ARGS__ const T* self) {                                         \
    need(#T "__nDimension", {{self, 1, "self", #T "*"}});                                  \
    return numel(self) == 0 ? 0 : static_cast<int>(dim_of(self));                          \
  }                                                                                        \
  int64_t T##_size(__VA_ARGS__ const T* self, int dim) {                                   \
    need(#T "_size", {{self, 1, "self", #T "*"}});                                         \
    return size_at(self, dim, false, #T "_size");                                          \
  }                                                                                        \
  int64_t T##_stride(__VA_ARGS__ const T* self, int dim) {                                 \
    need(#T "_stride", {{self, 1, "self", #T "*"}});                                       \
    return size_at(self, dim, true, #T "_stride");                                         \
  }                                                                                        \
  int T##_isContiguous(__VA_ARGS__ const T* self) {                                        \
    need(#T "_isContiguous", {{self, 1, "self", #T "*"}});                                 \
    bool c;                                                                                \
    check(aoti_torch_is_contiguous(handle(self), &c), #T "_isContiguous");                 \
    return c;                                                                              \
  }                                                                                        \
  int T##_isSameSizeAs(__VA_ARGS__ const T* self, const T* other) {                        \
    need(#T "_isSameSizeAs", {{self, 1, "self", #T "*"}, {other, 2, "other", #T "*"}});    \
    return sizes(self) == sizes(other);                                                    \
  }                                                                                        \
  THDescBuff T##_sizeDesc(__VA_ARGS__ const T* self) {                                     \
    need(#T "_sizeDesc", {{self, 1, "self", #T "*"}});                                     \
    return describe(sizes(self));                                                          \
  }                                                                                        \
  void T##_resize1d(__VA_ARGS__ T* self, int64_t s0) {                                     \
    need(#T "_resize1d", {{self, 1, "self", #T "*"}});                                     \
    resize(self, {s0}, #T "_resize1d");                                                    \
  }                                                                                        \
  void T##_resize2d(__VA_ARGS__ T* self, int64_t s0, int64_t s1) {                         \
    need(#T "_resize2d", {{self, 1, "self", #T "*"}});                                     \
    resize(self, {s0, s1}, #T "_resize2d");                                                \
  }                                                                                        \
  void T##_resize3d(__VA_ARGS__ T* self, int64_t s0, int64_t s1, int64_t s2) {             \
    need(#T "_resize3d", {{self, 1, "self", #T "*"}});                                     \
    resize(self, {s0, s1, s2}, #T "_resize3d");                                            \
  }                                                                                        \
  void T##_resize4d(__VA_ARGS__ T* self, int64_t s0, int64_t s1, int64_t s2, int64_t s3) { \
    need(#T "_resize4d", {{self, 1, "self", #T "*"}});                                     \
    resize(self, {s0, s1, s2, s3}, #T "_resize4d");                                        \
  }                                                                                        \
  void T##_resize5d(__VA_ARGS__ T* self, int64_t s0, int64_t s1, int64_t s2, int64_t s3,   \
                    int64_t s4) {                                                          \
    need(#T "_resize5d", {{self, 1, "self", #T "*"}});                                     \
    resize(self, {s0, s1, s2, s3, s4}, #T "_resize5d");                                    \
  }                                                                                        \
  void T##_resizeAs(__VA_ARGS__ T* self, const T* src) {                                   \
    need(#T "_resizeAs", {{self, 1, "self", #T "*"}, {src, 2, "src", #T "*"}});            \
    resize(self, sizes(src), #T "_resizeAs");                                              \
  }                                                                                        \
  void T##_zero(__VA_ARGS__ T* self) {                                                     \
    need(#T "_zero", {{self, 1, "self", #T "*"}});                                         \
    check(aoti_torch_zero_(handle(self)), #T "_zero");                                     \
  }                                                                                        \
  void T##_fill(__VA_ARGS__ T* self, real value) {                                         \
    need(#T "_fill", {{self, 1, "self", #T "*"}});                                         \
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
    need(#T "_newWithTensor", {{src, 1, "src", #T "*"}});                                          \
    return T##_made(view_of(src, sizes(src), strides(src), 0, #T "_newWithTensor"));               \
  }                                                                                                \
  T* T##_newContiguous(__VA_ARGS__ T* src) {                                                       \
    need(#T "_newContiguous", {{src, 1, "src", #T "*"}});                                          \
    return T##_made(torch::stable::contiguous(borrow(src)));                                       \
  }                                                                                                \
  T* T##_newClone(__VA_ARGS__ T* src) {                                                            \
    need(#T "_newClone", {{src, 1, "src", #T "*"}});                                               \
    Tensor out = empty(sizes(src), aoti_torch_dtype_##dtype(), cuda, #T "_newClone");              \
    torch::stable::copy_(out, borrow(src));                                                        \
    return T##_made(out);                                                                          \
  }                                                                                                \
  T* T##_newSelect(__VA_ARGS__ T* src, int dim, int64_t index) {                                   \
    need(#T "_newSelect", {{src, 1, "src", #T "*"}});                                              \
    return T##_made(selected(borrow(src), dim, index, #T "_newSelect"));                           \
  }                                                                                                \
  T* T##_newNarrow(__VA_ARGS__ T* src, int dim, int64_t first, int64_t size) {                     \
    need(#T "_newNarrow", {{src, 1, "src", #T "*"}});                                              \
    Tensor t = borrow(src);                                                                        \
    return T##_made(narrowed(t, dim, first, size, #T "_newNarrow"));                               \
  }                                                                                                \
  T* T##_newTranspose(__VA_ARGS__ T* src, int dim1, int dim2) {                                    \
    need(#T "_newTranspose", {{src, 1, "src", #T "*"}});                                           \
    return T##_made(swapped(borrow(src), dim1, dim2, #T "_newTranspose"));                         \
  }                                                                                                \
  T* T##_newWithSize(__VA_ARGS__ THLongStorage* size, THLongStorage* stride) {                     \
    need(#T "_newWithSize", {{size, 1, "size", "THLongStorage*"}});                                \
    const char* fn = #T "_newWithSize";                                                            \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = longs_of(stride, fn);                                                      \
    return T##_made(empty(longs_of(size, fn), aoti_torch_dtype_##dtype(), cuda, fn, steps));       \
  }                                                                                                \
  T* T##_newWithStorage(__VA_ARGS__ S* storage, ptrdiff_t offset, THLongStorage* size,             \
                        THLongStorage* stride) {                                                   \
    need(#T "_newWithStorage", {{size, 3, "size", "THLongStorage*"}});                             \
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
    need(#T "_setStorage", {{self, 1, "self", #T "*"}, {size, 4, "size", "THLongStorage*"}});      \
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
    need(#T "_setStorage1d", {{self, 1, "self", #T "*"}});                                         \
    const char* fn = #T "_setStorage1d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0}, std::vector<int64_t>{t0}, aoti_torch_dtype_##dtype(),  \
                     cuda, fn),                                                                    \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage2d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0, int64_t t0, \
                        int64_t s1, int64_t t1) {                                                  \
    need(#T "_setStorage2d", {{self, 1, "self", #T "*"}});                                         \
    const char* fn = #T "_setStorage2d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0, s1}, std::vector<int64_t>{t0, t1},                      \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage3d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0, int64_t t0, \
                        int64_t s1, int64_t t1, int64_t s2, int64_t t2) {                          \
    need(#T "_setStorage3d", {{self, 1, "self", #T "*"}});                                         \
    const char* fn = #T "_setStorage3d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0, s1, s2}, std::vector<int64_t>{t0, t1, t2},              \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorage4d(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int64_t s0, int64_t t0, \
                        int64_t s1, int64_t t1, int64_t s2, int64_t t2, int64_t s3, int64_t t3) {  \
    need(#T "_setStorage4d", {{self, 1, "self", #T "*"}});                                         \
    const char* fn = #T "_setStorage4d";                                                           \
    set(self,                                                                                      \
        storage_view(storage, offset, {s0, s1, s2, s3}, std::vector<int64_t>{t0, t1, t2, t3},      \
                     aoti_torch_dtype_##dtype(), cuda, fn),                                        \
        fn);                                                                                       \
  }                                                                                                \
  void T##_setStorageNd(__VA_ARGS__ T* self, S* storage, ptrdiff_t offset, int n, int64_t* size,   \
                        int64_t* stride) {                                                         \
    need(#T "_setStorageNd", {{self, 1, "self", #T "*"}});                                         \
    const char* fn = #T "_setStorageNd";                                                           \
    const auto shape = *values_at(size, n, true, "size", fn);                                      \
    const auto steps = values_at(stride, n, false, "stride", fn);                                  \
    set(self, storage_view(storage, offset, shape, steps, aoti_torch_dtype_##dtype(), cuda, fn),   \
        fn);                                                                                       \
  }                                                                                                \
  void T##_squeeze(__VA_ARGS__ T* self, T* src) {                                                  \
    need(#T "_squeeze", {{self, 1, "self", #T "*"}});                                              \
    set(self, squeezed(borrow(src ? src : self), #T "_squeeze"), #T "_squeeze");                   \
  }                                                                                                \
  void T##_unfold(__VA_ARGS__ T* self, T* src, int dim, int64_t size, int64_t step) {              \
    need(#T "_unfold", {{self, 1, "self", #T "*"}});                                               \
    const char* fn = #T "_unfold";                                                                 \
    const Tensor from = borrow(src ? src : self);                                                  \
    check_unfold(from, dim, size, step, fn);                                                       \
    set(self, aten("aten::unfold", "", fn, from, int64_t{dim}, size, step), fn);                   \
  }                                                                                                \
  T* T##_newUnfold(__VA_ARGS__ T* src, int dim, int64_t size, int64_t step) {                      \
    need(#T "_newUnfold", {{src, 1, "src", #T "*"}});                                              \
    const Tensor from = borrow(src);                                                               \
    check_unfold(from, dim, size, step, #T "_newUnfold");                                          \
    return T##_made(aten("aten::unfold", "", #T "_newUnfold", from, int64_t{dim}, size, step));    \
  }                                                                                                \
  void T##_expand(__VA_ARGS__ T* r, T* tensor, THLongStorage* size) {                              \
    need(#T "_expand", {{r, 1, "r", #T "*"},                                                       \
                        {tensor, 2, "tensor", #T "*"},                                             \
                        {size, 3, "size", "THLongStorage*"}});                                     \
    const char* fn = #T "_expand";                                                                 \
    set(r, aten("aten::expand", "", fn, borrow(tensor), longs_of(size, fn), false), fn);           \
  }                                                                                                \
  T* T##_newExpand(__VA_ARGS__ T* tensor, THLongStorage* size) {                                   \
    need(#T "_newExpand", {{tensor, 1, "tensor", #T "*"}, {size, 2, "size", "THLongStorage*"}});   \
    const char* fn = #T "_newExpand";                                                              \
    return T##_made(aten("aten::expand", "", fn, borrow(tensor), longs_of(size, fn), false));      \
  }                                                                                                \
  int T##_isSize(__VA_ARGS__ const T* self, const THLongStorage* dims) {                           \
    need(#T "_isSize", {{self, 1, "self", #T "*"}, {dims, 2, "dims", "THLongStorage*"}});          \
    return sizes(self) == longs_of(dims, #T "_isSize");                                            \
  }                                                                                                \
  int T##_isSetTo(__VA_ARGS__ const T* self, const T* src) {                                       \
    need(#T "_isSetTo", {{self, 1, "self", #T "*"}, {src, 2, "src", #T "*"}});                     \
    return same_view(self, src);                                                                   \
  }                                                                                                \
  T* T##_newView(__VA_ARGS__ T* src, THLongStorage* size) {                                        \
    need(#T "_newView", {{src, 1, "src", #T "*"}, {size, 2, "size", "THLongStorage*"}});           \
    const char* fn = #T "_newView";                                                                \
    return T##_made(call("aten::view", "",                                                         \
                         {torch::stable::detail::from(borrow(src)),                                \
                          torch::stable::detail::from(longs_of(size, fn))},                        \
                         fn));                                                                     \
  }                                                                                                \
  THLongStorage* T##_newSizeOf(__VA_ARGS__ T* self) {                                              \
    need(#T "_newSizeOf", {{self, 1, "self", #T "*"}});                                            \
    return long_storage(sizes(self), #T "_newSizeOf");                                             \
  }                                                                                                \
  THLongStorage* T##_newStrideOf(__VA_ARGS__ T* self) {                                            \
    need(#T "_newStrideOf", {{self, 1, "self", #T "*"}});                                          \
    return long_storage(strides(self), #T "_newStrideOf");                                         \
  }                                                                                                \
  void T##_resize(__VA_ARGS__ T* self, THLongStorage* size, THLongStorage* stride) {               \
    need(#T "_resize", {{self, 1, "self", #T "*"}, {size, 2, "size", "THLongStorage*"}});          \
    const char* fn = #T "_resize";                                                                 \
    std::optional<std::vector<int64_t>> steps;                                                     \
    if (stride) steps = longs_of(stride, fn);                                                      \
    resize_to(self, longs_of(size, fn), steps, aoti_torch_dtype_##dtype(), cuda, fn);              \
  }                                                                                                \
  void T##_resizeNd(__VA_ARGS__ T* self, int n, int64_t* size, int64_t* stride) {                  \
    need(#T "_resizeNd", {{self, 1, "self", #T "*"}});                                             \
    const char* fn = #T "_resizeNd";                                                               \
    const auto steps = values_at(stride, n, false, "stride", fn);                                  \
    resize_to(self, *values_at(size, n, true, "size", fn), steps, aoti_torch_dtype_##dtype(),      \
              cuda, fn);                                                                           \
  }                                                                                                \
  void T##_retain(__VA_ARGS__ T* self) {                                                           \
    need(#T "_retain", {{self, 1, "self", #T "*"}});                                               \
    retain(self, #T "_retain");                                                                    \
  }                                                                                                \
  void T##_free(__VA_ARGS__ T* self) {                                                             \
    release(self);                                                                                 \
  }                                                                                                \
  void T##_set(__VA_ARGS__ T* self, T* src) {                                                      \
    need(#T "_set", {{self, 1, "self", #T "*"}, {src, 2, "src", #T "*"}});                         \
    set(self, borrow(src), #T "_set");                                                             \
  }                                                                                                \
  void T##_select(__VA_ARGS__ T* self, T* src, int dim, int64_t index) {                           \
    need(#T "_select", {{self, 1, "self", #T "*"}});                                               \
    set(self, selected(borrow(src ? src : self), dim, index, #T "_select"), #T "_select");         \
  }                                                                                                \
  void T##_narrow(__VA_ARGS__ T* self, T* src, int dim, int64_t first, int64_t size) {             \
    need(#T "_narrow", {{self, 1, "self", #T "*"}});                                               \
    Tensor t = borrow(src ? src : self);                                                           \
    set(self, narrowed(t, dim, first, size, #T "_narrow"), #T "_narrow");                          \
  }                                                                                                \
  void T##_transpose(__VA_ARGS__ T* self, T* src, int dim1, int dim2) {                            \
    need(#T "_transpose", {{self, 1, "self", #T "*"}});                                            \
    set(self, swapped(borrow(src ? src : self), dim1, dim2, #T "_transpose"), #T "_transpose");    \
  }                                                                                                \
  void T##_squeeze1d(__VA_ARGS__ T* self, T* src, int dim) {                                       \
    need(#T "_squeeze1d", {{self, 1, "self", #T "*"}});                                            \
    set(self, squeezed_at(borrow(src ? src : self), dim, #T "_squeeze1d"), #T "_squeeze1d");       \
  }                                                                                                \
  void T##_unsqueeze1d(__VA_ARGS__ T* self, T* src, int dim) {                                     \
    need(#T "_unsqueeze1d", {{self, 1, "self", #T "*"}});                                          \
    set(self, unsqueezed_at(borrow(src ? src : self), dim, #T "_unsqueeze1d"), #T "_unsqueeze1d"); \
  }                                                                                                \
  void T##_copy(__VA_ARGS__ T* self, T* src) {                                                     \
    need(#T "_copy", {{self, 1, "self", #T "*"}, {src, 2, "src", #T "*"}});                        \
    copy_into(self, src, #T "_copy");                                                              \
  }                                                                                                \
  S* T##_storage(__VA_ARGS__ const T* self) {                                                      \
    need(#T "_storage", {{self, 1, "self", #T "*"}});                                              \
    return static_cast<S*>(storage_of<real>(self, #T "_storage"));                                 \
  }                                                                                                \
  ptrdiff_t T##_storageOffset(__VA_ARGS__ const T* self) {                                         \
    need(#T "_storageOffset", {{self, 1, "self", #T "*"}});                                        \
    return storage_offset(self);                                                                   \
  }                                                                                                \
  real T##_get1d(__VA_ARGS__ const T* self, int64_t x0) {                                          \
    need(#T "_get1d", {{self, 1, "self", #T "*"}});                                                \
    return get_element<real>(self, {x0}, cuda, #T "_get1d");                                       \
  }                                                                                                \
  real T##_get2d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1) {                              \
    need(#T "_get2d", {{self, 1, "self", #T "*"}});                                                \
    return get_element<real>(self, {x0, x1}, cuda, #T "_get2d");                                   \
  }                                                                                                \
  real T##_get3d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1, int64_t x2) {                  \
    need(#T "_get3d", {{self, 1, "self", #T "*"}});                                                \
    return get_element<real>(self, {x0, x1, x2}, cuda, #T "_get3d");                               \
  }                                                                                                \
  real T##_get4d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1, int64_t x2, int64_t x3) {      \
    need(#T "_get4d", {{self, 1, "self", #T "*"}});                                                \
    return get_element<real>(self, {x0, x1, x2, x3}, cuda, #T "_get4d");                           \
  }                                                                                                \
  void T##_set1d(__VA_ARGS__ T* self, int64_t x0, real value) {                                    \
    need(#T "_set1d", {{self, 1, "self", #T "*"}});                                                \
    set_element(self, {x0}, value, cuda, #T "_set1d");                                             \
  }                                                                                                \
  void T##_set2d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, real value) {                        \
    need(#T "_set2d", {{self, 1, "self", #T "*"}});                                                \
    set_element(self, {x0, x1}, value, cuda, #T "_set2d");                                         \
  }                                                                                                \
  void T##_set3d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, int64_t x2, real value) {            \
    need(#T "_set3d", {{self, 1, "self", #T "*"}});                                                \
    set_element(self, {x0, x1, x2}, value, cuda, #T "_set3d");                                     \
  }                                                                                                \
  void T##_set4d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, int64_t x2, int64_t x3,              \
                 real value) {                                                                     \
    need(#T "_set4d", {{self, 1, "self", #T "*"}});                                                \
    set_element(self, {x0, x1, x2, x3}, value, cuda, #T "_set4d");                                 \
  }

// TH's expandNd and freeCopyTo
#define KFL_DEFINE_EXPAND_API(T, ...)                                                           \
  void T##_expandNd(__VA_ARGS__ T** rets, T** ops, int count) {                                 \
    expand_all(reinterpret_cast<void* const*>(rets), reinterpret_cast<const void* const*>(ops), \
               count, #T "_expandNd");                                                          \
  }                                                                                             \
  void T##_freeCopyTo(__VA_ARGS__ T* self, T* dst) {                                            \
    need(#T "_freeCopyTo", {{self, 1, "self", #T "*"}, {dst, 2, "dst", #T "*"}});               \
    if (self != dst) copy_into(dst, self, #T "_freeCopyTo");                                    \
    release(self);                                                                              \
  }

#define KFL_DEFINE_CPU(T, S, real, dtype) \
  KFL_DEFINE_TENSOR_API(T, real, )        \
  KFL_DEFINE_EXPAND_API(T, )              \
  KFL_DEFINE_MEMORY_API(T, S, real, dtype, false, void, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU)
// TH's desc: "torch.FloatTensor of size 2x3", cut to the buffer with "..."
#define KFL_DEFINE_DESC(T, S, real, dtype)                                                       \
  THDescBuff T##_desc(const T* tensor) {                                                         \
    need(#T "_desc", {{tensor, 1, "tensor", #T "*"}});                                           \
    std::string text = std::string("torch.") + (#T + 2) + " of size ";                           \
    const std::vector<int64_t> shape = sizes(tensor);                                            \
    for (size_t d = 0; d < shape.size(); ++d) text += (d ? "x" : "") + std::to_string(shape[d]); \
    THDescBuff buf;                                                                              \
    if (text.size() >= TH_DESC_BUFF_LEN) text = text.substr(0, TH_DESC_BUFF_LEN - 4) + "...";    \
    std::snprintf(buf.str, TH_DESC_BUFF_LEN, "%s", text.c_str());                                \
    return buf;                                                                                  \
  }
TH_FORALL_CPU_TENSORS(KFL_DEFINE_DESC)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA(T, S, real, dtype)    \
  KFL_DEFINE_TENSOR_API(T, real, THCState*, ) \
  KFL_DEFINE_EXPAND_API(T, THCState*, )       \
  KFL_DEFINE_MEMORY_API(T, S, real, dtype, true, THCState*, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA)
#endif

}  // extern "C"
