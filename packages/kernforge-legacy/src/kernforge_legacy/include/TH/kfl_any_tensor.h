/* torch 0.4.1 made every tensor type one C type (THTensor), and C++ written
 * for it calls one type's shape queries on a tensor of another type:
 * warp-transducer's binding (2018) reads a THCudaTensor's sizes with
 * THFloatTensor_size. C lets such a call through with a warning; C++ refuses
 * it. These overloads, in C++ only, take a tensor of any TH or THC type for
 * the queries that read no element, which answer alike for every type (every
 * handle has the layout of TH_TENSOR_FIELDS). TH.h and THC.h declare them for
 * each of their types. */
#ifndef KERNFORGE_LEGACY_ANY_TENSOR_H
#define KERNFORGE_LEGACY_ANY_TENSOR_H

#ifdef __cplusplus
extern "C++" { /* also where a C++ source includes TH.h inside its own extern "C" */
#include <type_traits>

/* a TH or THC tensor handle: what has a handle's tensor and strides */
template <class T, class = void>
struct kfl_is_tensor : std::false_type {};
template <class T>
struct kfl_is_tensor<T, decltype((void)&T::kfl_tensor, (void)&T::stride)> : std::true_type {};
}

#define KFL_UNPAREN(...) __VA_ARGS__
#define KFL_IF_TENSORS()          \
  template <class A, class B = A, \
            class =               \
                typename std::enable_if<kfl_is_tensor<A>::value && kfl_is_tensor<B>::value>::type>

/* T's queries on any tensor; PARAMS and ARGS, parenthesized: the leading
 * parameters and their names ((THCState* state,) and (state,) for THC). */
#define KFL_ANY_TENSOR_QUERIES(T, PARAMS, ARGS)                                           \
  KFL_IF_TENSORS() inline ptrdiff_t T##_nElement(KFL_UNPAREN PARAMS const A* self) {      \
    return T##_nElement(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self));               \
  }                                                                                       \
  KFL_IF_TENSORS() inline int T##_nDimension(KFL_UNPAREN PARAMS const A* self) {          \
    return T##_nDimension(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self));             \
  }                                                                                       \
  KFL_IF_TENSORS() inline int T##__nDimension(KFL_UNPAREN PARAMS const A* self) {         \
    return T##__nDimension(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self));            \
  }                                                                                       \
  KFL_IF_TENSORS() inline int64_t T##_size(KFL_UNPAREN PARAMS const A* self, int dim) {   \
    return T##_size(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self), dim);              \
  }                                                                                       \
  KFL_IF_TENSORS() inline int64_t T##_stride(KFL_UNPAREN PARAMS const A* self, int dim) { \
    return T##_stride(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self), dim);            \
  }                                                                                       \
  KFL_IF_TENSORS() inline int T##_isContiguous(KFL_UNPAREN PARAMS const A* self) {        \
    return T##_isContiguous(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self));           \
  }                                                                                       \
  KFL_IF_TENSORS() inline ptrdiff_t T##_storageOffset(KFL_UNPAREN PARAMS const A* self) { \
    return T##_storageOffset(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self));          \
  }                                                                                       \
  KFL_IF_TENSORS() inline THDescBuff T##_sizeDesc(KFL_UNPAREN PARAMS const A* self) {     \
    return T##_sizeDesc(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self));               \
  }                                                                                       \
  KFL_IF_TENSORS()                                                                        \
  inline int T##_isSameSizeAs(KFL_UNPAREN PARAMS const A* self, const B* other) {         \
    return T##_isSameSizeAs(KFL_UNPAREN ARGS reinterpret_cast<const T*>(self),            \
                            reinterpret_cast<const T*>(other));                           \
  }

#endif /* __cplusplus */
#endif /* KERNFORGE_LEGACY_ANY_TENSOR_H */
