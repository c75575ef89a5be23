/* TH/TH.h: the CPU tensor API of 2017-era torch.utils.ffi extensions (C),
 * over the torch tensors an extension's functions are called with.
 *
 * THFloatTensor, THDoubleTensor, ... are handles to those tensors: a
 * resize, fill or zero through them is seen by the caller in Python. The
 * element type of each handle is TH's `real`: float for THFloatTensor,
 * int64_t (`long` on Linux) for THLongTensor, THHalf for THHalfTensor.
 * Implemented by the runtime library every extension links
 * (kernforge_legacy/runtime/, one file per TH family) on torch's stable C ABI.
 *
 * THError and THArgCheck raise a Python RuntimeError with the message, file
 * and line; C sources are built with -fexceptions for that. */
#ifndef KERNFORGE_LEGACY_TH_H
#define KERNFORGE_LEGACY_TH_H

#include <stddef.h>
#include <stdint.h>
/* what TH/THGeneral.h included, which 2017 code used without including it
 * (floor, memset, FLT_MAX, printf, ...) */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
#define TH_API extern "C"
#else
#define TH_API extern
#endif
#define TH_INDEX_BASE 0
#define THInf DBL_MAX
#define THMin(X, Y) ((X) < (Y) ? (X) : (Y))
#define THMax(X, Y) ((X) > (Y) ? (X) : (Y))
#ifndef M_PI /* TH's: math.h leaves it out under a strict -std=c99 */
#define M_PI 3.14159265358979323846
#endif

/* TH's token pasting, for code written once for many types (TH's generic
 * files: see THGenerateAllTypes.h). */
#define TH_CONCAT_STRING_2(x, y) TH_CONCAT_STRING_2_EXPAND(x, y)
#define TH_CONCAT_STRING_2_EXPAND(x, y) #x #y
#define TH_CONCAT_STRING_3(x, y, z) TH_CONCAT_STRING_3_EXPAND(x, y, z)
#define TH_CONCAT_STRING_3_EXPAND(x, y, z) #x #y #z
#define TH_CONCAT_STRING_4(x, y, z, w) TH_CONCAT_STRING_4_EXPAND(x, y, z, w)
#define TH_CONCAT_STRING_4_EXPAND(x, y, z, w) #x #y #z #w
#define TH_CONCAT_2(x, y) TH_CONCAT_2_EXPAND(x, y)
#define TH_CONCAT_2_EXPAND(x, y) x##y
#define TH_CONCAT_3(x, y, z) TH_CONCAT_3_EXPAND(x, y, z)
#define TH_CONCAT_3_EXPAND(x, y, z) x##y##z
#define TH_CONCAT_4(x, y, z, w) TH_CONCAT_4_EXPAND(x, y, z, w)
#define TH_CONCAT_4_EXPAND(x, y, z, w) x##y##z##w
/* In a generic file, the names of the type being generated (Real: Float,
 * Double, Byte, ...): THTensor is THFloatTensor, THTensor_(add)
 * THFloatTensor_add, THStorage and THStorage_(data) likewise; THBlas_(gemm)
 * THFloatBlas_gemm. Spelled as TH's headers spelled them, token for token,
 * so that extension code that defines them again in TH's words (generic
 * .cu files did) redefines them without a warning. */
// clang-format off
#define THTensor TH_CONCAT_3(TH,Real,Tensor)
#define THTensor_(NAME) TH_CONCAT_4(TH,Real,Tensor_,NAME)
#define THStorage TH_CONCAT_3(TH,Real,Storage)
#define THStorage_(NAME) TH_CONCAT_4(TH,Real,Storage_,NAME)
#define THBlas_(NAME) TH_CONCAT_4(TH,Real,Blas_,NAME)
// clang-format on

