// cuSPARSE's functions that CUDA 11 and 12 removed, over what replaced them
// (THC/kfl_removed_cusparse.h says which). Built into the runtime of a CUDA
// build only.
#include "THRuntime.h"

#ifdef KERNFORGE_LEGACY_WITH_CUDA

extern THCState* state;

namespace {

template <class real>
cudaDataType value_type();
template <>
cudaDataType value_type<float>() {
  return CUDA_R_32F;
}
template <>
cudaDataType value_type<double>() {
  return CUDA_R_64F;
}

// Device memory of torch's allocator for one call (none for 0 bytes).
struct Scratch {
  void* p = nullptr;
  explicit Scratch(size_t bytes) {
    if (bytes > 0) p = kfl_thc_malloc(state, bytes);
  }
  ~Scratch() {
    if (p != nullptr) THCudaFree(state, p);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// A descriptor of the generic API, destroyed with the call.
template <class D, auto destroy>
struct Owned {
  D d = nullptr;
  ~Owned() {
    if (d != nullptr) destroy(d);
  }
};
using SpMat = Owned<cusparseSpMatDescr_t, cusparseDestroySpMat>;
using DnVec = Owned<cusparseDnVecDescr_t, cusparseDestroyDnVec>;
using SpVec = Owned<cusparseSpVecDescr_t, cusparseDestroySpVec>;
using SpGEMM = Owned<cusparseSpGEMMDescr_t, cusparseSpGEMM_destroyDescr>;

// The handle's pointer mode, set to host for the scalars this file passes
// itself, and given back after.
struct HostScalars {
  cusparseHandle_t handle;
  cusparsePointerMode_t before = CUSPARSE_POINTER_MODE_HOST;
  explicit HostScalars(cusparseHandle_t h) : handle(h) {
    cusparseGetPointerMode(h, &before);
    cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_HOST);
  }
  ~HostScalars() { cusparseSetPointerMode(handle, before); }
};

#define KFL_TRY(call)                                             \
  do {                                                            \
    const cusparseStatus_t kfl_status = (call);                   \
    if (kfl_status != CUSPARSE_STATUS_SUCCESS) return kfl_status; \
  } while (0)

cudaStream_t stream_of(cusparseHandle_t h) {
  cudaStream_t s = nullptr;
  cusparseGetStream(h, &s);
  return s;
}

// A CSR matrix of the generic API over the old API's arrays.
cusparseStatus_t csr(SpMat& mat, int rows, int cols, int nnz, const int* row_ptr,
                     const int* col_ind, const void* values, cusparseMatDescr_t descr,
                     cudaDataType type) {
  return cusparseCreateCsr(&mat.d, rows, cols, nnz, const_cast<int*>(row_ptr),
                           const_cast<int*>(col_ind), const_cast<void*>(values), CUSPARSE_INDEX_32I,
                           CUSPARSE_INDEX_32I, cusparseGetMatIndexBase(descr), type);
}

// C = A B by cusparseSpGEMMreuse, whose steps match the old API's two: the
// structure (C's row offsets, nnz_c its count of entries, and its columns
// into col_ind_c) without values, then with val_a, val_b and val_c given
// the values. Where col_ind_c or val_c is NULL (the Nnz call) they go to
// scratch memory. (cusparseSpGEMM's default algorithm refused a product of
// two 100000 x 100000 matrices of 10000 entries, automatting's test, with
// INSUFFICIENT_RESOURCES.)
cusparseStatus_t spgemm(cusparseHandle_t h, cusparseOperation_t op_a, cusparseOperation_t op_b,
                        int m, int n, int k, cusparseMatDescr_t descr_a, int nnz_a,
                        const void* val_a, const int* row_ptr_a, const int* col_ind_a,
                        cusparseMatDescr_t descr_b, int nnz_b, const void* val_b,
                        const int* row_ptr_b, const int* col_ind_b, cusparseMatDescr_t descr_c,
                        void* val_c, int* row_ptr_c, int* col_ind_c, cudaDataType type,
                        size_t value_size, int64_t* nnz_c) {
  if (op_a != CUSPARSE_OPERATION_NON_TRANSPOSE || op_b != CUSPARSE_OPERATION_NON_TRANSPOSE)
    return CUSPARSE_STATUS_NOT_SUPPORTED;
  // the structure's steps read no values; the descriptors get memory anyway
  Scratch values_a(val_a ? 0 : std::max(nnz_a, 1) * value_size);
  Scratch values_b(val_b ? 0 : std::max(nnz_b, 1) * value_size);
  if (val_a == nullptr) val_a = values_a.p;
  if (val_b == nullptr) val_b = values_b.p;
  SpMat a, b, c;
  KFL_TRY(csr(a, m, k, nnz_a, row_ptr_a, col_ind_a, val_a, descr_a, type));
  KFL_TRY(csr(b, k, n, nnz_b, row_ptr_b, col_ind_b, val_b, descr_b, type));
  KFL_TRY(csr(c, m, n, 0, nullptr, nullptr, nullptr, descr_c, type));
  const cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_DEFAULT;
  SpGEMM d;
  KFL_TRY(cusparseSpGEMM_createDescr(&d.d));
  size_t size1 = 0, size2 = 0, size3 = 0, size4 = 0, size5 = 0;
  KFL_TRY(
      cusparseSpGEMMreuse_workEstimation(h, op_a, op_b, a.d, b.d, c.d, alg, d.d, &size1, nullptr));
  Scratch work1(size1);
  KFL_TRY(
      cusparseSpGEMMreuse_workEstimation(h, op_a, op_b, a.d, b.d, c.d, alg, d.d, &size1, work1.p));
  KFL_TRY(cusparseSpGEMMreuse_nnz(h, op_a, op_b, a.d, b.d, c.d, alg, d.d, &size2, nullptr, &size3,
                                  nullptr, &size4, nullptr));
  Scratch work2(size2), work3(size3), work4(size4);
  KFL_TRY(cusparseSpGEMMreuse_nnz(h, op_a, op_b, a.d, b.d, c.d, alg, d.d, &size2, work2.p, &size3,
                                  work3.p, &size4, work4.p));
  int64_t rows, cols;
  KFL_TRY(cusparseSpMatGetSize(c.d, &rows, &cols, nnz_c));
  Scratch cols_c(col_ind_c ? 0 : std::max<int64_t>(*nnz_c, 1) * sizeof(int));
  Scratch vals_c(val_c ? 0 : std::max<int64_t>(*nnz_c, 1) * value_size);
  KFL_TRY(cusparseCsrSetPointers(c.d, row_ptr_c, col_ind_c ? col_ind_c : cols_c.p,
                                 val_c ? val_c : vals_c.p));
  KFL_TRY(cusparseSpGEMMreuse_copy(h, op_a, op_b, a.d, b.d, c.d, alg, d.d, &size5, nullptr));
  Scratch work5(size5);
  // The copy's scan reads one int of this buffer that nothing writes, at
  // element nnz_c (an exclusive scan's last input, which no output uses):
  // compute-sanitizer initcheck reported it in every extension calling
  // csrgemm, with correct results. Zeroing the buffer first silences it
  // (H200, the nvidia wheel's libcusparse.so.12, 2026-12-04).
  if (work5.p != nullptr)
    __THCudaCheck(cudaMemsetAsync(work5.p, 0, size5, stream_of(h)), __FILE__, __LINE__);
  KFL_TRY(cusparseSpGEMMreuse_copy(h, op_a, op_b, a.d, b.d, c.d, alg, d.d, &size5, work5.p));
  if (val_c == nullptr) return CUSPARSE_STATUS_SUCCESS;  // the structure was asked for
  HostScalars host(h);
  const double one_d = 1, zero_d = 0;
  const float one_f = 1, zero_f = 0;
  const void* one = type == CUDA_R_64F ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = type == CUDA_R_64F ? static_cast<const void*>(&zero_d) : &zero_f;
  return cusparseSpGEMMreuse_compute(h, op_a, op_b, one, a.d, b.d, zero, c.d, type, alg, d.d);
}

// An Nnz function's count, to host or device memory as the handle's
// pointer mode says.
void give_count(cusparseHandle_t h, int count, int* where) {
  if (where == nullptr) return;
  cusparsePointerMode_t mode = CUSPARSE_POINTER_MODE_HOST;
  cusparseGetPointerMode(h, &mode);
  if (mode == CUSPARSE_POINTER_MODE_HOST) {
    *where = count;
    return;
  }
  cudaStream_t stream = stream_of(h);
  __THCudaCheck(cudaMemcpyAsync(where, &count, sizeof(int), cudaMemcpyHostToDevice, stream),
                __FILE__, __LINE__);
  __THCudaCheck(cudaStreamSynchronize(stream), __FILE__, __LINE__);  // `count` is on this stack
}

template <class real>
cusparseStatus_t csrmv(cusparseHandle_t h, cusparseOperation_t op, int m, int n, int nnz,
                       const real* alpha, cusparseMatDescr_t descr, const real* val,
                       const int* row_ptr, const int* col_ind, const real* x, const real* beta,
                       real* y) {
  if (cusparseGetMatType(descr) != CUSPARSE_MATRIX_TYPE_GENERAL)
    return CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED;
  const cudaDataType type = value_type<real>();
  const bool transposed = op != CUSPARSE_OPERATION_NON_TRANSPOSE;
  SpMat a;
  DnVec vx, vy;
  KFL_TRY(csr(a, m, n, nnz, row_ptr, col_ind, val, descr, type));
  KFL_TRY(cusparseCreateDnVec(&vx.d, transposed ? m : n, const_cast<real*>(x), type));
  KFL_TRY(cusparseCreateDnVec(&vy.d, transposed ? n : m, y, type));
  size_t size = 0;
  KFL_TRY(cusparseSpMV_bufferSize(h, op, alpha, a.d, vx.d, beta, vy.d, type,
                                  CUSPARSE_SPMV_ALG_DEFAULT, &size));
  Scratch work(size);
  return cusparseSpMV(h, op, alpha, a.d, vx.d, beta, vy.d, type, CUSPARSE_SPMV_ALG_DEFAULT, work.p);
}

template <class real>
cusparseStatus_t csr2csc(cusparseHandle_t h, int m, int n, int nnz, const real* csr_val,
                         const int* row_ptr, const int* col_ind, real* csc_val, int* row_ind,
                         int* col_ptr, cusparseAction_t copy, cusparseIndexBase_t base) {
  const cudaDataType type = value_type<real>();
  const cusparseCsr2CscAlg_t alg = CUSPARSE_CSR2CSC_ALG1;
  size_t size = 0;
  KFL_TRY(cusparseCsr2cscEx2_bufferSize(h, m, n, nnz, csr_val, row_ptr, col_ind, csc_val, col_ptr,
                                        row_ind, type, copy, base, alg, &size));
  Scratch work(size);
  return cusparseCsr2cscEx2(h, m, n, nnz, csr_val, row_ptr, col_ind, csc_val, col_ptr, row_ind,
                            type, copy, base, alg, work.p);
}

template <class real>
cusparseStatus_t gthr(cusparseHandle_t h, int nnz, const real* y, real* x_val, const int* x_ind,
                      cusparseIndexBase_t base) {
  if (nnz == 0) return CUSPARSE_STATUS_SUCCESS;
  const cudaDataType type = value_type<real>();
  // the old call gave no length of y: as long as an int index reaches
  const int64_t length = std::numeric_limits<int>::max();
  SpVec x;
  DnVec vy;
  KFL_TRY(cusparseCreateSpVec(&x.d, length, nnz, const_cast<int*>(x_ind), x_val, CUSPARSE_INDEX_32I,
                              base, type));
  KFL_TRY(cusparseCreateDnVec(&vy.d, length, const_cast<real*>(y), type));
  return cusparseGather(h, vy.d, x.d);
}

// csrgeam2 of each value type: its workspace's size, and the sum
template <class real>
struct Geam2;
template <>
struct Geam2<float> {
  static constexpr auto buffer_size = cusparseScsrgeam2_bufferSizeExt;
  static constexpr auto compute = cusparseScsrgeam2;
};
template <>
struct Geam2<double> {
  static constexpr auto buffer_size = cusparseDcsrgeam2_bufferSizeExt;
  static constexpr auto compute = cusparseDcsrgeam2;
};

// C = alpha A + beta B over csrgeam2, with its workspace
template <class real>
cusparseStatus_t csrgeam(cusparseHandle_t h, int m, int n, const real* alpha, cusparseMatDescr_t da,
                         int nnz_a, const real* va, const int* ra, const int* ca, const real* beta,
                         cusparseMatDescr_t db, int nnz_b, const real* vb, const int* rb,
                         const int* cb, cusparseMatDescr_t dc, real* vc, int* rc, int* cc) {
  size_t size = 0;
  KFL_TRY(Geam2<real>::buffer_size(h, m, n, alpha, da, nnz_a, va, ra, ca, beta, db, nnz_b, vb, rb,
                                   cb, dc, vc, rc, cc, &size));
  Scratch work(size);
  return Geam2<real>::compute(h, m, n, alpha, da, nnz_a, va, ra, ca, beta, db, nnz_b, vb, rb, cb,
                              dc, vc, rc, cc, work.p);
}

template <class real>
cusparseStatus_t csrgemm(cusparseHandle_t h, cusparseOperation_t op_a, cusparseOperation_t op_b,
                         int m, int n, int k, cusparseMatDescr_t da, int nnz_a, const real* va,
                         const int* ra, const int* ca, cusparseMatDescr_t db, int nnz_b,
                         const real* vb, const int* rb, const int* cb, cusparseMatDescr_t dc,
                         real* vc, const int* rc, int* cc) {
  int64_t nnz_c = 0;
  return spgemm(h, op_a, op_b, m, n, k, da, nnz_a, va, ra, ca, db, nnz_b, vb, rb, cb, dc, vc,
                const_cast<int*>(rc), cc, value_type<real>(), sizeof(real), &nnz_c);
}

}  // namespace

extern "C" {

#define KFL_DEFINE_REMOVED_CUSPARSE(P, real)                                                       \
  cusparseStatus_t cusparse##P##csrmv(                                                             \
      cusparseHandle_t handle, cusparseOperation_t transA, int m, int n, int nnz,                  \
      const real* alpha, const cusparseMatDescr_t descrA, const real* csrValA,                     \
      const int* csrRowPtrA, const int* csrColIndA, const real* x, const real* beta, real* y) {    \
    return csrmv<real>(handle, transA, m, n, nnz, alpha, descrA, csrValA, csrRowPtrA, csrColIndA,  \
                       x, beta, y);                                                                \
  }                                                                                                \
  cusparseStatus_t cusparse##P##csr2csc(                                                           \
      cusparseHandle_t handle, int m, int n, int nnz, const real* csrVal, const int* csrRowPtr,    \
      const int* csrColInd, real* cscVal, int* cscRowInd, int* cscColPtr,                          \
      cusparseAction_t copyValues, cusparseIndexBase_t idxBase) {                                  \
    return csr2csc<real>(handle, m, n, nnz, csrVal, csrRowPtr, csrColInd, cscVal, cscRowInd,       \
                         cscColPtr, copyValues, idxBase);                                          \
  }                                                                                                \
  cusparseStatus_t cusparse##P##gthr(cusparseHandle_t handle, int nnz, const real* y, real* xVal,  \
                                     const int* xInd, cusparseIndexBase_t idxBase) {               \
    return gthr<real>(handle, nnz, y, xVal, xInd, idxBase);                                        \
  }                                                                                                \
  cusparseStatus_t cusparse##P##csrgeam(                                                           \
      cusparseHandle_t handle, int m, int n, const real* alpha, const cusparseMatDescr_t descrA,   \
      int nnzA, const real* csrValA, const int* csrRowPtrA, const int* csrColIndA,                 \
      const real* beta, const cusparseMatDescr_t descrB, int nnzB, const real* csrValB,            \
      const int* csrRowPtrB, const int* csrColIndB, const cusparseMatDescr_t descrC,               \
      real* csrValC, int* csrRowPtrC, int* csrColIndC) {                                           \
    return csrgeam<real>(handle, m, n, alpha, descrA, nnzA, csrValA, csrRowPtrA, csrColIndA, beta, \
                         descrB, nnzB, csrValB, csrRowPtrB, csrColIndB, descrC, csrValC,           \
                         csrRowPtrC, csrColIndC);                                                  \
  }                                                                                                \
  cusparseStatus_t cusparse##P##csrgemm(                                                           \
      cusparseHandle_t handle, cusparseOperation_t transA, cusparseOperation_t transB, int m,      \
      int n, int k, const cusparseMatDescr_t descrA, int nnzA, const real* csrValA,                \
      const int* csrRowPtrA, const int* csrColIndA, const cusparseMatDescr_t descrB, int nnzB,     \
      const real* csrValB, const int* csrRowPtrB, const int* csrColIndB,                           \
      const cusparseMatDescr_t descrC, real* csrValC, const int* csrRowPtrC, int* csrColIndC) {    \
    return csrgemm<real>(handle, transA, transB, m, n, k, descrA, nnzA, csrValA, csrRowPtrA,       \
                         csrColIndA, descrB, nnzB, csrValB, csrRowPtrB, csrColIndB, descrC,        \
                         csrValC, csrRowPtrC, csrColIndC);                                         \
  }
