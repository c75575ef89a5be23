/* THC/THCNumerics.cuh: THC's type-generic device arithmetic, for kernels
 * written once for every type (THC's generic .cu files):
 *
 * - THCNumerics<T>: min() and max() (the type's lowest and highest values),
 *   the comparisons lt, le, gt, ge, eq, ne, and add, sub, mul, div, neg,
 *   abs; for float, double and half also exp, log, log1p, lgamma, sin, cos,
 *   tan, asin, acos, atan, sinh, cosh, tanh, sqrt, rsqrt, ceil, floor,
 *   trunc, round, frac, cinv, erf, erfinv, pow, atan2 and isnan. half
 *   computes in float and rounds the result to half;
 * - ScalarConvert<In, Out>::to(v), ScalarNegate<T>::to(v) and
 *   ScalarInv<T>::to(v), which convert half as other types.
 *
 * The math functions (exp ... atan2) are device functions, the CUDA math
 * library's of the type's precision; the rest run on the host too. CUDA's
 * half is cuda_fp16.h's __half. */
#ifndef KERNFORGE_LEGACY_THC_NUMERICS_CUH
#define KERNFORGE_LEGACY_THC_NUMERICS_CUH

#include <cuda_fp16.h>

#include <cfloat>
#include <climits>
#include <cstdint>

template <typename In, typename Out>
struct ScalarConvert {
  static __host__ __device__ __forceinline__ Out to(const In v) { return static_cast<Out>(v); }
};
template <typename Out>
struct ScalarConvert<half, Out> {
  static __host__ __device__ __forceinline__ Out to(const half v) {
    return static_cast<Out>(__half2float(v));
  }
};
template <typename In>
struct ScalarConvert<In, half> {
  static __host__ __device__ __forceinline__ half to(const In v) {
    return __float2half(static_cast<float>(v));
  }
};
template <>
struct ScalarConvert<half, half> {
  static __host__ __device__ __forceinline__ half to(const half v) { return v; }
};

/* The arithmetic every type has, written with T's own operators */
template <typename T, T Lowest, T Highest>
struct THCIntegerNumerics {
  static __host__ __device__ __forceinline__ T min() { return Lowest; }
  static __host__ __device__ __forceinline__ T max() { return Highest; }
  static __host__ __device__ __forceinline__ bool lt(T a, T b) { return a < b; }
  static __host__ __device__ __forceinline__ bool le(T a, T b) { return a <= b; }
  static __host__ __device__ __forceinline__ bool gt(T a, T b) { return a > b; }
  static __host__ __device__ __forceinline__ bool ge(T a, T b) { return a >= b; }
  static __host__ __device__ __forceinline__ bool eq(T a, T b) { return a == b; }
  static __host__ __device__ __forceinline__ bool ne(T a, T b) { return a != b; }
  static __host__ __device__ __forceinline__ T neg(T a) { return -a; }
  static __host__ __device__ __forceinline__ T add(T a, T b) { return a + b; }
  static __host__ __device__ __forceinline__ T sub(T a, T b) { return a - b; }
  static __host__ __device__ __forceinline__ T mul(T a, T b) { return a * b; }
  static __host__ __device__ __forceinline__ T div(T a, T b) { return a / b; }
  static __host__ __device__ __forceinline__ T abs(T a) { return a < 0 ? -a : a; }
};

template <typename T>
struct THCNumerics;
template <>
struct THCNumerics<uint8_t> : THCIntegerNumerics<uint8_t, 0, UINT8_MAX> {
  static __host__ __device__ __forceinline__ uint8_t abs(uint8_t a) { return a; }
  static __host__ __device__ __forceinline__ uint8_t neg(uint8_t a) { return -a; }
};
template <>
struct THCNumerics<int8_t> : THCIntegerNumerics<int8_t, INT8_MIN, INT8_MAX> {};
template <>
struct THCNumerics<int16_t> : THCIntegerNumerics<int16_t, INT16_MIN, INT16_MAX> {};
template <>
struct THCNumerics<int32_t> : THCIntegerNumerics<int32_t, INT32_MIN, INT32_MAX> {};
template <>
struct THCNumerics<int64_t> : THCIntegerNumerics<int64_t, INT64_MIN, INT64_MAX> {};

/* The floating types' functions: the CUDA math library's, of the type's own
 * precision (Fn(x) for float is the f-suffixed function) */