#ifdef __cplusplus
extern "C" {
#endif

/* IEEE half and bfloat16 values, as TH stored them: the raw bits. */
typedef struct {
  uint16_t x;
} THHalf;
typedef struct {
  uint16_t x;
} THBFloat16;

float TH_half2float(THHalf value);
THHalf TH_float2half(float value);
float TH_bfloat162float(THBFloat16 value);
THBFloat16 TH_float2bfloat16(float value);

#if defined(__GNUC__)
#define KFL_NORETURN __attribute__((noreturn))
#define KFL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KFL_NORETURN
#define KFL_PRINTF(fmt, args)
#endif

KFL_NORETURN void kfl_th_error(const char* file, int line, const char* fmt, ...) KFL_PRINTF(3, 4);
void kfl_th_arg_check(const char* file, int line, int condition, int arg, const char* fmt, ...)
    KFL_PRINTF(5, 6);

/* For TH's loops (THTensorApply.h, THTensorDimApply.h): the first element
 * of any tensor handle, and the position arithmetic over a counter of
 * indices, one per dimension (skip: a dimension left out, or -1). */
void* kfl_th_data(const void* tensor);
static inline int64_t kfl_th_offset(const int64_t* stride, const int64_t* counter, int ndim,
                                    int skip) {
  int64_t offset = 0;
  int d;
  for (d = 0; d < ndim; d++)
    if (d != skip) offset += counter[d] * stride[d];
  return offset;
}
/* counter := 0; 1 (nothing to visit) when a size outside skip is 0 */
static inline int kfl_th_first(const int64_t* size, int64_t* counter, int ndim, int skip) {
  int d, empty = 0;
  for (d = 0; d < ndim; d++) {
    counter[d] = 0;
    if (d != skip && size[d] == 0) empty = 1;
  }
  return empty;
}
/* the next position, the last dimension fastest; 1 when past the last one */
static inline int kfl_th_next(const int64_t* size, int64_t* counter, int ndim, int skip) {
  int d;
  for (d = ndim - 1; d >= 0; d--) {
    if (d == skip) continue;
    if (++counter[d] < size[d]) return 0;
    counter[d] = 0;
  }
  return 1;
}
#define kfl_th_numel(TENSOR) ((TENSOR)->kfl_numel)
static inline int kfl_th_same_sizes_except(const int64_t* a, const int64_t* b, int ndim, int skip) {
  int d;
  for (d = 0; d < ndim; d++)
    if (d != skip && a[d] != b[d]) return 0;
  return 1;
}

/* TH's heap: malloc, realloc and free that raise (as THError) when memory
 * runs out; a size of 0 gives NULL. THLog1p is log1p. */
void* THAlloc(ptrdiff_t size);
void* THRealloc(void* ptr, ptrdiff_t size);
void THFree(void* ptr);
double THLog1p(const double x);

/* How many handles TH code holds in this extension: those it made (_new*,
 * _storage) and not yet freed, and arguments it retained and not yet freed.
 * A diagnostic for leaks: 0 between calls in code that frees what it makes. */
long kfl_live_handles(void);

/* TH's functions behind its macros, for code that called them by name, and
 * its hooks: _THError(file, line, fmt, ...), _THArgCheck(file, line, cond,
 * arg, fmt, ...) and _THAssertionFailed(file, line, exp, fmt, ...) raise as
 * THError, THArgCheck and THAssertMsg do. THSetErrorHandler (this thread) and
 * THSetDefaultErrorHandler (every thread without one) set a function called
 * with each error's message before it is raised, THSetArgErrorHandler and
 * THSetDefaultArgErrorHandler one for THArgCheck's (argument number,
 * message); NULL removes it. The error is raised after the handler returns.
 * THSetNumThreads and THGetNumThreads are torch's intra-op threads,
 * THGetNumCores the machine's; THSetGCHandler, THHeapUpdate and
 * THInferNumThreads are kept for the code that calls them and do nothing. */
typedef void (*THErrorHandlerFunction)(const char* msg, void* data);
typedef void (*THArgErrorHandlerFunction)(int argNumber, const char* msg, void* data);
KFL_NORETURN void _THError(const char* file, const int line, const char* fmt, ...) KFL_PRINTF(3, 4);
void _THArgCheck(const char* file, int line, int condition, int argNumber, const char* fmt, ...)
    KFL_PRINTF(5, 6);
KFL_NORETURN void _THAssertionFailed(const char* file, const int line, const char* exp,
                                     const char* fmt, ...) KFL_PRINTF(4, 5);
void THSetErrorHandler(THErrorHandlerFunction new_handler, void* data);
void THSetDefaultErrorHandler(THErrorHandlerFunction new_handler, void* data);
void THSetArgErrorHandler(THArgErrorHandlerFunction new_handler, void* data);
void THSetDefaultArgErrorHandler(THArgErrorHandlerFunction new_handler, void* data);
void THSetGCHandler(void (*torchGCHandlerFunction)(void* data), void* data);
void THHeapUpdate(ptrdiff_t size);
void THSetNumThreads(int num_threads);
int THGetNumThreads(void);
int THGetNumCores(void);
void THInferNumThreads(void);

/* THError("bad value %d", v) and THArgCheck(cond, arg_number, "message"). */
#define THError(...) kfl_th_error(__FILE__, __LINE__, __VA_ARGS__)
#define THArgCheck(...) kfl_th_arg_check(__FILE__, __LINE__, __VA_ARGS__)
/* THArgCheckWithCleanup(cond, THCleanup(THFree(p);), arg_number, "message"):
 * the cleanup runs before the raise when cond is false. */
#define THCleanup(...) __VA_ARGS__
#define THArgCheckWithCleanup(condition, cleanup, ...)              \
  do {                                                              \
    if (!(condition)) {                                             \
      cleanup kfl_th_arg_check(__FILE__, __LINE__, 0, __VA_ARGS__); \
    }                                                               \
  } while (0)
/* THAssert(cond) and THAssertMsg(cond, "message %d", v): raise (as THError),
 * naming the condition, when it is false. */
KFL_NORETURN void kfl_th_assertion_failed(const char* file, int line, const char* condition,
                                          const char* fmt, ...) KFL_PRINTF(4, 5);
#define THAssert(exp)                                                        \
  do {                                                                       \
    if (!(exp)) kfl_th_assertion_failed(__FILE__, __LINE__, #exp, "%s", ""); \
  } while (0)
#define THAssertMsg(exp, ...)                                                   \
  do {                                                                          \
    if (!(exp)) kfl_th_assertion_failed(__FILE__, __LINE__, #exp, __VA_ARGS__); \
  } while (0)

/* Every tensor handle type: X(name, its storage's name, real, torch dtype);
 * the floating ones, which have TH's math, apart. */
#define TH_FORALL_CPU_INT_TENSORS(X)               \
  X(THByteTensor, THByteStorage, uint8_t, uint8)   \
  X(THCharTensor, THCharStorage, int8_t, int8)     \
  X(THShortTensor, THShortStorage, int16_t, int16) \
  X(THIntTensor, THIntStorage, int32_t, int32)     \
  X(THLongTensor, THLongStorage, int64_t, int64)
#define TH_FORALL_CPU_FLOAT_TENSORS(X)                \
  X(THFloatTensor, THFloatStorage, float, float32)    \
  X(THDoubleTensor, THDoubleStorage, double, float64) \
  X(THHalfTensor, THHalfStorage, THHalf, float16)     \
  X(THBFloat16Tensor, THBFloat16Storage, THBFloat16, bfloat16)
#define TH_FORALL_CPU_TENSORS(X) TH_FORALL_CPU_INT_TENSORS(X) TH_FORALL_CPU_FLOAT_TENSORS(X)
/* The same types by TH's short name, for the names of the cross-type copies
 * (THFloatTensor_copyDouble): X(Name, handle type, the other arguments). */
#define TH_FORALL_CPU_NAMES(X, ...)      \
  X(Byte, THByteTensor, __VA_ARGS__)     \
  X(Char, THCharTensor, __VA_ARGS__)     \
  X(Short, THShortTensor, __VA_ARGS__)   \
  X(Int, THIntTensor, __VA_ARGS__)       \
  X(Long, THLongTensor, __VA_ARGS__)     \
  X(Float, THFloatTensor, __VA_ARGS__)   \
  X(Double, THDoubleTensor, __VA_ARGS__) \
  X(Half, THHalfTensor, __VA_ARGS__)     \
  X(BFloat16, THBFloat16Tensor, __VA_ARGS__)

/* TH's sizes and strides came in a THLongStorage (declared with the tensor
 * types below): THFloatTensor_resize(t, size, NULL). */
struct THLongStorage;

/* A shape written out for a message, "[2 x 3 x 4]", in a buffer returned by
 * value (THFloatTensor_sizeDesc(t).str); a shape too long for it ends in
 * "...]". THNN's shape checks, which extensions copied, print these. */
#define TH_DESC_BUFF_LEN 64
typedef struct {
  char str[TH_DESC_BUFF_LEN];
} THDescBuff;
TH_API THDescBuff THLongStorage_sizeDesc(const struct THLongStorage* size);
/* The same of a C array of ndim sizes */
TH_API THDescBuff _THSizeDesc(const int64_t* size, const int64_t ndim);

/* A tensor handle holds the torch tensor (kfl_tensor: not for extension
 * code) and the fields 2017 code read directly, in TH's order: t->size[d]
 * and t->stride[d] (t->nDimension of each: as in TH, the sizes before the
 * first zero, so 0 for an empty torch.FloatTensor()), t->storage (its fields
 * t->storage->data, the first element of the whole storage, and
 * t->storage->size, in elements) and t->storageOffset, so that TH's
 * `t->storage->data + t->storageOffset` is the tensor's first element.
 * Every function here that changes a tensor's shape brings them up to date.
 * Read them; change the tensor through the functions. S is the type's
 * storage (TH_TENSOR_MEMORY_API). */
#define TH_TENSOR_FIELDS(S) \
  void* kfl_tensor;         \
  int64_t* size;            \
  int64_t* stride;          \
  int nDimension;           \
  struct S* storage;        \
  ptrdiff_t storageOffset;  \
  int64_t kfl_numel;

/* The API of one handle type T (storage type S), each function taking the
 * variadic arguments first (nothing for TH, the THCState for THC). */
#define TH_TENSOR_API(T, S, real, ...)                                                 \
  typedef struct T {                                                                   \
    TH_TENSOR_FIELDS(S)                                                                \
  } T;                                                                                 \
  real* T##_data(__VA_ARGS__ const T* self);                                           \
  ptrdiff_t T##_nElement(__VA_ARGS__ const T* self);                                   \
  int T##_nDimension(__VA_ARGS__ const T* self);                                       \
  int T##__nDimension(__VA_ARGS__ const T* self);                                      \
  int64_t T##_size(__VA_ARGS__ const T* self, int dim);                                \
  int64_t T##_stride(__VA_ARGS__ const T* self, int dim);                              \
  int T##_isContiguous(__VA_ARGS__ const T* self);                                     \
  int T##_isSameSizeAs(__VA_ARGS__ const T* self, const T* other);                     \
  THDescBuff T##_sizeDesc(__VA_ARGS__ const T* self);                                  \
  void T##_resize1d(__VA_ARGS__ T* self, int64_t size0);                               \
  void T##_resize2d(__VA_ARGS__ T* self, int64_t size0, int64_t size1);                \
  void T##_resize3d(__VA_ARGS__ T* self, int64_t size0, int64_t size1, int64_t size2); \
  void T##_resize4d(__VA_ARGS__ T* self, int64_t size0, int64_t size1, int64_t size2,  \
                    int64_t size3);                                                    \
  void T##_resize5d(__VA_ARGS__ T* self, int64_t size0, int64_t size1, int64_t size2,  \
                    int64_t size3, int64_t size4);                                     \
  void T##_resizeAs(__VA_ARGS__ T* self, const T* src);                                \
  void T##_zero(__VA_ARGS__ T* self);                                                  \
  void T##_fill(__VA_ARGS__ T* self, real value);

/* Tensors made and released in C, views, copies and storages, of one handle
 * type T with storage type S. TH's reference counting: what a _new* function
 * returns is the caller's, to _free; _retain takes one more reference. A
 * storage from T_storage is borrowed from the tensor (NULL when it has none);
 * _retain it to keep it past the extension function's return. Its fields
 * s->data and s->size (elements) are those of TH's storages. NONE is the
 * parameter list of a function with no other parameter. T_get1d ... T_get4d
 * read one element and T_set1d ... T_set4d write one, at indices checked
 * against the sizes (the tensor must have that many dimensions); on a CUDA
 * tensor each is a copy to or from the host, waiting for the current stream.
 * Views of a storage from an offset: _newWithStorage(storage, offset, size,
 * stride) and _newWithStorage1d ... 4d (size0, stride0, ...), and
 * _setStorage, _setStorage1d ... 4d and _setStorageNd (n, size[], stride[]),
 * which make self that view (a
 * stride below 0: contiguous over the dimensions after it; the view must lie
 * inside the storage; storage NULL: a new tensor).
 * Shapes as TH took them, in a THLongStorage: _newWithSize(size, stride),
 * _resize(self, size, stride) (stride NULL: contiguous; with strides, self
 * takes a new storage of that layout), _newView(src, size) (a view, one
 * size may be -1), _newSizeOf / _newStrideOf (new storages, the caller's to
 * free); _resizeNd(self, n, size, stride) the same from arrays. Storages made
 * in C: S_new, S_newWithSize(n) and S_newWithSize1(v0) ... 4 (the values),
 * on the current device for THC; S_get and S_set of one element.
 * More views, self := (src's, or a new tensor's): _squeeze (every dimension of
 * size 1 dropped; one of size 1 is kept where all are), _unfold(dim, size,
 * step) (the slices of `size` elements `step` apart along dim, as a new last
 * dimension), _expand(size) (dimensions of size 1 repeated without a copy,
 * -1 keeping one). _isSize: the sizes are those of dims; _isSetTo: self views
 * the same elements of the same storage as src, with the same layout. */
#define TH_TENSOR_MEMORY_API(T, S, real, NONE, ...)                                                \
  typedef struct S {                                                                               \
    void* kfl_tensor;                                                                              \
    real* data;                                                                                    \
    ptrdiff_t size;                                                                                \
    const void* kfl_owner;                                                                         \
  } S;                                                                                             \
  T* T##_new(NONE);                                                                                \
  T* T##_newWithSize1d(__VA_ARGS__ int64_t size0);                                                 \
  T* T##_newWithSize2d(__VA_ARGS__ int64_t size0, int64_t size1);                                  \
  T* T##_newWithSize3d(__VA_ARGS__ int64_t size0, int64_t size1, int64_t size2);                   \
  T* T##_newWithSize4d(__VA_ARGS__ int64_t size0, int64_t size1, int64_t size2, int64_t size3);    \
  T* T##_newWithTensor(__VA_ARGS__ T* src);                                                        \
  T* T##_newContiguous(__VA_ARGS__ T* src);                                                        \
  T* T##_newClone(__VA_ARGS__ T* src);                                                             \
  T* T##_newSelect(__VA_ARGS__ T* src, int dim, int64_t index);                                    \
  T* T##_newNarrow(__VA_ARGS__ T* src, int dim, int64_t first, int64_t size);                      \
  T* T##_newTranspose(__VA_ARGS__ T* src, int dim1, int dim2);                                     \
  T* T##_newWithSize(__VA_ARGS__ struct THLongStorage* size, struct THLongStorage* stride);        \
  T* T##_newView(__VA_ARGS__ T* src, struct THLongStorage* size);                                  \
  T* T##_newWithStorage(__VA_ARGS__ S* storage, ptrdiff_t storageOffset,                           \
                        struct THLongStorage* size, struct THLongStorage* stride);                 \
  T* T##_newWithStorage1d(__VA_ARGS__ S* storage, ptrdiff_t storageOffset, int64_t size0,          \
                          int64_t stride0);                                                        \
  T* T##_newWithStorage2d(__VA_ARGS__ S* storage, ptrdiff_t storageOffset, int64_t size0,          \
                          int64_t stride0, int64_t size1, int64_t stride1);                        \
  T* T##_newWithStorage3d(__VA_ARGS__ S* storage, ptrdiff_t storageOffset, int64_t size0,          \
                          int64_t stride0, int64_t size1, int64_t stride1, int64_t size2,          \
                          int64_t stride2);                                                        \
  T* T##_newWithStorage4d(__VA_ARGS__ S* storage, ptrdiff_t storageOffset, int64_t size0,          \
                          int64_t stride0, int64_t size1, int64_t stride1, int64_t size2,          \
                          int64_t stride2, int64_t size3, int64_t stride3);                        \
  void T##_setStorage(__VA_ARGS__ T* self, S* storage, ptrdiff_t storageOffset,                    \
                      struct THLongStorage* size, struct THLongStorage* stride);                   \
  void T##_setStorage1d(__VA_ARGS__ T* self, S* storage, ptrdiff_t storageOffset, int64_t size0,   \
                        int64_t stride0);                                                          \
  void T##_setStorage2d(__VA_ARGS__ T* self, S* storage, ptrdiff_t storageOffset, int64_t size0,   \
                        int64_t stride0, int64_t size1, int64_t stride1);                          \
  void T##_setStorage3d(__VA_ARGS__ T* self, S* storage, ptrdiff_t storageOffset, int64_t size0,   \
                        int64_t stride0, int64_t size1, int64_t stride1, int64_t size2,            \
                        int64_t stride2);                                                          \
  void T##_setStorage4d(__VA_ARGS__ T* self, S* storage, ptrdiff_t storageOffset, int64_t size0,   \
                        int64_t stride0, int64_t size1, int64_t stride1, int64_t size2,            \
                        int64_t stride2, int64_t size3, int64_t stride3);                          \
  void T##_setStorageNd(__VA_ARGS__ T* self, S* storage, ptrdiff_t storageOffset, int nDimension,  \
                        int64_t* size, int64_t* stride);                                           \
  void T##_squeeze(__VA_ARGS__ T* self, T* src);                                                   \
  void T##_unfold(__VA_ARGS__ T* self, T* src, int dimension, int64_t size, int64_t step);         \
  T* T##_newUnfold(__VA_ARGS__ T* src, int dimension, int64_t size, int64_t step);                 \
  void T##_expand(__VA_ARGS__ T* r, T* tensor, struct THLongStorage* size);                        \
  T* T##_newExpand(__VA_ARGS__ T* tensor, struct THLongStorage* size);                             \
  void T##_expandNd(__VA_ARGS__ T** rets, T** ops, int count);                                     \
  void T##_freeCopyTo(__VA_ARGS__ T* self, T* dst);                                                \
  int T##_isSize(__VA_ARGS__ const T* self, const struct THLongStorage* dims);                     \
  int T##_isSetTo(__VA_ARGS__ const T* self, const T* src);                                        \
  struct THLongStorage* T##_newSizeOf(__VA_ARGS__ T* self);                                        \
  struct THLongStorage* T##_newStrideOf(__VA_ARGS__ T* self);                                      \
  void T##_resize(__VA_ARGS__ T* self, struct THLongStorage* size, struct THLongStorage* stride);  \
  void T##_resizeNd(__VA_ARGS__ T* self, int nDimension, int64_t* size, int64_t* stride);          \
  void T##_retain(__VA_ARGS__ T* self);                                                            \
  void T##_free(__VA_ARGS__ T* self);                                                              \
  void T##_set(__VA_ARGS__ T* self, T* src);                                                       \
  void T##_select(__VA_ARGS__ T* self, T* src, int dim, int64_t index);                            \
  void T##_narrow(__VA_ARGS__ T* self, T* src, int dim, int64_t first, int64_t size);              \
  void T##_transpose(__VA_ARGS__ T* self, T* src, int dim1, int dim2);                             \
  void T##_squeeze1d(__VA_ARGS__ T* self, T* src, int dim);                                        \
  void T##_unsqueeze1d(__VA_ARGS__ T* self, T* src, int dim);                                      \
  void T##_copy(__VA_ARGS__ T* self, T* src);                                                      \
  S* T##_storage(__VA_ARGS__ const T* self);                                                       \
  ptrdiff_t T##_storageOffset(__VA_ARGS__ const T* self);                                          \
  real T##_get1d(__VA_ARGS__ const T* self, int64_t x0);                                           \
  real T##_get2d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1);                               \
  real T##_get3d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1, int64_t x2);                   \
  real T##_get4d(__VA_ARGS__ const T* self, int64_t x0, int64_t x1, int64_t x2, int64_t x3);       \
  void T##_set1d(__VA_ARGS__ T* self, int64_t x0, real value);                                     \
  void T##_set2d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, real value);                         \
  void T##_set3d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, int64_t x2, real value);             \
  void T##_set4d(__VA_ARGS__ T* self, int64_t x0, int64_t x1, int64_t x2, int64_t x3, real value); \
  real* S##_data(__VA_ARGS__ const S* self);                                                       \
  ptrdiff_t S##_size(__VA_ARGS__ const S* self);                                                   \
  void S##_fill(__VA_ARGS__ S* self, real value);                                                  \
  S* S##_new(NONE);                                                                                \
  S* S##_newWithSize(__VA_ARGS__ ptrdiff_t size);                                                  \
  S* S##_newWithSize1(__VA_ARGS__ real v0);                                                        \
  S* S##_newWithSize2(__VA_ARGS__ real v0, real v1);                                               \
  S* S##_newWithSize3(__VA_ARGS__ real v0, real v1, real v2);                                      \
  S* S##_newWithSize4(__VA_ARGS__ real v0, real v1, real v2, real v3);                             \
  real S##_get(__VA_ARGS__ const S* self, ptrdiff_t index);                                        \
  void S##_set(__VA_ARGS__ S* self, ptrdiff_t index, real value);                                  \
  void S##_retain(__VA_ARGS__ S* self);                                                            \
  void S##_free(__VA_ARGS__ S* self);

