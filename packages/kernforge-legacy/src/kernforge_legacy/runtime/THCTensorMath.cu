// One-pass CUDA kernels for THC math that torch's C shims can only do in two
// (their add returns a new tensor, which would then be copied into r):
// r = a + alpha * b, or r = a + c, over contiguous tensors of one type.
// Built with nvcc into the runtime library of a CUDA build.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

namespace {

template <class T>
struct Math {  // float, double and the integer types compute in their own type
  using acc = T;
  static __device__ acc load(T v) { return v; }
  static __device__ T store(acc v) { return v; }
};
template <>
struct Math<__half> {
  using acc = float;
  static __device__ float load(__half v) { return __half2float(v); }
  static __device__ __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Math<__nv_bfloat16> {
  using acc = float;
  static __device__ float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

constexpr int kThreads = 256;

// integers through int64_t: a negative double converted straight to an
// unsigned type is undefined; through int64_t it wraps, as C's arithmetic
template <class A>
__device__ A to_acc(double v) {
  if constexpr (std::is_integral_v<A>)
    return static_cast<A>(static_cast<int64_t>(v));
  else
    return static_cast<A>(v);
}

// VEC elements per thread and step: 16-byte loads and stores when every
// pointer is 16-byte aligned (VEC = 16 / sizeof(T)), else VEC = 1.
template <class T, int VEC>
__global__ void axpy_kernel(T* __restrict__ r, const T* a, const T* b, double alpha, double c,
                            int64_t n) {
  using M = Math<T>;
  using acc = typename M::acc;
  struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
  };
  const acc al = to_acc<acc>(alpha), cc = to_acc<acc>(c);
  const int64_t packs = n / VEC;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs;
       i += step) {
    const Pack pa = reinterpret_cast<const Pack*>(a)[i];
    Pack pb;
    if (b != nullptr) pb = reinterpret_cast<const Pack*>(b)[i];
    Pack out;
#pragma unroll
    for (int j = 0; j < VEC; j++)
      out.v[j] =
          M::store(b != nullptr ? M::load(pa.v[j]) + al * M::load(pb.v[j]) : M::load(pa.v[j]) + cc);
    reinterpret_cast<Pack*>(r)[i] = out;
  }
  // the tail of fewer than VEC elements
  const int64_t tail = packs * VEC + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (tail < n)
    r[tail] =
        M::store(b != nullptr ? M::load(a[tail]) + al * M::load(b[tail]) : M::load(a[tail]) + cc);
}

template <class T>
cudaError_t launch(void* r, const void* a, const void* b, double alpha, double c, int64_t n,
                   cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const auto aligned = [](const void* p) {
    return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0;
  };
  const bool vec = aligned(r) && aligned(a) && aligned(b);
  int device, sms;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return err;
  const int64_t work = vec ? n / kVec : n;
  int64_t blocks = (work + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(sms) * 16;  // a grid-stride loop beyond this
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  T* out = static_cast<T*>(r);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  if (vec)
    axpy_kernel<T, kVec>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(out, x, y, alpha, c, n);
  else
    axpy_kernel<T, 1>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(out, x, y, alpha, c, n);
  return cudaGetLastError();
}

}  // namespace

// r = a + alpha * b elementwise (b NULL: r = a + c), n elements of
// `kind` (0 float, 1 double, 2 half, 3 bfloat16, 4 uint8, 5 int8, 6 int16,
// 7 int32, 8 int64), contiguous, on `stream`; integers wrap around as C's.
extern "C" cudaError_t kfl_cuda_axpy(int kind, void* r, const void* a, const void* b, double alpha,
                                     double c, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (kind) {
    case 0: return launch<float>(r, a, b, alpha, c, n, stream);
    case 1: return launch<double>(r, a, b, alpha, c, n, stream);
    case 2: return launch<__half>(r, a, b, alpha, c, n, stream);
    case 3: return launch<__nv_bfloat16>(r, a, b, alpha, c, n, stream);
    case 4: return launch<uint8_t>(r, a, b, alpha, c, n, stream);
    case 5: return launch<int8_t>(r, a, b, alpha, c, n, stream);
    case 6: return launch<int16_t>(r, a, b, alpha, c, n, stream);
    case 7: return launch<int32_t>(r, a, b, alpha, c, n, stream);
    case 8: return launch<int64_t>(r, a, b, alpha, c, n, stream);
    default: return cudaErrorInvalidValue;
  }
}
