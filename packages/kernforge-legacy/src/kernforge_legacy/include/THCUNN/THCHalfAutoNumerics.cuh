/* THCUNN/THCHalfAutoNumerics.cuh: arithmetic and comparisons mixing CUDA's
 * half with float or double, as THCUNN's kernels wrote them (a half element
 * times a float accumulator), each in the wider type; with CUDA's own
 * half-by-half operators these would be ambiguous. Also THC/THCNumerics.cuh
 * (ScalarConvert and the rest). */
#ifndef KERNFORGE_LEGACY_THC_HALF_AUTO_NUMERICS_CUH
#define KERNFORGE_LEGACY_THC_HALF_AUTO_NUMERICS_CUH

#include <cuda_fp16.h>

#include "../THC/THCNumerics.cuh"

#define KFL_HALF_MIXED(OP, Wide)                                                \
  static __host__ __device__ __forceinline__ Wide operator OP(half a, Wide b) { \
    return static_cast<Wide>(__half2float(a)) OP b;                             \
  }                                                                             \
  static __host__ __device__ __forceinline__ Wide operator OP(Wide a, half b) { \
    return a OP static_cast<Wide>(__half2float(b));                             \
  }
#define KFL_HALF_COMPARED(OP, Wide)                                             \
  static __host__ __device__ __forceinline__ bool operator OP(half a, Wide b) { \
    return static_cast<Wide>(__half2float(a)) OP b;                             \
  }                                                                             \
  static __host__ __device__ __forceinline__ bool operator OP(Wide a, half b) { \
    return a OP static_cast<Wide>(__half2float(b));                             \
  }
#define KFL_HALF_WITH(Wide)   \
  KFL_HALF_MIXED(+, Wide)     \
  KFL_HALF_MIXED(-, Wide)     \
  KFL_HALF_MIXED(*, Wide)     \
  KFL_HALF_MIXED(/, Wide)     \
  KFL_HALF_COMPARED(<, Wide)  \
  KFL_HALF_COMPARED(<=, Wide) \
  KFL_HALF_COMPARED(>, Wide)  \
  KFL_HALF_COMPARED(>=, Wide) \
  KFL_HALF_COMPARED(==, Wide) \
  KFL_HALF_COMPARED(!=, Wide)
KFL_HALF_WITH(float)
KFL_HALF_WITH(double)
#undef KFL_HALF_WITH
#undef KFL_HALF_COMPARED
#undef KFL_HALF_MIXED

#endif /* KERNFORGE_LEGACY_THC_HALF_AUTO_NUMERICS_CUH */