/* TH's math of every handle type T (accreal, what sums return: int64_t for
 * the integer types, double for the floating ones). r is resized to the
 * result's shape, as TH did; r may be one of the inputs. Integer division
 * truncates, as C's. range(r, xmin, xmax, step) is xmin, xmin + step, ... up
 * to xmax included, arange the same with xmax left out, each value
 * computed in accreal. */
#define TH_TENSOR_ARITH_API(T, real, accreal, ...)                               \
  void T##_add(__VA_ARGS__ T* r, T* t, real value);                              \
  void T##_mul(__VA_ARGS__ T* r, T* t, real value);                              \
  void T##_div(__VA_ARGS__ T* r, T* t, real value);                              \
  void T##_cadd(__VA_ARGS__ T* r, T* t, real value, T* src);                     \
  void T##_csub(__VA_ARGS__ T* r, T* t, real value, T* src);                     \
  void T##_cmul(__VA_ARGS__ T* r, T* t, T* src);                                 \
  void T##_cdiv(__VA_ARGS__ T* r, T* t, T* src);                                 \
  void T##_abs(__VA_ARGS__ T* r, T* t);                                          \
  void T##_clamp(__VA_ARGS__ T* r, T* t, real min_value, real max_value);        \
  accreal T##_sumall(__VA_ARGS__ T* t);                                          \
  accreal T##_prodall(__VA_ARGS__ T* t);                                         \
  real T##_maxall(__VA_ARGS__ T* t);                                             \
  real T##_minall(__VA_ARGS__ T* t);                                             \
  void T##_sub(__VA_ARGS__ T* r, T* t, real value);                              \
  void T##_neg(__VA_ARGS__ T* r, T* t);                                          \
  void T##_sign(__VA_ARGS__ T* r, T* t);                                         \
  void T##_fmod(__VA_ARGS__ T* r, T* t, real value);                             \
  void T##_remainder(__VA_ARGS__ T* r, T* t, real value);                        \
  void T##_cfmod(__VA_ARGS__ T* r, T* t, T* src);                                \
  void T##_cremainder(__VA_ARGS__ T* r, T* t, T* src);                           \
  void T##_cmax(__VA_ARGS__ T* r, T* t, T* src);                                 \
  void T##_cmin(__VA_ARGS__ T* r, T* t, T* src);                                 \
  void T##_cmaxValue(__VA_ARGS__ T* r, T* t, real value);                        \
  void T##_cminValue(__VA_ARGS__ T* r, T* t, real value);                        \
  void T##_sum(__VA_ARGS__ T* r, T* t, int dimension, int keepdim);              \
  void T##_prod(__VA_ARGS__ T* r, T* t, int dimension, int keepdim);             \
  void T##_cumsum(__VA_ARGS__ T* r, T* t, int dimension);                        \
  void T##_cumprod(__VA_ARGS__ T* r, T* t, int dimension);                       \
  ptrdiff_t T##_numel(__VA_ARGS__ T* t);                                         \
  void T##_zeros(__VA_ARGS__ T* r, struct THLongStorage* size);                  \
  void T##_ones(__VA_ARGS__ T* r, struct THLongStorage* size);                   \
  void T##_zerosLike(__VA_ARGS__ T* r, T* input);                                \
  void T##_onesLike(__VA_ARGS__ T* r, T* input);                                 \
  void T##_eye(__VA_ARGS__ T* r, int64_t n, int64_t m);                          \
  void T##_diag(__VA_ARGS__ T* r, T* t, int k);                                  \
  void T##_tril(__VA_ARGS__ T* r, T* t, int64_t k);                              \
  void T##_triu(__VA_ARGS__ T* r, T* t, int64_t k);                              \
  accreal T##_trace(__VA_ARGS__ T* t);                                           \
  int T##_equal(__VA_ARGS__ T* ta, T* tb);                                       \
  void T##_cat(__VA_ARGS__ T* r, T* ta, T* tb, int dimension);                   \
  void T##_catArray(__VA_ARGS__ T* r, T** inputs, int numInputs, int dimension); \
  void T##_range(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step);    \
  void T##_arange(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step);   \
  void T##_cpow(__VA_ARGS__ T* r, T* t, T* src);                                 \
  void T##_addcmul(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2);        \
  void T##_addcdiv(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2);