#define KFL_THC_FLOAT_FN(name, T, fn)             \
  static __device__ __forceinline__ T name(T a) { \
    return fn(a);                                 \
  }
#define KFL_THC_FLOAT_NUMERICS(T, F, LOWEST, HIGHEST)            \
  static __host__ __device__ __forceinline__ T min() {           \
    return LOWEST;                                               \
  }                                                              \
  static __host__ __device__ __forceinline__ T max() {           \
    return HIGHEST;                                              \
  }                                                              \
  static __host__ __device__ __forceinline__ bool lt(T a, T b) { \
    return a < b;                                                \
  }                                                              \
  static __host__ __device__ __forceinline__ bool le(T a, T b) { \
    return a <= b;                                               \
  }                                                              \
  static __host__ __device__ __forceinline__ bool gt(T a, T b) { \
    return a > b;                                                \
  }                                                              \
  static __host__ __device__ __forceinline__ bool ge(T a, T b) { \
    return a >= b;                                               \
  }                                                              \
  static __host__ __device__ __forceinline__ bool eq(T a, T b) { \
    return a == b;                                               \
  }                                                              \
  static __host__ __device__ __forceinline__ bool ne(T a, T b) { \
    return a != b;                                               \
  }                                                              \
  static __host__ __device__ __forceinline__ T neg(T a) {        \
    return -a;                                                   \
  }                                                              \
  static __host__ __device__ __forceinline__ T add(T a, T b) {   \
    return a + b;                                                \
  }                                                              \
  static __host__ __device__ __forceinline__ T sub(T a, T b) {   \
    return a - b;                                                \
  }                                                              \
  static __host__ __device__ __forceinline__ T mul(T a, T b) {   \
    return a * b;                                                \
  }                                                              \
  static __host__ __device__ __forceinline__ T div(T a, T b) {   \
    return a / b;                                                \
  }                                                              \
  static __host__ __device__ __forceinline__ T cinv(T a) {       \
    return T(1) / a;                                             \
  }                                                              \
  static __device__ __forceinline__ T frac(T a) {                \
    return a - trunc(a);                                         \
  }                                                              \
  static __device__ __forceinline__ T pow(T a, T b) {            \
    return ::pow##F(a, b);                                       \
  }                                                              \
  static __device__ __forceinline__ T atan2(T a, T b) {          \
    return ::atan2##F(a, b);                                     \
  }                                                              \
  static __host__ __device__ __forceinline__ bool isnan(T a) {   \
    return a != a;                                               \
  }                                                              \
  KFL_THC_FLOAT_FN(abs, T, ::fabs##F)                            \
  KFL_THC_FLOAT_FN(exp, T, ::exp##F)                             \
  KFL_THC_FLOAT_FN(log, T, ::log##F)                             \
  KFL_THC_FLOAT_FN(log1p, T, ::log1p##F)                         \
  KFL_THC_FLOAT_FN(lgamma, T, ::lgamma##F)                       \
  KFL_THC_FLOAT_FN(sin, T, ::sin##F)                             \
  KFL_THC_FLOAT_FN(cos, T, ::cos##F)                             \
  KFL_THC_FLOAT_FN(tan, T, ::tan##F)                             \
  KFL_THC_FLOAT_FN(asin, T, ::asin##F)                           \
  KFL_THC_FLOAT_FN(acos, T, ::acos##F)                           \
  KFL_THC_FLOAT_FN(atan, T, ::atan##F)                           \
  KFL_THC_FLOAT_FN(sinh, T, ::sinh##F)                           \
  KFL_THC_FLOAT_FN(cosh, T, ::cosh##F)                           \
  KFL_THC_FLOAT_FN(tanh, T, ::tanh##F)                           \
  KFL_THC_FLOAT_FN(sqrt, T, ::sqrt##F)                           \
  KFL_THC_FLOAT_FN(rsqrt, T, ::rsqrt##F)                         \
  KFL_THC_FLOAT_FN(ceil, T, ::ceil##F)                           \
  KFL_THC_FLOAT_FN(floor, T, ::floor##F)                         \
  KFL_THC_FLOAT_FN(trunc, T, ::trunc##F)                         \
  KFL_THC_FLOAT_FN(round, T, ::round##F)                         \
  KFL_THC_FLOAT_FN(erf, T, ::erf##F)                             \
  KFL_THC_FLOAT_FN(erfinv, T, ::erfinv##F)
template <>
struct THCNumerics<float> {
  KFL_THC_FLOAT_NUMERICS(float, f, -FLT_MAX, FLT_MAX)
};
template <>
struct THCNumerics<double> {
  KFL_THC_FLOAT_NUMERICS(double, , -DBL_MAX, DBL_MAX)
};
#undef KFL_THC_FLOAT_NUMERICS
#undef KFL_THC_FLOAT_FN

/* half: each operation in float, the result rounded to half */
template <>
struct THCNumerics<half> {
  typedef THCNumerics<float> F;
  static __host__ __device__ __forceinline__ float f(half a) { return __half2float(a); }
  static __host__ __device__ __forceinline__ half h(float a) { return __float2half(a); }
  static __host__ __device__ __forceinline__ half min() { return __ushort_as_half(0xfbff); }
  static __host__ __device__ __forceinline__ half max() { return __ushort_as_half(0x7bff); }
  static __host__ __device__ __forceinline__ bool lt(half a, half b) { return f(a) < f(b); }
  static __host__ __device__ __forceinline__ bool le(half a, half b) { return f(a) <= f(b); }
  static __host__ __device__ __forceinline__ bool gt(half a, half b) { return f(a) > f(b); }
  static __host__ __device__ __forceinline__ bool ge(half a, half b) { return f(a) >= f(b); }
  static __host__ __device__ __forceinline__ bool eq(half a, half b) { return f(a) == f(b); }
  static __host__ __device__ __forceinline__ bool ne(half a, half b) { return f(a) != f(b); }
  static __host__ __device__ __forceinline__ bool isnan(half a) { return f(a) != f(a); }
  static __host__ __device__ __forceinline__ half add(half a, half b) { return h(f(a) + f(b)); }
  static __host__ __device__ __forceinline__ half sub(half a, half b) { return h(f(a) - f(b)); }
  static __host__ __device__ __forceinline__ half mul(half a, half b) { return h(f(a) * f(b)); }
  static __host__ __device__ __forceinline__ half div(half a, half b) { return h(f(a) / f(b)); }
  static __device__ __forceinline__ half pow(half a, half b) { return h(F::pow(f(a), f(b))); }
  static __device__ __forceinline__ half atan2(half a, half b) { return h(F::atan2(f(a), f(b))); }
#define KFL_THC_HALF_FN(name)                           \
  static __device__ __forceinline__ half name(half a) { \
    return h(F::name(f(a)));                            \
  }
  KFL_THC_HALF_FN(neg)
  KFL_THC_HALF_FN(abs)
  KFL_THC_HALF_FN(cinv)
  KFL_THC_HALF_FN(frac)
  KFL_THC_HALF_FN(exp)
  KFL_THC_HALF_FN(log)
  KFL_THC_HALF_FN(log1p)
  KFL_THC_HALF_FN(lgamma)
  KFL_THC_HALF_FN(sin)
  KFL_THC_HALF_FN(cos)
  KFL_THC_HALF_FN(tan)
  KFL_THC_HALF_FN(asin)
  KFL_THC_HALF_FN(acos)
  KFL_THC_HALF_FN(atan)
  KFL_THC_HALF_FN(sinh)
  KFL_THC_HALF_FN(cosh)
  KFL_THC_HALF_FN(tanh)
  KFL_THC_HALF_FN(sqrt)
  KFL_THC_HALF_FN(rsqrt)
  KFL_THC_HALF_FN(ceil)
  KFL_THC_HALF_FN(floor)
  KFL_THC_HALF_FN(trunc)
  KFL_THC_HALF_FN(round)
  KFL_THC_HALF_FN(erf)
  KFL_THC_HALF_FN(erfinv)
#undef KFL_THC_HALF_FN
};

template <typename T>
struct ScalarNegate {
  static __host__ __device__ __forceinline__ T to(const T v) { return THCNumerics<T>::neg(v); }
};
template <typename T>
struct ScalarInv {
  static __host__ __device__ __forceinline__ T to(const T v) {
    return THCNumerics<T>::div(ScalarConvert<int, T>::to(1), v);
  }
};

#endif /* KERNFORGE_LEGACY_THC_NUMERICS_CUH */
