/* TH/TH.h: the CPU tensor API of 2017-era torch.utils.ffi extensions (C),
 * over the torch tensors an extension's functions are called with.
 *
 * THFloatTensor, THDoubleTensor, ... are opaque handles to those tensors: a
 * resize, fill or zero through them is seen by the caller in Python. The
 * element type of each handle is TH's `real`: float for THFloatTensor,
 * int64_t (`long` on Linux) for THLongTensor, THHalf for THHalfTensor.
 * Implemented by kernforge_legacy/runtime/compat.cpp on torch's stable C ABI.
 *
 * THError and THArgCheck raise a Python RuntimeError with the message, file
 * and line; C sources are built with -fexceptions for that. */
#ifndef KERNFORGE_LEGACY_TH_H
#define KERNFORGE_LEGACY_TH_H

#include <stddef.h>
#include <stdint.h>

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

/* THError("bad value %d", v) and THArgCheck(cond, arg_number, "message"). */
#define THError(...) kfl_th_error(__FILE__, __LINE__, __VA_ARGS__)
#define THArgCheck(...) kfl_th_arg_check(__FILE__, __LINE__, __VA_ARGS__)

/* Every tensor handle type: X(name, real, torch dtype). */
#define TH_FORALL_CPU_TENSORS(X)     \
  X(THByteTensor, uint8_t, uint8)    \
  X(THCharTensor, int8_t, int8)      \
  X(THShortTensor, int16_t, int16)   \
  X(THIntTensor, int32_t, int32)     \
  X(THLongTensor, int64_t, int64)    \
  X(THFloatTensor, float, float32)   \
  X(THDoubleTensor, double, float64) \
  X(THHalfTensor, THHalf, float16)   \
  X(THBFloat16Tensor, THBFloat16, bfloat16)

/* The API of one handle type T, each function taking the variadic
 * arguments first (nothing for TH, the THCState for THC). */
#define TH_TENSOR_API(T, real, ...)                                                    \
  typedef struct T T;                                                                  \
  real* T##_data(__VA_ARGS__ const T* self);                                           \
  ptrdiff_t T##_nElement(__VA_ARGS__ const T* self);                                   \
  int T##_nDimension(__VA_ARGS__ const T* self);                                       \
  int64_t T##_size(__VA_ARGS__ const T* self, int dim);                                \
  int64_t T##_stride(__VA_ARGS__ const T* self, int dim);                              \
  int T##_isContiguous(__VA_ARGS__ const T* self);                                     \
  int T##_isSameSizeAs(__VA_ARGS__ const T* self, const T* other);                     \
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

#define TH_CPU_TENSOR_API(T, real, dtype) TH_TENSOR_API(T, real, )
TH_FORALL_CPU_TENSORS(TH_CPU_TENSOR_API)
#undef TH_CPU_TENSOR_API

#ifdef __cplusplus
}
#endif

#endif /* KERNFORGE_LEGACY_TH_H */