/* and of the floating types only: round as C's round (halves away from
 * zero), cinv 1 / t, tpow value ^ t, biased (std, var) divides by n; the
 * unary functions of TH_FLOAT_UNARY_NAMES are torch's of the same name.
 * norm(r, t, p, dim, keepdim) is the p-norm of each slice along dim (p = 0
 * counts the nonzero elements, p = INFINITY takes the largest |t|), normall
 * of the whole tensor, dist(a, b, p) the p-norm of a - b (the same number of
 * elements, each in its order); renorm(r, t, p, dim, maxnorm) scales each
 * slice t[..., i, ...] along dim whose p-norm exceeds maxnorm by
 * maxnorm / (norm + 1e-7), as TH did (t of 2 dimensions or more, p > 0);
 * linspace(r, a, b, n) is n values from a to b, logspace their powers of 10. */
#define TH_FLOAT_UNARY_NAMES(X, ...) \
  X(sigmoid, __VA_ARGS__)            \
  X(log, __VA_ARGS__)                \
  X(log1p, __VA_ARGS__)              \
  X(lgamma, __VA_ARGS__)             \
  X(cos, __VA_ARGS__)                \
  X(acos, __VA_ARGS__)               \
  X(cosh, __VA_ARGS__)               \
  X(sin, __VA_ARGS__)                \
  X(asin, __VA_ARGS__)               \
  X(sinh, __VA_ARGS__)               \
  X(tan, __VA_ARGS__)                \
  X(atan, __VA_ARGS__)               \
  X(tanh, __VA_ARGS__)               \
  X(erf, __VA_ARGS__)                \
  X(erfinv, __VA_ARGS__)             \
  X(rsqrt, __VA_ARGS__)              \
  X(ceil, __VA_ARGS__)               \
  X(floor, __VA_ARGS__)              \
  X(trunc, __VA_ARGS__)              \
  X(frac, __VA_ARGS__)
#define TH_UNARY(name, T, ...) void T##_##name(__VA_ARGS__ T* r, T* t);
#define TH_TENSOR_FLOAT_MATH_API(T, real, ...)                                           \
  void T##_exp(__VA_ARGS__ T* r, T* t);                                                  \
  void T##_sqrt(__VA_ARGS__ T* r, T* t);                                                 \
  double T##_dot(__VA_ARGS__ T* t, T* src);                                              \
  void T##_addmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat1, T* mat2);       \
  void T##_addmv(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat, T* vec);         \
  TH_FLOAT_UNARY_NAMES(TH_UNARY, T, __VA_ARGS__)                                         \
  void T##_round(__VA_ARGS__ T* r, T* t);                                                \
  void T##_cinv(__VA_ARGS__ T* r, T* t);                                                 \
  void T##_atan2(__VA_ARGS__ T* r, T* tx, T* ty);                                        \
  void T##_pow(__VA_ARGS__ T* r, T* t, real value);                                      \
  void T##_tpow(__VA_ARGS__ T* r, real value, T* t);                                     \
  void T##_lerp(__VA_ARGS__ T* r, T* a, T* b, real weight);                              \
  void T##_mean(__VA_ARGS__ T* r, T* t, int dimension, int keepdim);                     \
  void T##_std(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim);          \
  void T##_var(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim);          \
  double T##_meanall(__VA_ARGS__ T* t);                                                  \
  double T##_varall(__VA_ARGS__ T* t, int biased);                                       \
  double T##_stdall(__VA_ARGS__ T* t, int biased);                                       \
  void T##_addr(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* vec1, T* vec2);        \
  void T##_addbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2);  \
  void T##_baddbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2); \
  void T##_norm(__VA_ARGS__ T* r, T* t, real value, int dimension, int keepdim);         \
  double T##_normall(__VA_ARGS__ T* t, real value);                                      \
  void T##_renorm(__VA_ARGS__ T* r, T* t, real value, int dimension, real maxnorm);      \
  double T##_dist(__VA_ARGS__ T* a, T* b, real value);                                   \
  void T##_linspace(__VA_ARGS__ T* r, real a, real b, int64_t n);                        \
  void T##_logspace(__VA_ARGS__ T* r, real a, real b, int64_t n);                        \
  void T##_histc(__VA_ARGS__ T* hist, T* tensor, int64_t nbins, real minvalue, real maxvalue);

/* Of every type T as well: the comparisons of TH_COMPARISON_NAMES written as
 * 1 or 0 into a tensor of T's own type (ltValueT, ltTensorT, ...); the
 * bitwise operations (bitand, bitor, bitxor with a value, cbitand, cbitor,
 * cbitxor element by element), which TH refused for the floating types; the
 * shifts (lshift, rshift with a value, clshift, crshift element by element),
 * which for the floating types multiply or divide by powers of 2, as TH's
 * did; cross(r, a, b, dimension), the cross product along a dimension of
 * size 3 (dimension < 0: the first of size 3). histc (floating types)
 * counts t's values in nbins equal bins over [minvalue, maxvalue], or over
 * [min, max] of t when the two are equal. */
#define TH_TENSOR_LOGICAL_API(T, real, ...)                  \
  TH_COMPARISON_NAMES(TH_COMPARISON_T, T, real, __VA_ARGS__) \
  void T##_bitand(__VA_ARGS__ T* r, T* t, real value);       \
  void T##_bitor(__VA_ARGS__ T* r, T* t, real value);        \
  void T##_bitxor(__VA_ARGS__ T* r, T* t, real value);       \
  void T##_cbitand(__VA_ARGS__ T* r, T* t, T* src);          \
  void T##_cbitor(__VA_ARGS__ T* r, T* t, T* src);           \
  void T##_cbitxor(__VA_ARGS__ T* r, T* t, T* src);          \
  void T##_lshift(__VA_ARGS__ T* r, T* t, real value);       \
  void T##_rshift(__VA_ARGS__ T* r, T* t, real value);       \
  void T##_clshift(__VA_ARGS__ T* r, T* t, T* src);          \
  void T##_crshift(__VA_ARGS__ T* r, T* t, T* src);          \
  void T##_cross(__VA_ARGS__ T* r, T* a, T* b, int dimension);
#define TH_COMPARISON_T(op, T, real, ...)                    \
  void T##_##op##ValueT(__VA_ARGS__ T* r, T* t, real value); \
  void T##_##op##TensorT(__VA_ARGS__ T* r, T* a, T* b);

/* Of every type T, with its index type L (THLongTensor, THCudaLongTensor) and
 * mask type B (THByteTensor, THCudaByteTensor): TH's indices count from 0;
 * values and indices (max, min, sort, topk, kthvalue, median, mode) are
 * resized as TH did; the _Value and _Tensor comparisons write 1 or 0 into a
 * byte tensor. sort's descendingOrder and topk's dir (1: the k largest) and
 * sorted are flags; kthvalue's k counts from 1 (the smallest); median and
 * medianall take the lower of the two middle values; nonzero writes the
 * indices of the nonzero elements as rows of a [n, dimensions] L;
 * maskedSelect the elements where mask is 1, in order, as a 1-D r. */
