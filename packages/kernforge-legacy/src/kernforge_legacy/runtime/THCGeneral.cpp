// THC's state, devices, streams, cuBLAS handles, allocation and error checks
// (THCGeneral.h). Built into the runtime of a CUDA build only.
#include "THRuntime.h"

#ifdef KERNFORGE_LEGACY_WITH_CUDA

// The `state` legacy sources declare `extern THCState *state;` for: nothing
// is kept in it, each function asks torch for the current device and stream.
struct THCState {};
namespace {
THCState the_state;

// THC's cuBLAS handles and device properties, one of each per device, made
// on first use and kept for the process (as THC kept them until shutdown;
// destroying them at exit could come after the CUDA context is gone).
std::mutex per_device_mutex;
std::unordered_map<int, cublasHandle_t> blas_handles;
std::unordered_map<int, cudaDeviceProp> device_properties;  // nodes: their addresses stay

// The current device's, or `device`'s with it made current while cuBLAS
// creates the handle there.
cublasHandle_t blas_handle(int device) {
  std::lock_guard<std::mutex> lock(per_device_mutex);
  auto found = blas_handles.find(device);
  if (found != blas_handles.end()) return found->second;
  int current;
  kfl_thc_check(cudaGetDevice(&current), __FILE__, __LINE__);
  if (current != device) kfl_thc_check(cudaSetDevice(device), __FILE__, __LINE__);
  cublasHandle_t h;
  const cublasStatus_t status = cublasCreate(&h);
  if (current != device) kfl_thc_check(cudaSetDevice(current), __FILE__, __LINE__);
  kfl_thc_cublas_check(status, __FILE__, __LINE__);
  return blas_handles.emplace(device, h).first->second;
}

}  // namespace

extern "C" {

THCState* state = &the_state;

cudaStream_t THCState_getCurrentStream(THCState*) {
  int32_t device;
  void* stream;
  check(aoti_torch_get_current_device_index(&device), "THCState_getCurrentStream");
  check(aoti_torch_get_current_cuda_stream(device, &stream), "THCState_getCurrentStream");
  return static_cast<cudaStream_t>(stream);
}

cudaStream_t THCState_getCurrentStreamOnDevice(THCState*, int device) {
  void* stream;
  check(aoti_torch_get_current_cuda_stream(device, &stream), "THCState_getCurrentStreamOnDevice");
  return static_cast<cudaStream_t>(stream);
}

int THCState_getCurrentDevice(THCState*) {
  int32_t device;
  check(aoti_torch_get_current_device_index(&device), "THCState_getCurrentDevice");
  return device;
}

struct cudaDeviceProp* THCState_getCurrentDeviceProperties(THCState* s) {
  const int device = THCState_getCurrentDevice(s);
  std::lock_guard<std::mutex> lock(per_device_mutex);
  auto found = device_properties.find(device);
  if (found == device_properties.end()) {
    cudaDeviceProp prop;
    kfl_thc_check(cudaGetDeviceProperties(&prop, device), __FILE__, __LINE__);
    found = device_properties.emplace(device, prop).first;
  }
  return &found->second;
}

cublasHandle_t THCState_getDeviceBlasHandle(THCState* s, int device, int index) {
  if (index != 1)
    throw std::runtime_error("THCState_getDeviceBlasHandle: handle " + std::to_string(index) +
                             " does not exist (there is one per device, handle 1)");
  if (device < 0 || device >= THCState_getNumDevices(s))
    throw std::runtime_error("THCState_getDeviceBlasHandle: no CUDA device " +
                             std::to_string(device));
  cublasHandle_t h = blas_handle(device);
  kfl_thc_cublas_check(cublasSetStream(h, THCState_getCurrentStreamOnDevice(s, device)), __FILE__,
                       __LINE__);
  return h;
}

cublasHandle_t THCState_getCurrentBlasHandle(THCState* s) {
  return THCState_getDeviceBlasHandle(s, THCState_getCurrentDevice(s), 1);
}

int THCState_getNumBlasHandles(THCState*) {
  return 1;
}

int THCState_getCurrentBlasHandleIndex(THCState*) {
  return 1;
}

void kfl_thc_cublas_check(cublasStatus_t status, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw std::runtime_error(std::string("cuBLAS error: ") + cublasGetStatusName(status) + ": " +
                           cublasGetStatusString(status) + " (" + file + ":" +
                           std::to_string(line) + ")");
}

int THCState_getNumDevices(THCState*) {
  int count = 0;
  kfl_thc_check(cudaGetDeviceCount(&count), __FILE__, __LINE__);
  return count;
}

#define KFL_DEFINE_DEVICE_API(T, S, real, dtype)                               \
  int T##_getDevice(THCState*, const T* self) {                                \
    need(#T "_getDevice", {{self, 1, "self", #T "*"}});                        \
    int32_t index;                                                             \
    check(aoti_torch_get_device_index(handle(self), &index), #T "_getDevice"); \
    return index;                                                              \
  }                                                                            \
  int T##_checkGPU(THCState* s, unsigned int n_tensors, ...) {                 \
    const int current = THCState_getCurrentDevice(s);                          \
    va_list args;                                                              \
    va_start(args, n_tensors);                                                 \
    int same = 1;                                                              \
    for (unsigned int i = 0; i < n_tensors; i++) {                             \
      const T* t = va_arg(args, const T*);                                     \
      if (t != nullptr && T##_getDevice(s, t) != current) same = 0;            \
    }                                                                          \
    va_end(args);                                                              \
    return same;                                                               \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_DEVICE_API)

void kfl_thc_check(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // a launch error is taken, so the next check does not see it again
  throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err) + " (" + file + ":" + std::to_string(line) +
                           ")");
}

void kfl_thc_check_warn(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  std::fprintf(stderr, "THCudaCheckWarn FAIL file=%s line=%i error=%i : %s\n", file, line,
               static_cast<int>(err), cudaGetErrorString(err));
}

void* kfl_thc_malloc(THCState*, size_t size) {
  void* ptr = nullptr;
  if (size > 0) check(aoti_torch_cuda_caching_allocator_raw_alloc(size, &ptr), "THCudaMalloc");
  return ptr;
}

cudaError_t kfl_thc_malloc_into(THCState* s, void** ptr, size_t size) {
  *ptr = kfl_thc_malloc(s, size);
  return cudaSuccess;
}

cudaError_t THCudaFree(THCState*, void* ptr) {
  if (ptr != nullptr) check(aoti_torch_cuda_caching_allocator_raw_delete(ptr), "THCudaFree");
  return cudaSuccess;
}

}  // extern "C"

#endif  // KERNFORGE_LEGACY_WITH_CUDA
