/* THCUNN/common.h: the checks and launch sizes THCUNN's modules shared, for
 * CUDA sources that copied them. In a THC generic file (THCTensor_ names the
 * type being generated):
 *   THCUNN_assertSameGPU(state, n, t1, ..., tn)  the tensors on one device
 *   THCUNN_check_shape(state, I1, I2)            same sizes (either NULL: no check)
 *   THCUNN_check_nElement(state, I1, I2)         as many elements
 *   THCUNN_check_dim_size(state, T, DIM, DIM_SIZE, SIZE)
 *                                                T has DIM dimensions, size SIZE at DIM_SIZE
 *   THCUNN_argCheck(state, COND, ARG, T, FORMAT) as THArgCheck, FORMAT's %s T's shape
 * each raising (as THError) with both shapes in the message; and
 * CUDA_NUM_THREADS (1024) with GET_BLOCKS(n) blocks of them. */
#ifndef KERNFORGE_LEGACY_THCUNN_COMMON_H
#define KERNFORGE_LEGACY_THCUNN_COMMON_H

#include "../THC/THC.h"

#define THCUNN_assertSameGPU(...)                                                     \
  THAssertMsg(THCTensor_(checkGPU)(__VA_ARGS__),                                      \
              "Some of weight/gradient/input tensors are located on different GPUs. " \
              "Please move them to a single one.")

#define CUDA_NUM_THREADS 1024
static inline int GET_BLOCKS(const int n) {
  return (n + CUDA_NUM_THREADS - 1) / CUDA_NUM_THREADS;
}

#define THCUNN_check_shape(STATE, I1, I2)                                                    \
  if (I1 != NULL && I2 != NULL && !THCTensor_(isSameSizeAs)(STATE, I1, I2)) {                \
    THCDescBuff s1 = THCTensor_(sizeDesc)(STATE, I1);                                        \
    THCDescBuff s2 = THCTensor_(sizeDesc)(STATE, I2);                                        \
    THError(#I1 " and " #I2 " shapes do not match: " #I1 " %s, " #I2 " %s", s1.str, s2.str); \
  }

#define THCUNN_check_nElement(STATE, I1, I2)                             \
  if (I1 != NULL && I2 != NULL) {                                        \
    ptrdiff_t n1 = THCTensor_(nElement)(STATE, I1);                      \
    ptrdiff_t n2 = THCTensor_(nElement)(STATE, I2);                      \
    if (n1 != n2) {                                                      \
      THCDescBuff s1 = THCTensor_(sizeDesc)(STATE, I1);                  \
      THCDescBuff s2 = THCTensor_(sizeDesc)(STATE, I2);                  \
      THError(#I1 " and " #I2 " have different number of elements: " #I1 \
                  "%s has %ld elements, "                                \
                  "while " #I2 "%s has %ld elements",                    \
              s1.str, (long)n1, s2.str, (long)n2);                       \
    }                                                                    \
  }

#define THCUNN_check_dim_size(STATE, T, DIM, DIM_SIZE, SIZE)                                     \
  if (THCTensor_(nDimension)(STATE, T) != DIM || THCTensor_(size)(STATE, T, DIM_SIZE) != SIZE) { \
    THCDescBuff s1 = THCTensor_(sizeDesc)(STATE, T);                                             \
    THError("Need " #T " of dimension %d and " #T ".size[%d] == %d but got " #T                  \
            " to be of shape: %s",                                                               \
            DIM, DIM_SIZE, SIZE, s1.str);                                                        \
  }

#define THCUNN_argCheck(STATE, COND, ARG, T, FORMAT) \
  if (!(COND)) {                                     \
    THCDescBuff s1 = THCTensor_(sizeDesc)(STATE, T); \
    THArgCheck(COND, ARG, FORMAT, s1.str);           \
  }

#endif /* KERNFORGE_LEGACY_THCUNN_COMMON_H */