#define TH_TENSOR_INDEX_API(T, L, B, real, ...)                                           \
  void T##_max(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim);      \
  void T##_min(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim);      \
  void T##_indexSelect(__VA_ARGS__ T* r, T* src, int dim, L* index);                      \
  void T##_indexCopy(__VA_ARGS__ T* t, int dim, L* index, T* src);                        \
  void T##_indexAdd(__VA_ARGS__ T* t, int dim, L* index, T* src);                         \
  void T##_indexFill(__VA_ARGS__ T* t, int dim, L* index, real value);                    \
  void T##_gather(__VA_ARGS__ T* r, T* src, int dim, L* index);                           \
  void T##_scatter(__VA_ARGS__ T* t, int dim, L* index, T* src);                          \
  void T##_scatterAdd(__VA_ARGS__ T* t, int dim, L* index, T* src);                       \
  void T##_scatterFill(__VA_ARGS__ T* t, int dim, L* index, real value);                  \
  void T##_maskedFill(__VA_ARGS__ T* t, B* mask, real value);                             \
  void T##_maskedCopy(__VA_ARGS__ T* t, B* mask, T* src);                                 \
  void T##_maskedSelect(__VA_ARGS__ T* r, T* src, B* mask);                               \
  void T##_nonzero(__VA_ARGS__ L* subscript, T* t);                                       \
  void T##_sort(__VA_ARGS__ T* rt, L* ri, T* t, int dimension, int descendingOrder);      \
  void T##_topk(__VA_ARGS__ T* rt, L* ri, T* t, int64_t k, int dim, int dir, int sorted); \
  void T##_kthvalue(__VA_ARGS__ T* values, L* indices, T* t, int64_t k, int dimension,    \
                    int keepdim);                                                         \
  void T##_median(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim);   \
  void T##_mode(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim);     \
  real T##_medianall(__VA_ARGS__ T* t);                                                   \
  TH_COMPARISON_NAMES(TH_COMPARISON, T, B, real, __VA_ARGS__)
#define TH_COMPARISON_NAMES(X, ...) \
  X(lt, __VA_ARGS__)                \
  X(le, __VA_ARGS__)                \
  X(gt, __VA_ARGS__)                \
  X(ge, __VA_ARGS__)                \
  X(ne, __VA_ARGS__)                \
  X(eq, __VA_ARGS__)
#define TH_COMPARISON(op, T, B, real, ...)                  \
  void T##_##op##Value(__VA_ARGS__ B* r, T* t, real value); \
  void T##_##op##Tensor(__VA_ARGS__ B* r, T* a, T* b);

#define TH_CPU_TENSOR_API(T, S, real, dtype) \
  TH_TENSOR_API(T, S, real, )                \
  TH_TENSOR_MEMORY_API(T, S, real, void, )
TH_FORALL_CPU_TENSORS(TH_CPU_TENSOR_API)
#undef TH_CPU_TENSOR_API
/* Outside a generic file, THTensor and THStorage are the float types.
 * torch 0.4.1 made TH's tensor one type for every dtype and named it
 * THTensor; code of that time wrote it for the float tensors it took
 * (torch's own ffi test: `void good_func(THTensor *tensor, ...)` calling
 * THFloatTensor_mul on it). A generic file's THTensor is its type's. */
typedef THFloatTensor THRealTensor;
typedef THFloatStorage THRealStorage;
#define TH_CPU_INT_MATH_API(T, S, real, dtype) TH_TENSOR_ARITH_API(T, real, int64_t, )
TH_FORALL_CPU_INT_TENSORS(TH_CPU_INT_MATH_API)
#undef TH_CPU_INT_MATH_API
/* TH's LAPACK (THTensorLapack.h), of float and double, on torch.linalg:
 * gesv(rb, ra, b, a) solves a x = b (rb the solution, ra a's packed LU
 * factors); trtrs(rb, ra, b, a, uplo, trans, diag) with a triangular; syev(re,
 * rv, a, jobz, uplo) a's eigenvalues ascending and (jobz "V") eigenvectors in
 * rv's columns; gesvd(ru, rs, rv, a, jobu) a = ru diag(rs) rv^T (jobu "A": all
 * of U, "S": the reduced one); getri(ra, a) a's inverse; potrf(ra, a, uplo) its
 * Cholesky factor (uplo "U": a = ra^T ra, "L": a = ra ra^T), potrs(rb, b, a,
 * uplo) solves with that factor, potri(ra, a, uplo) inverts with it; qr(rq, rr,
 * a) the reduced QR; gels(rb, ra, b, a) the least-squares solution of a x = b
 * (a of full rank; rb has max(m, n) rows, the solution in the first n, and ra
 * a's QR or LQ factors, as LAPACK left them); geev(re, rv, a, jobvr) a's
 * eigenvalues as [n, 2] (real, imaginary) and (jobvr "V") eigenvectors in
 * LAPACK's packing (a complex pair as two columns, real and imaginary part);
 * gesvd2(ru, rs, rv, ra, a, jobu) gesvd, with ra a copy of a. TH's alone:
 * geqrf(ra, rtau, a), orgqr(ra, a, tau) and ormqr(ra, a, tau, c, side, trans),
 * LAPACK's Householder QR in parts; pstrf(ra, rpiv, a, uplo, tol) Cholesky with
 * complete pivoting (1-based pivots; rank deficient is an error). TH's and
 * THC's: btrifact(ra, rpivots, rinfo, a) the LU factors of a batch [B, n, n]
 * (1-based pivots; rinfo NULL: a singular matrix is an error) and
 * btrisolve(rb, b, atf, pivots) solves with them. The outputs are resized as
 * TH did; the flags are strings whose first letter counts, NULL or another
 * letter an error. */
#define TH_TENSOR_LAPACK_API(T, ...)                                                        \
  void T##_gesv(__VA_ARGS__ T* rb, T* ra, T* b, T* a);                                      \
  void T##_trtrs(__VA_ARGS__ T* rb, T* ra, T* b, T* a, const char* uplo, const char* trans, \
                 const char* diag);                                                         \
  void T##_syev(__VA_ARGS__ T* re, T* rv, T* a, const char* jobz, const char* uplo);        \
  void T##_gesvd(__VA_ARGS__ T* ru, T* rs, T* rv, T* a, const char* jobu);                  \
  void T##_getri(__VA_ARGS__ T* ra, T* a);                                                  \
  void T##_potrf(__VA_ARGS__ T* ra, T* a, const char* uplo);                                \
  void T##_potrs(__VA_ARGS__ T* rb, T* b, T* a, const char* uplo);                          \
  void T##_potri(__VA_ARGS__ T* ra, T* a, const char* uplo);                                \
  void T##_qr(__VA_ARGS__ T* rq, T* rr, T* a);                                              \
  void T##_gels(__VA_ARGS__ T* rb, T* ra, T* b, T* a);                                      \
  void T##_geev(__VA_ARGS__ T* re, T* rv, T* a, const char* jobvr);                         \
  void T##_gesvd2(__VA_ARGS__ T* ru, T* rs, T* rv, T* ra, T* a, const char* jobu);
#define TH_TENSOR_BATCH_LU_API(T, I, ...)                           \
  void T##_btrifact(__VA_ARGS__ T* ra, I* rpivots, I* rinfo, T* a); \
  void T##_btrisolve(__VA_ARGS__ T* rb, T* b, T* atf, I* pivots);
#define TH_TENSOR_TH_LAPACK_API(T, real)                                          \
  void T##_geqrf(T* ra, T* rtau, T* a);                                           \
  void T##_orgqr(T* ra, T* a, T* tau);                                            \
  void T##_ormqr(T* ra, T* a, T* tau, T* c, const char* side, const char* trans); \
  void T##_pstrf(T* ra, THIntTensor* rpiv, T* a, const char* uplo, real tol);     \
  TH_TENSOR_BATCH_LU_API(T, THIntTensor, )
TH_TENSOR_LAPACK_API(THFloatTensor, )
TH_TENSOR_LAPACK_API(THDoubleTensor, )
TH_TENSOR_TH_LAPACK_API(THFloatTensor, float)
TH_TENSOR_TH_LAPACK_API(THDoubleTensor, double)
#define TH_CPU_FLOAT_MATH_API(T, S, real, dtype) \
  TH_TENSOR_ARITH_API(T, real, double, )         \
  TH_TENSOR_FLOAT_MATH_API(T, real, )
TH_FORALL_CPU_FLOAT_TENSORS(TH_CPU_FLOAT_MATH_API)
#undef TH_CPU_FLOAT_MATH_API
#define TH_CPU_INDEX_API(T, S, real, dtype)                  \
  TH_TENSOR_INDEX_API(T, THLongTensor, THByteTensor, real, ) \
  TH_TENSOR_LOGICAL_API(T, real, )
TH_FORALL_CPU_TENSORS(TH_CPU_INDEX_API)
#undef TH_CPU_INDEX_API

/* TH's random numbers (THRandom.h). A THGenerator is a stream of its own, a
 * 32-bit Mersenne Twister as TH's was (the same numbers for the same seed):
 * made by THGenerator_new (seeded with 5489 until seeded otherwise), freed by
 * THGenerator_free. THRandom_random gives its next 32-bit number; the others
 * draw one value from it, with TH's formulas: uniform on [a, b), normal
 * (mean, stdv), exponential (lambda), cauchy (median, sigma), logNormal with
 * that mean and standard deviation of its own, geometric i >= 1 with
 * P(i) = (1 - p) p^(i - 1), bernoulli 1 with probability p.
 * The tensor functions fill self in its element order, from gen; a NULL gen
 * draws from torch's default generator (torch.manual_seed sets it) with the
 * same distributions. random gives TH's: the generator's 32-bit numbers
 * modulo the type's largest exact value + 1 (256 for Byte, 2^24 + 1 for
 * Float). rand and randn resize r to size first. */
