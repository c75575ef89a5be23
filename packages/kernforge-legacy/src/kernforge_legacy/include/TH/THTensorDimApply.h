/* TH/THTensorDimApply.h: TH's loops over every 1-D slice of tensors along one
 * dimension. In CODE, for each tensor argument T: T_data (a pointer of its
 * TYPE to the slice's first element), T_stride and T_size (along DIMENSION);
 * TH_TENSOR_DIM_APPLY_counter (the position in the other dimensions, from
 * THAlloc: code that raises from inside may THFree it first, as TH's did).
 * The tensors have the same number of dimensions, and in the other
 * dimensions the first one's sizes. */
#ifndef KERNFORGE_LEGACY_TH_TENSOR_DIM_APPLY_H
#define KERNFORGE_LEGACY_TH_TENSOR_DIM_APPLY_H

#include "TH.h"

#define KFL_DIM_APPLY_SLICE(TYPE, TENSOR, DIMENSION)           \
  TYPE* const TENSOR##_kfl_first = (TYPE*)kfl_th_data(TENSOR); \
  TYPE* TENSOR##_data = NULL;                                  \
  int64_t TENSOR##_stride = (TENSOR)->stride[DIMENSION],       \
          TENSOR##_size = (TENSOR)->size[DIMENSION];           \
  (void)TENSOR##_stride;                                       \
  (void)TENSOR##_size; /* CODE may use neither */
#define KFL_DIM_APPLY_POINT(TYPE, TENSOR, DIMENSION)                                    \
  TENSOR##_data =                                                                       \
      TENSOR##_kfl_first + kfl_th_offset((TENSOR)->stride, TH_TENSOR_DIM_APPLY_counter, \
                                         (TENSOR)->nDimension, DIMENSION);
#define KFL_DIM_APPLY_CHECK(TENSOR1, TENSOR, DIMENSION)                                            \
  if ((TENSOR)->nDimension != (TENSOR1)->nDimension)                                               \
    THError("inconsistent tensor sizes: %d and %d dimensions", (TENSOR1)->nDimension,              \
            (TENSOR)->nDimension);                                                                 \
  if (!kfl_th_same_sizes_except((TENSOR1)->size, (TENSOR)->size, (TENSOR)->nDimension, DIMENSION)) \
    THError("inconsistent tensor sizes outside dimension %d", (int)(DIMENSION));
#define KFL_DIM_APPLY_BEGIN(TENSOR1, DIMENSION)                                                \
  int64_t* TH_TENSOR_DIM_APPLY_counter;                                                        \
  int TH_TENSOR_DIM_APPLY_hasFinished;                                                         \
  if ((DIMENSION) < 0 || (DIMENSION) >= (TENSOR1)->nDimension)                                 \
    THError("invalid dimension %d (expected to be 0 <= dim < %d)", (int)(DIMENSION),           \
            (TENSOR1)->nDimension);                                                            \
  TH_TENSOR_DIM_APPLY_counter = (int64_t*)THAlloc(sizeof(int64_t) * (TENSOR1)->nDimension);    \
  TH_TENSOR_DIM_APPLY_hasFinished = kfl_th_first((TENSOR1)->size, TH_TENSOR_DIM_APPLY_counter, \
                                                 (TENSOR1)->nDimension, DIMENSION);
#define KFL_DIM_APPLY_NEXT(TENSOR1, DIMENSION) \
  TH_TENSOR_DIM_APPLY_hasFinished =            \
      kfl_th_next((TENSOR1)->size, TH_TENSOR_DIM_APPLY_counter, (TENSOR1)->nDimension, DIMENSION);

#define TH_TENSOR_DIM_APPLY(TYPE, TENSOR, DIMENSION, CODE) \
  {                                                        \
    KFL_DIM_APPLY_BEGIN(TENSOR, DIMENSION)                 \
    KFL_DIM_APPLY_SLICE(TYPE, TENSOR, DIMENSION)           \
    while (!TH_TENSOR_DIM_APPLY_hasFinished) {             \
      KFL_DIM_APPLY_POINT(TYPE, TENSOR, DIMENSION)         \
      CODE KFL_DIM_APPLY_NEXT(TENSOR, DIMENSION)           \
    }                                                      \
    THFree(TH_TENSOR_DIM_APPLY_counter);                   \
  }

#define TH_TENSOR_DIM_APPLY2(TYPE1, TENSOR1, TYPE2, TENSOR2, DIMENSION, CODE) \
  {                                                                           \
    KFL_DIM_APPLY_BEGIN(TENSOR1, DIMENSION)                                   \
    KFL_DIM_APPLY_CHECK(TENSOR1, TENSOR2, DIMENSION)                          \
    KFL_DIM_APPLY_SLICE(TYPE1, TENSOR1, DIMENSION)                            \
    KFL_DIM_APPLY_SLICE(TYPE2, TENSOR2, DIMENSION)                            \
    while (!TH_TENSOR_DIM_APPLY_hasFinished) {                                \
      KFL_DIM_APPLY_POINT(TYPE1, TENSOR1, DIMENSION)                          \
      KFL_DIM_APPLY_POINT(TYPE2, TENSOR2, DIMENSION)                          \
      CODE KFL_DIM_APPLY_NEXT(TENSOR1, DIMENSION)                             \
    }                                                                         \
    THFree(TH_TENSOR_DIM_APPLY_counter);                                      \
  }

/* SIZE_CHECK(T1, T2, T3, DIMENSION): TH_TENSOR_DIM_APPLY3_SIZE_EQ_EXCEPT_DIM
 * (the sizes agree outside DIMENSION), or a check of the code's own. */
#define TH_TENSOR_DIM_APPLY3_SIZE_EQ_EXCEPT_DIM(TENSOR1, TENSOR2, TENSOR3, DIMENSION) \
  KFL_DIM_APPLY_CHECK(TENSOR1, TENSOR2, DIMENSION)                                    \
  KFL_DIM_APPLY_CHECK(TENSOR1, TENSOR3, DIMENSION)
#define TH_TENSOR_DIM_APPLY3(TYPE1, TENSOR1, TYPE2, TENSOR2, TYPE3, TENSOR3, DIMENSION, \
                             SIZE_CHECK, CODE)                                          \
  {                                                                                     \
    KFL_DIM_APPLY_BEGIN(TENSOR1, DIMENSION)                                             \
    SIZE_CHECK(TENSOR1, TENSOR2, TENSOR3, DIMENSION)                                    \
    KFL_DIM_APPLY_SLICE(TYPE1, TENSOR1, DIMENSION)                                      \
    KFL_DIM_APPLY_SLICE(TYPE2, TENSOR2, DIMENSION)                                      \
    KFL_DIM_APPLY_SLICE(TYPE3, TENSOR3, DIMENSION)                                      \
    while (!TH_TENSOR_DIM_APPLY_hasFinished) {                                          \
      KFL_DIM_APPLY_POINT(TYPE1, TENSOR1, DIMENSION)                                    \
      KFL_DIM_APPLY_POINT(TYPE2, TENSOR2, DIMENSION)                                    \
      KFL_DIM_APPLY_POINT(TYPE3, TENSOR3, DIMENSION)                                    \
      CODE KFL_DIM_APPLY_NEXT(TENSOR1, DIMENSION)                                       \
    }                                                                                   \
    THFree(TH_TENSOR_DIM_APPLY_counter);                                                \
  }

#endif /* KERNFORGE_LEGACY_TH_TENSOR_DIM_APPLY_H */
