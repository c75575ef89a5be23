/* THC/THCDeviceTensorUtils.cuh: toDeviceTensor<T, Dim>(state, t), a
 * THCDeviceTensor over a THC tensor's data, sizes and strides, for a kernel
 * launch (host code). t must have Dim dimensions and an element type of T's
 * size; a tensor whose offsets do not fit IndexT raises (as THError). */
#ifndef KERNFORGE_LEGACY_THC_DEVICE_TENSOR_UTILS_CUH
#define KERNFORGE_LEGACY_THC_DEVICE_TENSOR_UTILS_CUH

#include <limits>
#include <utility>

#include "THC.h"
#include "THCDeviceTensor.cuh"

template <typename T, int Dim, typename IndexT = int,
          template <typename U> class PtrTraits = DefaultPtrTraits, typename THCT>
THCDeviceTensor<T, Dim, IndexT, PtrTraits> toDeviceTensor(THCState* state, THCT* t) {
  (void)state;
  static_assert(sizeof(*std::declval<THCT&>().storage->data) == sizeof(T),
                "toDeviceTensor: T is not the size of the tensor's elements");
  if (t->nDimension != Dim)
    THError("toDeviceTensor: expected a tensor of %d dimensions, got %d", Dim, t->nDimension);
  IndexT sizes[Dim], strides[Dim];
  long double last = 0; /* the largest offset from the first element */
  for (int d = 0; d < Dim; ++d) {
    if (t->size[d] > 0) last += static_cast<long double>(t->size[d] - 1) * t->stride[d];
    if (t->size[d] > std::numeric_limits<IndexT>::max() ||
        t->stride[d] > std::numeric_limits<IndexT>::max())
      THError("toDeviceTensor: sizes or strides too large for the index type");
    sizes[d] = static_cast<IndexT>(t->size[d]);
    strides[d] = static_cast<IndexT>(t->stride[d]);
  }
  if (last > std::numeric_limits<IndexT>::max())
    THError("toDeviceTensor: offsets too large for the index type");
  return THCDeviceTensor<T, Dim, IndexT, PtrTraits>(static_cast<T*>(kfl_th_data(t)), sizes,
                                                    strides);
}

#endif /* KERNFORGE_LEGACY_THC_DEVICE_TENSOR_UTILS_CUH */