typedef struct THGenerator THGenerator;
THGenerator* THGenerator_new(void);
THGenerator* THGenerator_copy(THGenerator* self, THGenerator* from);
void THGenerator_free(THGenerator* gen);
int THGenerator_isValid(THGenerator* gen);
uint64_t THRandom_seed(THGenerator* gen);
void THRandom_manualSeed(THGenerator* gen, uint64_t seed);
uint64_t THRandom_initialSeed(THGenerator* gen);
uint64_t THRandom_random(THGenerator* gen);
double THRandom_uniform(THGenerator* gen, double a, double b);
double THRandom_normal(THGenerator* gen, double mean, double stdv);
double THRandom_exponential(THGenerator* gen, double lambda);
double THRandom_cauchy(THGenerator* gen, double median, double sigma);
double THRandom_logNormal(THGenerator* gen, double mean, double stdv);
int THRandom_geometric(THGenerator* gen, double p);
int THRandom_bernoulli(THGenerator* gen, double p);
#define TH_TENSOR_RANDOM_API(T, S, real, dtype)                                         \
  void T##_random(T* self, THGenerator* gen);                                           \
  void T##_geometric(T* self, THGenerator* gen, double p);                              \
  void T##_bernoulli(T* self, THGenerator* gen, double p);                              \
  void T##_bernoulli_FloatTensor(T* self, THGenerator* gen, struct THFloatTensor* p);   \
  void T##_bernoulli_DoubleTensor(T* self, THGenerator* gen, struct THDoubleTensor* p); \
  void T##_clampedRandom(T* self, THGenerator* gen, int64_t min, int64_t max);          \
  void T##_cappedRandom(T* self, THGenerator* gen, int64_t max);
#define TH_TENSOR_FLOAT_RANDOM_API(T, S, real, dtype)                          \
  void T##_uniform(T* self, THGenerator* gen, double a, double b);             \
  void T##_normal(T* self, THGenerator* gen, double mean, double stdv);        \
  void T##_exponential(T* self, THGenerator* gen, double lambda);              \
  void T##_cauchy(T* self, THGenerator* gen, double median, double sigma);     \
  void T##_logNormal(T* self, THGenerator* gen, double mean, double stdv);     \
  void T##_rand(T* r, THGenerator* gen, struct THLongStorage* size);           \
  void T##_randn(T* r, THGenerator* gen, struct THLongStorage* size);          \
  void T##_normal_means(T* self, THGenerator* gen, T* means, double stddev);   \
  void T##_normal_stddevs(T* self, THGenerator* gen, double mean, T* stddevs); \
  void T##_normal_means_stddevs(T* self, THGenerator* gen, T* means, T* stddevs);
TH_FORALL_CPU_TENSORS(TH_TENSOR_RANDOM_API)
TH_FORALL_CPU_FLOAT_TENSORS(TH_TENSOR_FLOAT_RANDOM_API)
/* multinomial(self, gen, prob_dist, n_sample, with_replacement): n_sample
 * category indices (0-based) for each distribution of prob_dist (1-D: one,
 * self [n_sample]; 2-D: one a row, self [rows, n_sample]); each row
 * nonnegative with a positive sum, not normalized. multinomialAliasSetup(probs,
 * J, q) makes Walker's alias table of probs (J 0-based), and
 * multinomialAliasDraw(self, gen, J, q) fills self with draws from it. With a
 * NULL gen the draws come from torch's generator; with a THGenerator, from
 * its numbers (one a draw for multinomial, two for the alias method). */
#define TH_TENSOR_MULTINOMIAL_API(T)                                                            \
  void T##_multinomial(struct THLongTensor* self, THGenerator* gen, T* prob_dist, int n_sample, \
                       int with_replacement);                                                   \
  void T##_multinomialAliasSetup(T* probs, struct THLongTensor* J, T* q);                       \
  void T##_multinomialAliasDraw(struct THLongTensor* self, THGenerator* gen,                    \
                                struct THLongTensor* J, T* q);
TH_TENSOR_MULTINOMIAL_API(THFloatTensor)
TH_TENSOR_MULTINOMIAL_API(THDoubleTensor)
#undef TH_TENSOR_MULTINOMIAL_API
/* A THGenerator's whole state into a byte tensor, and back (from one that
 * getRNGState made). */
void THByteTensor_getRNGState(THGenerator* gen, struct THByteTensor* self);
void THByteTensor_setRNGState(THGenerator* gen, struct THByteTensor* self);
/* "torch.FloatTensor of size 2x3" (T_desc), as T_sizeDesc in its buffer. */
#define TH_TENSOR_DESC_API(T, S, real, dtype) THDescBuff T##_desc(const T* tensor);
TH_FORALL_CPU_TENSORS(TH_TENSOR_DESC_API)
#undef TH_TENSOR_DESC_API
#undef TH_TENSOR_RANDOM_API
#undef TH_TENSOR_FLOAT_RANDOM_API

/* T_copy<Name>(self, src): src's elements, converted, into self (the same
 * number of elements, in order), from a tensor of any type:
 * THFloatTensor_copyDouble(THFloatTensor* self, THDoubleTensor* src). The
 * trailing variadic arguments of TH_COPY_FROM are the leading parameters. */
#define TH_COPY_FROM(Name, Src, T, ...) void T##_copy##Name(__VA_ARGS__ T* self, Src* src);
#define TH_CPU_COPY_API(T, S, real, dtype) TH_FORALL_CPU_NAMES(TH_COPY_FROM, T, )
TH_FORALL_CPU_TENSORS(TH_CPU_COPY_API)
#undef TH_CPU_COPY_API

/* The same for storages (THStorageCopy.h): S_copy and S_copy<Name> copy a
 * storage of as many elements, each converted; S_rawCopy copies the
 * storage's size of elements from memory of its own type (host memory; device
 * memory of the current device for a THC storage); S_elementSize is
 * sizeof(real). */
#define TH_FORALL_CPU_STORAGE_NAMES(X, ...) \
  X(Byte, THByteStorage, __VA_ARGS__)       \
  X(Char, THCharStorage, __VA_ARGS__)       \
  X(Short, THShortStorage, __VA_ARGS__)     \
  X(Int, THIntStorage, __VA_ARGS__)         \
  X(Long, THLongStorage, __VA_ARGS__)       \
  X(Float, THFloatStorage, __VA_ARGS__)     \
  X(Double, THDoubleStorage, __VA_ARGS__)   \
  X(Half, THHalfStorage, __VA_ARGS__)       \
  X(BFloat16, THBFloat16Storage, __VA_ARGS__)
#define TH_STORAGE_COPY_API(S, real, ...)           \
  void S##_rawCopy(__VA_ARGS__ S* self, real* src); \
  void S##_copy(__VA_ARGS__ S* self, S* src);       \
  TH_FORALL_CPU_STORAGE_NAMES(TH_COPY_FROM, S, __VA_ARGS__)
#define TH_CPU_STORAGE_COPY_API(T, S, real, dtype) \
  TH_STORAGE_COPY_API(S, real, )                   \
  size_t S##_elementSize(void);
TH_FORALL_CPU_TENSORS(TH_CPU_STORAGE_COPY_API)
#undef TH_CPU_STORAGE_COPY_API

/* TH's vector loops over raw host memory (THVector.h), of every CPU type:
 * fill x[i] = c; cadd z = x + c y; adds y = x + c; cmul z = x y; muls y = x c;
 * cdiv z = x / y; divs y = x / c; copy y = x; over n elements (integer
 * division truncates; dividing an integer by 0 raises). vectorDispatchInit
 * does nothing: the loops need no setup. */
#define TH_FORALL_CPU_VECTORS(X) \
  X(THByteVector, uint8_t)       \
  X(THCharVector, int8_t)        \
  X(THShortVector, int16_t)      \
  X(THIntVector, int32_t)        \
  X(THLongVector, int64_t)       \
  X(THFloatVector, float)        \
  X(THDoubleVector, double)      \
  X(THHalfVector, THHalf)        \
  X(THBFloat16Vector, THBFloat16)
#define TH_VECTOR_API(V, real)                                                           \
  void V##_fill(real* x, const real c, const ptrdiff_t n);                               \
  void V##_cadd(real* z, const real* x, const real* y, const real c, const ptrdiff_t n); \
  void V##_adds(real* y, const real* x, const real c, const ptrdiff_t n);                \
  void V##_cmul(real* z, const real* x, const real* y, const ptrdiff_t n);               \
  void V##_muls(real* y, const real* x, const real c, const ptrdiff_t n);                \
  void V##_cdiv(real* z, const real* x, const real* y, const ptrdiff_t n);               \
  void V##_divs(real* y, const real* x, const real c, const ptrdiff_t n);                \
  void V##_copy(real* y, const real* x, const ptrdiff_t n);                              \
  void V##_vectorDispatchInit(void);
TH_FORALL_CPU_VECTORS(TH_VECTOR_API)

/* r := a random permutation of 0 .. n - 1 (T_randperm; gen NULL: torch's
 * generator); r := t's elements in the shape size, a copy (T_reshape);
 * r [N1, N2] := gain times the squared distance of each row of m1 to each row
 * of m2 (T_match); hist [rows, nbins] := each row's histc over one range
 * (bhistc, float and double; minvalue == maxvalue: the tensor's range).
 * THByteTensor_logicalall / logicalany: whether all / any element is nonzero. */