KFL_DEFINE_REMOVED_CUSPARSE(S, float)
KFL_DEFINE_REMOVED_CUSPARSE(D, double)
#undef KFL_DEFINE_REMOVED_CUSPARSE

cusparseStatus_t cusparseXcsrgeamNnz(cusparseHandle_t handle, int m, int n,
                                     const cusparseMatDescr_t descrA, int nnzA,
                                     const int* csrRowPtrA, const int* csrColIndA,
                                     const cusparseMatDescr_t descrB, int nnzB,
                                     const int* csrRowPtrB, const int* csrColIndB,
                                     const cusparseMatDescr_t descrC, int* csrRowPtrC,
                                     int* nnzTotalDevHostPtr) {
  size_t size = 0;
  {
    HostScalars host(handle);  // the workspace's size, without values (host scalars)
    const float one = 1;
    KFL_TRY(cusparseScsrgeam2_bufferSizeExt(
        handle, m, n, &one, descrA, nnzA, nullptr, csrRowPtrA, csrColIndA, &one, descrB, nnzB,
        nullptr, csrRowPtrB, csrColIndB, descrC, nullptr, csrRowPtrC, nullptr, &size));
  }
  Scratch work(size);
  return cusparseXcsrgeam2Nnz(handle, m, n, descrA, nnzA, csrRowPtrA, csrColIndA, descrB, nnzB,
                              csrRowPtrB, csrColIndB, descrC, csrRowPtrC, nnzTotalDevHostPtr,
                              work.p);
}

cusparseStatus_t cusparseXcsrgemmNnz(cusparseHandle_t handle, cusparseOperation_t transA,
                                     cusparseOperation_t transB, int m, int n, int k,
                                     const cusparseMatDescr_t descrA, const int nnzA,
                                     const int* csrRowPtrA, const int* csrColIndA,
                                     const cusparseMatDescr_t descrB, const int nnzB,
                                     const int* csrRowPtrB, const int* csrColIndB,
                                     const cusparseMatDescr_t descrC, int* csrRowPtrC,
                                     int* nnzTotalDevHostPtr) {
  int64_t nnz_c = 0;
  KFL_TRY(spgemm(handle, transA, transB, m, n, k, descrA, nnzA, nullptr, csrRowPtrA, csrColIndA,
                 descrB, nnzB, nullptr, csrRowPtrB, csrColIndB, descrC, nullptr, csrRowPtrC,
                 nullptr, CUDA_R_32F, sizeof(float), &nnz_c));
  give_count(handle, static_cast<int>(nnz_c), nnzTotalDevHostPtr);
  return CUSPARSE_STATUS_SUCCESS;
}

}  // extern "C"

#endif  // KERNFORGE_LEGACY_WITH_CUDA
