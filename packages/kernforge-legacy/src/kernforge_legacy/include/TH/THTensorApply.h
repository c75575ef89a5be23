/* TH/THTensorApply.h: TH's loops over every element of tensors, each in its
 * own order (row-major over its sizes, through its strides). In CODE, for
 * each tensor argument T, T_data points to its current element (of its
 * TYPE). The tensors have one number of elements; `break` in CODE ends the
 * loop. */
#ifndef KERNFORGE_LEGACY_TH_TENSOR_APPLY_H
#define KERNFORGE_LEGACY_TH_TENSOR_APPLY_H

#include "TH.h"

#define KFL_APPLY_BEGIN(TYPE, TENSOR)                                                             \
  TYPE* const TENSOR##_kfl_first = (TYPE*)kfl_th_data(TENSOR);                                    \
  TYPE* TENSOR##_data = NULL;                                                                     \
  int64_t* TENSOR##_counter =                                                                     \
      (int64_t*)THAlloc(sizeof(int64_t) * ((TENSOR)->nDimension > 0 ? (TENSOR)->nDimension : 1)); \
  kfl_th_first((TENSOR)->size, TENSOR##_counter, (TENSOR)->nDimension, -1);
#define KFL_APPLY_SAME_COUNT(TENSOR1, TENSOR)                                              \
  if (kfl_th_numel(TENSOR) != kfl_th_numel(TENSOR1))                                       \
    THError("inconsistent tensor size: %ld and %ld elements", (long)kfl_th_numel(TENSOR1), \
            (long)kfl_th_numel(TENSOR));
#define KFL_APPLY_POINT(TYPE, TENSOR)  \
  TENSOR##_data = TENSOR##_kfl_first + \
                  kfl_th_offset((TENSOR)->stride, TENSOR##_counter, (TENSOR)->nDimension, -1);
#define KFL_APPLY_NEXT(TENSOR) \
  kfl_th_next((TENSOR)->size, TENSOR##_counter, (TENSOR)->nDimension, -1);

#define TH_TENSOR_APPLY(TYPE, TENSOR, CODE)                                                   \
  {                                                                                           \
    int64_t TH_TENSOR_APPLY_i, TH_TENSOR_APPLY_n = kfl_th_numel(TENSOR);                      \
    KFL_APPLY_BEGIN(TYPE, TENSOR)                                                             \
    for (TH_TENSOR_APPLY_i = 0; TH_TENSOR_APPLY_i < TH_TENSOR_APPLY_n; TH_TENSOR_APPLY_i++) { \
      KFL_APPLY_POINT(TYPE, TENSOR)                                                           \
      CODE KFL_APPLY_NEXT(TENSOR)                                                             \
    }                                                                                         \
    THFree(TENSOR##_counter);                                                                 \
  }

#define TH_TENSOR_APPLY2(TYPE1, TENSOR1, TYPE2, TENSOR2, CODE)                                  \
  {                                                                                             \
    int64_t TH_TENSOR_APPLY_i, TH_TENSOR_APPLY_n = kfl_th_numel(TENSOR1);                       \
    KFL_APPLY_SAME_COUNT(TENSOR1, TENSOR2) {                                                    \
      KFL_APPLY_BEGIN(TYPE1, TENSOR1)                                                           \
      KFL_APPLY_BEGIN(TYPE2, TENSOR2)                                                           \
      for (TH_TENSOR_APPLY_i = 0; TH_TENSOR_APPLY_i < TH_TENSOR_APPLY_n; TH_TENSOR_APPLY_i++) { \
        KFL_APPLY_POINT(TYPE1, TENSOR1)                                                         \
        KFL_APPLY_POINT(TYPE2, TENSOR2)                                                         \
        CODE KFL_APPLY_NEXT(TENSOR1) KFL_APPLY_NEXT(TENSOR2)                                    \
      }                                                                                         \
      THFree(TENSOR1##_counter);                                                                \
      THFree(TENSOR2##_counter);                                                                \
    }                                                                                           \
  }

#define TH_TENSOR_APPLY3(TYPE1, TENSOR1, TYPE2, TENSOR2, TYPE3, TENSOR3, CODE)                  \
  {                                                                                             \
    int64_t TH_TENSOR_APPLY_i, TH_TENSOR_APPLY_n = kfl_th_numel(TENSOR1);                       \
    KFL_APPLY_SAME_COUNT(TENSOR1, TENSOR2)                                                      \
    KFL_APPLY_SAME_COUNT(TENSOR1, TENSOR3) {                                                    \
      KFL_APPLY_BEGIN(TYPE1, TENSOR1)                                                           \
      KFL_APPLY_BEGIN(TYPE2, TENSOR2)                                                           \
      KFL_APPLY_BEGIN(TYPE3, TENSOR3)                                                           \
      for (TH_TENSOR_APPLY_i = 0; TH_TENSOR_APPLY_i < TH_TENSOR_APPLY_n; TH_TENSOR_APPLY_i++) { \
        KFL_APPLY_POINT(TYPE1, TENSOR1)                                                         \
        KFL_APPLY_POINT(TYPE2, TENSOR2)                                                         \
        KFL_APPLY_POINT(TYPE3, TENSOR3)                                                         \
        CODE KFL_APPLY_NEXT(TENSOR1) KFL_APPLY_NEXT(TENSOR2) KFL_APPLY_NEXT(TENSOR3)            \
      }                                                                                         \
      THFree(TENSOR1##_counter);                                                                \
      THFree(TENSOR2##_counter);                                                                \
      THFree(TENSOR3##_counter);                                                                \
    }                                                                                           \
  }

#endif /* KERNFORGE_LEGACY_TH_TENSOR_APPLY_H */