#define TH_TENSOR_SHAPE_API(T, real)                        \
  void T##_randperm(T* r, THGenerator* gen, int64_t n);     \
  void T##_reshape(T* r, T* t, struct THLongStorage* size); \
  void T##_match(T* r, T* m1, T* m2, real gain);
#define TH_CPU_SHAPE_API(T, S, real, dtype) TH_TENSOR_SHAPE_API(T, real)
TH_FORALL_CPU_INT_TENSORS(TH_CPU_SHAPE_API)
TH_TENSOR_SHAPE_API(THFloatTensor, float)
TH_TENSOR_SHAPE_API(THDoubleTensor, double)
#undef TH_CPU_SHAPE_API
#undef TH_TENSOR_SHAPE_API
void THFloatTensor_bhistc(THFloatTensor* hist, THFloatTensor* tensor, int64_t nbins, float minvalue,
                          float maxvalue);
void THDoubleTensor_bhistc(THDoubleTensor* hist, THDoubleTensor* tensor, int64_t nbins,
                           double minvalue, double maxvalue);
int THByteTensor_logicalall(THByteTensor* self);
int THByteTensor_logicalany(THByteTensor* self);

/* THStorage.h's shape arithmetic: newInferSize(size, n) a new storage of size
 * with its one -1 inferred for n elements; inferSize2 / inferSizeN write
 * into output the shape that shapes (C arrays of sizes and their counts)
 * broadcast to, and inferExpandGeometry the sizes and strides (arrays from
 * THAlloc, the caller's to THFree) a tensor of sizes and strides expands to;
 * each answers 0, or -1 with the reason in error_buffer. S_resize(s, n)
 * grows or shrinks a CPU storage (made by S_new*, or from T_storage); every
 * tensor over it sees the new memory. THSize_isSameSizeAs and
 * THSize_nElement over C arrays of sizes (no dimensions: 0 elements);
 * THLogAdd / THLogSub: log(a +- b) from log a and log b; THExpMinusApprox(x):
 * exp(-x) for x >= 0, 0 from 13 on; TH_float2halfbits / TH_halfbits2float
 * between a float and a half's bits. */
THLongStorage* THLongStorage_newInferSize(THLongStorage* size, ptrdiff_t nElement);
int THLongStorage_inferSize2(THLongStorage* output, int64_t* sizesA, int64_t dimsA, int64_t* sizesB,
                             int64_t dimsB, char* error_buffer, int buffer_len);
int THLongStorage_inferSizeN(THLongStorage* output, int n, int64_t** sizes, int64_t* dims,
                             char* error_buffer, int buffer_len);
int THLongStorage_inferExpandGeometry(int64_t* tensorSizes, int64_t* tensorStrides,
                                      int64_t tensorDim, THLongStorage* sizes,
                                      int64_t** expandedSizes, int64_t** expandedStrides,
                                      char* error_buffer, int buffer_len);
#define TH_STORAGE_RESIZE_API(T, S, real, dtype) void S##_resize(S* self, ptrdiff_t size);
TH_FORALL_CPU_TENSORS(TH_STORAGE_RESIZE_API)
#undef TH_STORAGE_RESIZE_API
int THSize_isSameSizeAs(const int64_t* sizeA, int64_t dimsA, const int64_t* sizeB, int64_t dimsB);
ptrdiff_t THSize_nElement(int64_t dims, int64_t* size);
double THLogAdd(double log_a, double log_b);
double THLogSub(double log_a, double log_b);
double THExpMinusApprox(const double x);
void TH_float2halfbits(float* src, unsigned short* dest);
void TH_halfbits2float(unsigned short* src, float* res);

/* TH's convolutions (THTensorConv.h), CPU, for the seven types TH had them
 * for. Raw memory: r += alpha * op(t, k) for contiguous planes (2D: ir x ic,
 * 3D: it x ir x ic) and kernels, strides s: validXCorr (correlation, the
 * output (i - k) / s + 1), validConv (the kernel reversed), fullConv (each
 * input element scatters the kernel, output (i - 1) * s + k), fullXCorr
 * (the kernel reversed), validXCorrRev (the kernel gradient of a strided
 * correlation, output i - (k - 1) * s). Tensors: r = beta * r + alpha * the
 * sum over planes (r taken as zeros where it had another number of
 * elements): conv2Dmv (input [I, H, W], kernel [O, I, kh, kw] -> [O, ...]),
 * conv2Dmm (a batch of those), conv2Dger (input [I, ...], kernel [K, ...] ->
 * [K, I, ...]), conv2DRevger / conv2DRevgerm (its Rev form, germ summed over
 * a batch), conv2Dmul (one plane), conv2Dcmul (plane by plane), and the
 * 3D forms; vf "V" valid or "F" full, xc "X" correlation or "C" convolution. */
#define TH_TENSOR_CONV_PTR(T, real, name2, name3)                                                \
  void T##_##name2(real* r_, real alpha, real* t_, int64_t ir, int64_t ic, real* k_, int64_t kr, \
                   int64_t kc, int64_t sr, int64_t sc);                                          \
  void T##_##name3(real* r_, real alpha, real* t_, int64_t it, int64_t ir, int64_t ic, real* k_, \
                   int64_t kt, int64_t kr, int64_t kc, int64_t st, int64_t sr, int64_t sc);
#define TH_TENSOR_CONV_API(T, real)                                                               \
  TH_TENSOR_CONV_PTR(T, real, validXCorr2Dptr, validXCorr3Dptr)                                   \
  TH_TENSOR_CONV_PTR(T, real, validConv2Dptr, validConv3Dptr)                                     \
  TH_TENSOR_CONV_PTR(T, real, fullXCorr2Dptr, fullXCorr3Dptr)                                     \
  TH_TENSOR_CONV_PTR(T, real, fullConv2Dptr, fullConv3Dptr)                                       \
  TH_TENSOR_CONV_PTR(T, real, validXCorr2DRevptr, validXCorr3DRevptr)                             \
  void T##_conv2DRevger(T* r_, real beta, real alpha, T* t_, T* k_, int64_t srow, int64_t scol);  \
  void T##_conv2DRevgerm(T* r_, real beta, real alpha, T* t_, T* k_, int64_t srow, int64_t scol); \
  void T##_conv3DRevger(T* r_, real beta, real alpha, T* t_, T* k_, int64_t sdepth, int64_t srow, \
                        int64_t scol);                                                            \
  TH_TENSOR_CONV_2D(T, real, conv2Dger)                                                           \
  TH_TENSOR_CONV_2D(T, real, conv2Dmv)                                                            \
  TH_TENSOR_CONV_2D(T, real, conv2Dmm)                                                            \
  TH_TENSOR_CONV_2D(T, real, conv2Dmul)                                                           \
  TH_TENSOR_CONV_2D(T, real, conv2Dcmul)                                                          \
  TH_TENSOR_CONV_3D(T, real, conv3Dger)                                                           \
  TH_TENSOR_CONV_3D(T, real, conv3Dmv)                                                            \
  TH_TENSOR_CONV_3D(T, real, conv3Dmul)                                                           \
  TH_TENSOR_CONV_3D(T, real, conv3Dcmul)
#define TH_TENSOR_CONV_2D(T, real, name)                                                  \
  void T##_##name(T* r_, real beta, real alpha, T* t_, T* k_, int64_t srow, int64_t scol, \
                  const char* vf, const char* xc);
#define TH_TENSOR_CONV_3D(T, real, name)                                                    \
  void T##_##name(T* r_, real beta, real alpha, T* t_, T* k_, int64_t sdepth, int64_t srow, \
                  int64_t scol, const char* vf, const char* xc);
#define TH_CPU_CONV_API(T, S, real, dtype) TH_TENSOR_CONV_API(T, real)
TH_FORALL_CPU_INT_TENSORS(TH_CPU_CONV_API)
TH_TENSOR_CONV_API(THFloatTensor, float)
TH_TENSOR_CONV_API(THDoubleTensor, double)
#undef TH_CPU_CONV_API
#undef TH_TENSOR_CONV_API
#undef TH_TENSOR_CONV_PTR
#undef TH_TENSOR_CONV_2D
#undef TH_TENSOR_CONV_3D

/* TH's files. A THFile (THDiskFile_new(name, mode, isQuiet) on disk,
 * THPipeFile_new(command, mode, isQuiet) through a pipe,
 * THMemoryFile_new(mode) / THMemoryFile_newWithStorage(chars, mode) in
 * memory; mode "r", "w" or "rw") reads and writes TH's numbers: ASCII by
 * default (numbers as text, space-separated, a newline after each call with
 * auto-spacing), THFile_binary for the machine's bytes (THDiskFile_*Endian
 * for another byte order, THDiskFile_longSize for 4-byte longs). Bytes and
 * chars are raw in both. read<Type>Scalar / write<Type>Scalar one value,
 * read<Type> / write<Type> a whole storage, read<Type>Raw / write<Type>Raw n
 * values of memory, each answering how many it moved; fewer than asked is an
 * error, or with THFile_quiet the file's error flag (THFile_hasError).
 * readStringRaw(f, "*a" or "*l", &str) reads the rest of the file or line
 * into a string the caller THFrees. THMemoryFile_storage gives what a memory
 * file holds, NUL-terminated, as a THCharStorage the file keeps. */
