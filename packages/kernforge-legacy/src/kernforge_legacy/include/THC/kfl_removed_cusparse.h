/* What 2017 code called of cuSPARSE that CUDA 11 and 12 took away, given
 * back over what replaced it (the runtime library defines them), in float
 * (S) and double (D), with their old arguments and meaning:
 *
 * - csrmv: y = alpha op(A) x + beta y, over cusparseSpMV (a general matrix
 *   only, as before);
 * - csr2csc: the transpose's CSC arrays (the CSR of A^T), over
 *   cusparseCsr2cscEx2;
 * - gthr: xVal[i] = y[xInd[i]], over cusparseGather;
 * - XcsrgeamNnz and csrgeam: C = alpha A + beta B, over csrgeam2;
 * - XcsrgemmNnz and csrgemm: C = A B, over cusparseSpGEMM (op(A) and op(B)
 *   not transposed: cusparseSpGEMM takes no transpose, and the call returns
 *   CUSPARSE_STATUS_NOT_SUPPORTED).
 *
 * The Nnz functions write C's row offsets and its count of entries, which
 * nnzTotalDevHostPtr receives in host or device memory as the handle's
 * pointer mode says; the caller then sizes C's columns and values and makes
 * the second call. Scratch memory comes from torch's allocator. THC/THC.h
 * includes this header. */
#ifndef KERNFORGE_LEGACY_REMOVED_CUSPARSE_H
#define KERNFORGE_LEGACY_REMOVED_CUSPARSE_H

#include <cusparse.h>

#if CUSPARSE_VER_MAJOR >= 12
#ifdef __cplusplus
extern "C" {
#endif

#define KFL_REMOVED_CUSPARSE_API(P, real)                                                         \
  cusparseStatus_t cusparse##P##csrmv(                                                            \
      cusparseHandle_t handle, cusparseOperation_t transA, int m, int n, int nnz,                 \
      const real* alpha, const cusparseMatDescr_t descrA, const real* csrValA,                    \
      const int* csrRowPtrA, const int* csrColIndA, const real* x, const real* beta, real* y);    \
  cusparseStatus_t cusparse##P##csr2csc(                                                          \
      cusparseHandle_t handle, int m, int n, int nnz, const real* csrVal, const int* csrRowPtr,   \
      const int* csrColInd, real* cscVal, int* cscRowInd, int* cscColPtr,                         \
      cusparseAction_t copyValues, cusparseIndexBase_t idxBase);                                  \
  cusparseStatus_t cusparse##P##gthr(cusparseHandle_t handle, int nnz, const real* y, real* xVal, \
                                     const int* xInd, cusparseIndexBase_t idxBase);               \
  cusparseStatus_t cusparse##P##csrgeam(                                                          \
      cusparseHandle_t handle, int m, int n, const real* alpha, const cusparseMatDescr_t descrA,  \
      int nnzA, const real* csrValA, const int* csrRowPtrA, const int* csrColIndA,                \
      const real* beta, const cusparseMatDescr_t descrB, int nnzB, const real* csrValB,           \
      const int* csrRowPtrB, const int* csrColIndB, const cusparseMatDescr_t descrC,              \
      real* csrValC, int* csrRowPtrC, int* csrColIndC);                                           \
  cusparseStatus_t cusparse##P##csrgemm(                                                          \
      cusparseHandle_t handle, cusparseOperation_t transA, cusparseOperation_t transB, int m,     \
      int n, int k, const cusparseMatDescr_t descrA, int nnzA, const real* csrValA,               \
      const int* csrRowPtrA, const int* csrColIndA, const cusparseMatDescr_t descrB, int nnzB,    \
      const real* csrValB, const int* csrRowPtrB, const int* csrColIndB,                          \
      const cusparseMatDescr_t descrC, real* csrValC, const int* csrRowPtrC, int* csrColIndC);
KFL_REMOVED_CUSPARSE_API(S, float)
KFL_REMOVED_CUSPARSE_API(D, double)
#undef KFL_REMOVED_CUSPARSE_API

cusparseStatus_t cusparseXcsrgeamNnz(cusparseHandle_t handle, int m, int n,
                                     const cusparseMatDescr_t descrA, int nnzA,
                                     const int* csrRowPtrA, const int* csrColIndA,
                                     const cusparseMatDescr_t descrB, int nnzB,
                                     const int* csrRowPtrB, const int* csrColIndB,
                                     const cusparseMatDescr_t descrC, int* csrRowPtrC,
                                     int* nnzTotalDevHostPtr);
cusparseStatus_t cusparseXcsrgemmNnz(cusparseHandle_t handle, cusparseOperation_t transA,
                                     cusparseOperation_t transB, int m, int n, int k,
                                     const cusparseMatDescr_t descrA, const int nnzA,
                                     const int* csrRowPtrA, const int* csrColIndA,
                                     const cusparseMatDescr_t descrB, const int nnzB,
                                     const int* csrRowPtrB, const int* csrColIndB,
                                     const cusparseMatDescr_t descrC, int* csrRowPtrC,
                                     int* nnzTotalDevHostPtr);

#ifdef __cplusplus
}
#endif
#endif /* CUSPARSE_VER_MAJOR >= 12 */

#endif
