// Half and bfloat16 GEMMs straight through cuBLAS, for the sequence's
// per-step products, whose host time through the C shim's addmm (torch's
// checks, its cuBLASLt call) outweighed their GPU time at (256, 512, 1024)
// and set the step's pace (benchmarks/PERFORMANCE.md). The library is
// torch's own (loaded with torch, found by its soname); this file declares
// the three calls it makes from cuBLAS's documented C API, so the build
// needs no cuBLAS headers. Each thread keeps a handle per device (never
// destroyed: a process's threads that step are few, and a destructor at
// exit may find the driver gone). Float and double stay on the shim, which
// follows torch's TF32 setting.
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <library_types.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda_utils.cuh"

namespace kernforge::cuda {

struct Blas {
  using Create = int (*)(void** handle);
  using SetStream = int (*)(void* handle, cudaStream_t stream);
  using GemmEx = int (*)(void* handle, int transa, int transb, int m, int n, int k,
                         const void* alpha, const void* A, cudaDataType_t Atype, int lda,
                         const void* B, cudaDataType_t Btype, int ldb, const void* beta, void* C,
                         cudaDataType_t Ctype, int ldc, int compute, int algo);
  Create create = nullptr;
  SetStream set_stream = nullptr;
  GemmEx gemm = nullptr;
  // cuBLAS's enum values (cublas_api.h)
  static constexpr int kOpN = 0, kOpT = 1, kCompute32F = 68, kGemmDefault = -1;
};

// The loaded library's entry points, or null (then the caller takes the shim).
inline const Blas* blas() {
  static const Blas* loaded = []() -> const Blas* {
    const std::string name = "libcublas.so." + std::to_string(CUDART_VERSION / 1000);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!lib) lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    static Blas b;
    b.create = reinterpret_cast<Blas::Create>(dlsym(lib, "cublasCreate_v2"));
    b.set_stream = reinterpret_cast<Blas::SetStream>(dlsym(lib, "cublasSetStream_v2"));
    b.gemm = reinterpret_cast<Blas::GemmEx>(dlsym(lib, "cublasGemmEx"));
    return b.create && b.set_stream && b.gemm ? &b : nullptr;
  }();
  return loaded;
}

// This thread's handle on the current device (`device`), made on first use;
// null where none can be made: never inside a stream capture, which a
// handle's allocation would break.
inline void* blas_handle(int32_t device, cudaStream_t stream) {
  constexpr int kDevices = 64;
  thread_local void* handles[kDevices] = {};
  if (device < 0 || device >= kDevices || !blas()) return nullptr;
  if (!handles[device]) {
    if (capturing(stream)) return nullptr;
    void* handle = nullptr;
    if (blas()->create(&handle) != 0) return nullptr;
    handles[device] = handle;
  }
  return handles[device];
}

// One operand of a row-major product: its cuBLAS operation and leading
// dimension for rows x cols at element strides (s0, s1), read column-major;
// false where neither stride is 1 with the other covering the row.
inline bool operand(int64_t rows, int64_t cols, int64_t s0, int64_t s1, int& op, int& ld) {
  if (s1 == 1 && s0 >= std::max<int64_t>(1, cols) && s0 <= INT32_MAX) {
    op = Blas::kOpN;  // row-major rows x cols is column-major cols x rows: its transpose
    ld = static_cast<int>(s0);
    return true;
  }
  if (s0 == 1 && s1 >= std::max<int64_t>(1, rows) && s1 <= INT32_MAX) {
    op = Blas::kOpT;
    ld = static_cast<int>(s1);
    return true;
  }
  return false;
}

// C = beta C + A B for row-major C [M, N], A [M, K], B [K, N] of `type`
// (CUDA_R_16F or CUDA_R_16BF) on `stream`, summed in float, given as
// pointers and element strides. False where cuBLAS is not at hand or a
// layout does not fit: the caller then multiplies by other means.
inline bool gemm_16bit(cudaDataType_t type, int64_t M, int64_t N, int64_t K, const void* A,
                       int64_t sa0, int64_t sa1, const void* B, int64_t sb0, int64_t sb1, void* C,
                       int64_t sc0, int64_t sc1, float beta, int32_t device, cudaStream_t stream) {
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return false;
  int op_a = 0, op_b = 0, op_c = 0, lda = 0, ldb = 0, ldc = 0;
  if (!operand(M, K, sa0, sa1, op_a, lda) || !operand(K, N, sb0, sb1, op_b, ldb) ||
      !operand(M, N, sc0, sc1, op_c, ldc) || op_c != Blas::kOpN)
    return false;
  void* handle = blas_handle(device, stream);
  if (!handle || blas()->set_stream(handle, stream) != 0) return false;
  // Column-major, C^T [N, M] = B^T A^T.
  const float alpha = 1.0f;
  return blas()->gemm(handle, op_b, op_a, static_cast<int>(N), static_cast<int>(M),
                      static_cast<int>(K), &alpha, B, type, ldb, A, type, lda, &beta, C, type, ldc,
                      Blas::kCompute32F, Blas::kGemmDefault) == 0;
}

}  // namespace kernforge::cuda