typedef struct THFile__ THFile;
int THFile_isOpened(THFile* self);
int THFile_isQuiet(THFile* self);
int THFile_isReadable(THFile* self);
int THFile_isWritable(THFile* self);
int THFile_isBinary(THFile* self);
int THFile_isAutoSpacing(THFile* self);
int THFile_hasError(THFile* self);
void THFile_binary(THFile* self);
void THFile_ascii(THFile* self);
void THFile_autoSpacing(THFile* self);
void THFile_noAutoSpacing(THFile* self);
void THFile_quiet(THFile* self);
void THFile_pedantic(THFile* self);
void THFile_clearError(THFile* self);
#define TH_FILE_IO_API(Name, real, Storage)                          \
  real THFile_read##Name##Scalar(THFile* self);                      \
  void THFile_write##Name##Scalar(THFile* self, real scalar);        \
  size_t THFile_read##Name(THFile* self, Storage* storage);          \
  size_t THFile_write##Name(THFile* self, Storage* storage);         \
  size_t THFile_read##Name##Raw(THFile* self, real* data, size_t n); \
  size_t THFile_write##Name##Raw(THFile* self, real* data, size_t n);
TH_FILE_IO_API(Byte, uint8_t, THByteStorage)
TH_FILE_IO_API(Char, int8_t, THCharStorage)
TH_FILE_IO_API(Short, int16_t, THShortStorage)
TH_FILE_IO_API(Int, int32_t, THIntStorage)
TH_FILE_IO_API(Long, int64_t, THLongStorage)
TH_FILE_IO_API(Float, float, THFloatStorage)
TH_FILE_IO_API(Double, double, THDoubleStorage)
TH_FILE_IO_API(Half, THHalf, THHalfStorage)
#undef TH_FILE_IO_API
size_t THFile_readStringRaw(THFile* self, const char* format, char** str_);
size_t THFile_writeStringRaw(THFile* self, const char* str, size_t size);
void THFile_synchronize(THFile* self);
void THFile_seek(THFile* self, size_t position);
void THFile_seekEnd(THFile* self);
size_t THFile_position(THFile* self);
void THFile_close(THFile* self);
void THFile_free(THFile* self);
THFile* THDiskFile_new(const char* name, const char* mode, int isQuiet);
THFile* THPipeFile_new(const char* name, const char* mode, int isQuiet);
const char* THDiskFile_name(THFile* self);
int THDiskFile_isLittleEndianCPU(void);
int THDiskFile_isBigEndianCPU(void);
void THDiskFile_nativeEndianEncoding(THFile* self);
void THDiskFile_littleEndianEncoding(THFile* self);
void THDiskFile_bigEndianEncoding(THFile* self);
void THDiskFile_longSize(THFile* self, int size);
void THDiskFile_noBuffer(THFile* self);
THFile* THMemoryFile_newWithStorage(THCharStorage* storage, const char* mode);
THFile* THMemoryFile_new(const char* mode);
THCharStorage* THMemoryFile_storage(THFile* self);
void THMemoryFile_longSize(THFile* self, int size);

/* TH's atomics (THAtomic.h) on int, long and ptrdiff_t: Set, Get, Add (the
 * value before), CompareAndSwap (1 where *a was oldvalue and is now
 * newvalue, else 0); IncrementRef, and DecrementRef (1 where it reached 0). */
#define TH_ATOMIC_API(Suffix, V)                       \
  void THAtomicSet##Suffix(V volatile* a, V newvalue); \
  V THAtomicGet##Suffix(V volatile* a);                \
  V THAtomicAdd##Suffix(V volatile* a, V value);       \
  V THAtomicCompareAndSwap##Suffix(V volatile* a, V oldvalue, V newvalue);
TH_ATOMIC_API(, int)
TH_ATOMIC_API(Long, long)
TH_ATOMIC_API(Ptrdiff, ptrdiff_t)
#undef TH_ATOMIC_API
void THAtomicIncrementRef(int volatile* a);
int THAtomicDecrementRef(int volatile* a);

/* The integer types' products (TH computed them too): addmm, addmv, addr,
 * addbmm and baddbmm (r = beta t + alpha product, t of the product's shape),
 * dot (an int64_t) and cinv (1 / t, truncated; 0 is an error), in the
 * type's own arithmetic, wrapping as C's did. */
#define TH_TENSOR_INT_BLAS_API(T, S, real, dtype)                            \
  void T##_addmm(T* r, real beta, T* t, real alpha, T* mat1, T* mat2);       \
  void T##_addmv(T* r, real beta, T* t, real alpha, T* mat, T* vec);         \
  void T##_addr(T* r, real beta, T* t, real alpha, T* vec1, T* vec2);        \
  void T##_addbmm(T* r, real beta, T* t, real alpha, T* batch1, T* batch2);  \
  void T##_baddbmm(T* r, real beta, T* t, real alpha, T* batch1, T* batch2); \
  int64_t T##_dot(T* t, T* src);                                             \
  void T##_cinv(T* r, T* t);
TH_FORALL_CPU_INT_TENSORS(TH_TENSOR_INT_BLAS_API)
#undef TH_TENSOR_INT_BLAS_API

/* TH's BLAS on raw column-major data, as Fortran BLAS takes it (trans: 'n',
 * 't' or 'c'; C = alpha op(A) op(B) + beta C, y = alpha op(A) x + beta y;
 * beta 0 ignores what C or y held; A += alpha x y^T for ger). Vectors are n
 * elements inc apart (inc < 0: read from the far end, as BLAS reads them);
 * dot accumulates in the type itself, as TH's did. Every type TH had. */
#define TH_FORALL_CPU_INT_BLAS(X) \
  X(THByteBlas, uint8_t)          \
  X(THCharBlas, int8_t)           \
  X(THShortBlas, int16_t)         \
  X(THIntBlas, int32_t)           \
  X(THLongBlas, int64_t)
#define TH_FORALL_CPU_BLAS(X) \
  TH_FORALL_CPU_INT_BLAS(X)   \
  X(THFloatBlas, float)       \
  X(THDoubleBlas, double)
#define TH_BLAS_API(B, real)                                                                    \
  void B##_swap(int64_t n, real* x, int64_t incx, real* y, int64_t incy);                       \
  void B##_scal(int64_t n, real a, real* x, int64_t incx);                                      \
  void B##_copy(int64_t n, real* x, int64_t incx, real* y, int64_t incy);                       \
  void B##_axpy(int64_t n, real a, real* x, int64_t incx, real* y, int64_t incy);               \
  real B##_dot(int64_t n, real* x, int64_t incx, real* y, int64_t incy);                        \
  void B##_ger(int64_t m, int64_t n, real alpha, real* x, int64_t incx, real* y, int64_t incy,  \
               real* a, int64_t lda);                                                           \
  void B##_gemm(char transa, char transb, int64_t m, int64_t n, int64_t k, real alpha, real* a, \
                int64_t lda, real* b, int64_t ldb, real beta, real* c, int64_t ldc);            \
  void B##_gemv(char trans, int64_t m, int64_t n, real alpha, real* a, int64_t lda, real* x,    \
                int64_t incx, real beta, real* y, int64_t incy);
TH_FORALL_CPU_BLAS(TH_BLAS_API)
#undef TH_BLAS_API

/* TH's raw LAPACK (THLapack.h) on column-major memory, as Fortran's LAPACK
 * took it, for float and double (TH built it for those two): gesv, getrf
 * (the LU factors in place, ipiv 1-based), getrs, getri, trtrs and syev
 * (eigenvalues ascending in w, jobz 'V': the eigenvectors in a). info is 0,
 * or i > 0 as LAPACK's (a zero pivot or diagonal element: nothing solved);
 * lwork -1 asks for the workspace size (in work[0]); an argument LAPACK
 * would refuse raises, naming it. */
#define TH_LAPACK_API(L, real)                                                                 \
  void L##_gesv(int n, int nrhs, real* a, int lda, int* ipiv, real* b, int ldb, int* info);    \
  void L##_getrf(int m, int n, real* a, int lda, int* ipiv, int* info);                        \
  void L##_getrs(char trans, int n, int nrhs, real* a, int lda, int* ipiv, real* b, int ldb,   \
                 int* info);                                                                   \
  void L##_getri(int n, real* a, int lda, int* ipiv, real* work, int lwork, int* info);        \
  void L##_trtrs(char uplo, char trans, char diag, int n, int nrhs, real* a, int lda, real* b, \
                 int ldb, int* info);                                                          \
  void L##_syev(char jobz, char uplo, int n, real* a, int lda, real* w, real* work, int lwork, \
                int* info);
TH_LAPACK_API(THFloatLapack, float)
TH_LAPACK_API(THDoubleLapack, double)
#undef TH_LAPACK_API

#ifdef __cplusplus
}
#endif

#include "kfl_any_tensor.h" /* C++: a tensor of any type where a shape query takes one, as 0.4.1 let it */
#ifdef __cplusplus
extern "C++" { /* also where a C++ source includes TH.h inside its own extern "C" */
#define TH_ANY_TENSOR_QUERIES(T, S, real, dtype) KFL_ANY_TENSOR_QUERIES(T, (), ())
TH_FORALL_CPU_TENSORS(TH_ANY_TENSOR_QUERIES)
#undef TH_ANY_TENSOR_QUERIES
}
#endif

/* as TH.h did: its loops too */
#include "THTensorApply.h"
#include "THTensorDimApply.h"

#endif /* KERNFORGE_LEGACY_TH_H */
