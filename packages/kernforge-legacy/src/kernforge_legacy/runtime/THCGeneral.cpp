// THC's state, devices, streams, cuBLAS and cuSPARSE handles, allocation and error checks
// (THCGeneral.h). Built into the runtime of a CUDA build only.
#include <map>
#include <mutex>

#include "THRuntime.h"

#ifdef KERNFORGE_LEGACY_WITH_CUDA

// The `state` legacy sources declare `extern THCState *state;` for: nothing
// is kept in it, each function asks torch for the current device and stream.
struct THCState {};
namespace {
THCState the_state;

// A failed call of a CUDA library (THCublasCheck, THCusparseCheck): its
// status's name and text, where the code checked it.
[[noreturn]] void library_error(const char* library, const char* name, const char* text,
                                const char* file, int line) {
  throw std::runtime_error(std::string(library) + " error: " + name + ": " + text + " (" +
                           (file ? file : "?") + ":" + std::to_string(line) + ")");
}

// The devices' properties, read on first use; map nodes, so their addresses stay.
std::mutex properties_mutex;
std::unordered_map<int, cudaDeviceProp> device_properties;

// THC's library handles of one kind H (cuBLAS's, cuSPARSE's): 1..n per device
// (n: what THCState_reserve*Handles asked for, 1 at least) and each thread's
// current index (1 unless set), as THC's. Each is made on first use, with its
// device current while `create` (which raises on failure) makes it there,
// and kept for the process (as THC kept them until shutdown; destroying them
// at exit could come after the CUDA context is gone).
template <class H>
class Handles {
 public:
  explicit Handles(void (*create)(H*)) : create_(create) {}

  // handle `index` of `device`; fn names the caller in errors
  H get(THCState* s, int device, int index, const char* fn) {
    check_index(index, fn);
    if (device < 0 || device >= THCState_getNumDevices(s))
      throw std::runtime_error(std::string(fn) + ": no CUDA device " + std::to_string(device));
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = made_.find({device, index});
    if (found != made_.end()) return found->second;
    struct OnDevice {  // `device` current until the handle is made, or its making failed
      int before;
      explicit OnDevice(int device) {
        __THCudaCheck(cudaGetDevice(&before), __FILE__, __LINE__);
        if (before != device) __THCudaCheck(cudaSetDevice(device), __FILE__, __LINE__);
      }
      ~OnDevice() { cudaSetDevice(before); }
    } on_device(device);
    H h;
    create_(&h);
    return made_.emplace(std::make_pair(device, index), h).first->second;
  }

  void check_index(int index, const char* fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index < 1 || index > reserved_)
      throw std::runtime_error(std::string(fn) + ": " + std::to_string(index) +
                               " is not a valid handle, valid range is: (1, " +
                               std::to_string(reserved_) + ")");
  }
  void reserve(int n) {
    std::lock_guard<std::mutex> lock(mutex_);
    reserved_ = std::max(reserved_, n);
  }
  int reserved() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reserved_;
  }
  int current() const { return current_; }
  void set_current(int index, const char* fn) {
    check_index(index, fn);
    current_ = index;
  }

 private:
  void (*create_)(H*);
  std::mutex mutex_;
  std::map<std::pair<int, int>, H> made_;
  int reserved_ = 1;
  static thread_local int current_;
};
template <class H>
thread_local int Handles<H>::current_ = 1;

Handles<cublasHandle_t> blas_handles([](cublasHandle_t* h) {
  __THCublasCheck(cublasCreate(h), __FILE__, __LINE__);
});
Handles<cusparseHandle_t> sparse_handles([](cusparseHandle_t* h) {
  __THCusparseCheck(cusparseCreate(h), __FILE__, __LINE__);
});

// THC's scratch space: per device and stream index (0..reserved streams),
// 4 floats per SM, made on first use with THCudaMalloc and kept
std::mutex scratch_mutex;
std::map<std::pair<int, int>, void*> scratch_spaces;

// THCSetGCHandler's hook: THCudaMalloc calls it once when an allocation
// fails, then tries again, as THC's did
std::mutex gc_mutex;
void (*gc_handler)(void*) = nullptr;
void* gc_data = nullptr;

// THC's streams. The default stream of each device (stream NULL), never
// freed; the streams THCState_reserveStreams asked for (indices 1..n), made
// on first use per device and kept for the process; and per thread and
// device, the stream THCState_setStream made current with torch's stream
// guard (retained while current), never destroyed at exit (the CUDA context
// may be gone by then).
std::mutex stream_mutex;
std::unordered_map<int, THCStream> default_streams;  // nodes: their addresses stay
int reserved_streams = 0;
unsigned int reserved_flags = cudaStreamDefault;
std::unordered_map<int, std::vector<THCStream*>> user_streams;

struct CurrentStream {
  THCStream* stream = nullptr;
  CUDAStreamGuardHandle guard = nullptr;
};
thread_local std::unordered_map<int, CurrentStream>* current_streams =
    new std::unordered_map<int, CurrentStream>();

int current_device(const char* fn) {
  int32_t device;
  check(aoti_torch_get_current_device_index(&device), fn);
  return device;
}

// the device of a tensor's or a storage's memory
int device_index_of(const void* self, const char* fn, const char* type) {
  need(fn, {{self, 1, "self", type}});
  int32_t index;
  check(aoti_torch_get_device_index(handle(self), &index), fn);
  return index;
}

// THCState_setPeerToPeerAccess's choices, by (device, peer); unset: whether
// the device can access the peer (THC enabled every such pair at its start)
std::mutex peer_mutex;
std::map<std::pair<int, int>, bool> peer_access;
int kernel_peer_access = 0;  // off, as THC started

void check_device(int device, const char* fn) {
  int count = 0;
  __THCudaCheck(cudaGetDeviceCount(&count), __FILE__, __LINE__);
  if (device < 0 || device >= count)
    throw std::runtime_error(std::string(fn) + ": " + std::to_string(device) +
                             " is not a device (there are " + std::to_string(count) + ")");
}

THCStream* default_stream(int device) {
  std::lock_guard<std::mutex> lock(stream_mutex);
  auto found = default_streams.find(device);
  if (found == default_streams.end())
    found = default_streams.emplace(device, THCStream{nullptr, device, 1}).first;
  return &found->second;
}

// A new stream on `device` (made current for the call when it is not)
THCStream* new_stream(int device, unsigned int flags, int priority, bool with_priority,
                      const char* fn) {
  if ((flags & ~static_cast<unsigned int>(cudaStreamNonBlocking)) != 0)
    throw std::runtime_error(std::string(fn) +
                             ": flags must be cudaStreamDefault (0) or cudaStreamNonBlocking (1), "
                             "got " +
                             std::to_string(flags));
  int current;
  __THCudaCheck(cudaGetDevice(&current), __FILE__, __LINE__);
  if (current != device) __THCudaCheck(cudaSetDevice(device), __FILE__, __LINE__);
  cudaStream_t s = nullptr;
  const cudaError_t err = with_priority ? cudaStreamCreateWithPriority(&s, flags, priority)
                                        : cudaStreamCreateWithFlags(&s, flags);
  if (current != device) __THCudaCheck(cudaSetDevice(current), __FILE__, __LINE__);
  if (err != cudaSuccess) {
    cudaGetLastError();  // taken: torch's next launch check would see it as its own
    throw std::runtime_error(std::string(fn) + ": " + cudaGetErrorName(err) + ": " +
                             cudaGetErrorString(err));
  }
  return new THCStream{s, device, 1};
}

// The reserved stream `index` (1..n) of `device`, made on first use
THCStream* reserved_stream(int device, int index, const char* fn) {
  check_device(device, fn);
  std::unique_lock<std::mutex> lock(stream_mutex);
  if (index < 0 || index > reserved_streams)
    throw std::runtime_error(std::string(fn) + ": " + std::to_string(index) +
                             " is not a valid stream, valid range is: (0, " +
                             std::to_string(reserved_streams) + ")");
  if (index == 0) {
    lock.unlock();
    return default_stream(device);
  }
  std::vector<THCStream*>& streams = user_streams[device];
  while (static_cast<int>(streams.size()) < index)
    streams.push_back(new_stream(device, reserved_flags, 0, false, fn));
  return streams[index - 1];
}

// s (NULL: torch's stream from before) made current on `device` for this thread
void make_current(int device, THCStream* s, const char* fn) {
  CurrentStream& cur = (*current_streams)[device];
  if (s != nullptr && s->stream != nullptr) {
    CUDAStreamGuardHandle guard = nullptr;
    if (cur.guard != nullptr) check(aoti_torch_delete_cuda_stream_guard(cur.guard), fn);
    cur.guard = nullptr;
    check(aoti_torch_create_cuda_stream_guard(s->stream, device, &guard), fn);
    THCStream_retain(s);
    THCStream_free(cur.stream);
    cur = {s, guard};
    return;
  }
  if (cur.guard != nullptr) check(aoti_torch_delete_cuda_stream_guard(cur.guard), fn);
  THCStream_free(cur.stream);
  cur = {};
}

}  // namespace

extern "C" {

THCState* state = &the_state;

THCStream* THCStream_new(int flags) {
  return new_stream(current_device("THCStream_new"), static_cast<unsigned int>(flags), 0, false,
                    "THCStream_new");
}

THCStream* THCStream_newWithPriority(int flags, int priority) {
  return new_stream(current_device("THCStream_newWithPriority"), static_cast<unsigned int>(flags),
                    priority, true, "THCStream_newWithPriority");
}

THCStream* THCStream_defaultStream(int device) {
  check_device(device, "THCStream_defaultStream");
  return default_stream(device);
}

void THCStream_retain(THCStream* self) {
  need("THCStream_retain", {{self, 1, "self", "THCStream*"}});
  if (self->stream != nullptr) __atomic_add_fetch(&self->refcount, 1, __ATOMIC_RELAXED);
}

void THCStream_free(THCStream* self) {
  if (self == nullptr || self->stream == nullptr) return;  // NULL, or a default stream
  if (__atomic_sub_fetch(&self->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
    if (cudaStreamDestroy(self->stream) != cudaSuccess) cudaGetLastError();
    delete self;
  }
}

THCStream* THCState_getStream(THCState*) {
  const int device = current_device("THCState_getStream");
  const auto found = current_streams->find(device);
  if (found != current_streams->end() && found->second.stream != nullptr) {
    void* torch_stream;
    check(aoti_torch_get_current_cuda_stream(device, &torch_stream), "THCState_getStream");
    if (torch_stream == found->second.stream->stream) return found->second.stream;
  }
  return default_stream(device);
}

void THCState_setStream(THCState*, THCStream* stream) {
  const char* fn = "THCState_setStream";
  const int device = current_device(fn);
  if (stream != nullptr && stream->stream != nullptr && stream->device != device)
    throw std::runtime_error(std::string(fn) + ": the stream is on device " +
                             std::to_string(stream->device) + ", the current device is " +
                             std::to_string(device));
  make_current(device, stream, fn);
}

void THCState_reserveStreams(THCState*, int numStreams, int nonBlocking) {
  if (numStreams < 0)
    throw std::runtime_error("THCState_reserveStreams: numStreams must be >= 0, got " +
                             std::to_string(numStreams));
  std::lock_guard<std::mutex> lock(stream_mutex);
  if (numStreams <= reserved_streams) return;
  reserved_streams = numStreams;
  reserved_flags = nonBlocking ? cudaStreamNonBlocking : cudaStreamDefault;
}

int THCState_getNumStreams(THCState*) {
  std::lock_guard<std::mutex> lock(stream_mutex);
  return reserved_streams;
}

cudaStream_t THCState_getDeviceStream(THCState*, int device, int stream) {
  return reserved_stream(device, stream, "THCState_getDeviceStream")->stream;
}

int THCState_getCurrentStreamIndex(THCState*) {
  const int device = current_device("THCState_getCurrentStreamIndex");
  void* torch_stream;
  check(aoti_torch_get_current_cuda_stream(device, &torch_stream),
        "THCState_getCurrentStreamIndex");
  if (torch_stream == nullptr) return 0;
  std::lock_guard<std::mutex> lock(stream_mutex);
  const std::vector<THCStream*>& streams = user_streams[device];
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i]->stream == torch_stream) return static_cast<int>(i) + 1;
  return -1;
}

// The current device's only (THC set every device's): torch's stream guard
// makes its stream's device current.
void THCState_setCurrentStreamIndex(THCState*, int stream) {
  const char* fn = "THCState_setCurrentStreamIndex";
  const int device = current_device(fn);
  make_current(device, reserved_stream(device, stream, fn), fn);
}

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
  std::lock_guard<std::mutex> lock(properties_mutex);
  auto found = device_properties.find(device);
  if (found == device_properties.end()) {
    cudaDeviceProp prop;
    __THCudaCheck(cudaGetDeviceProperties(&prop, device), __FILE__, __LINE__);
    found = device_properties.emplace(device, prop).first;
  }
  return &found->second;
}

// THC.h's THC_HANDLE_API of one library: its handles (a Handles), the
// library's set-stream call and its status check.
#define KFL_DEFINE_HANDLE_API(Kind, H, handles, set_stream, status_check)                          \
  H THCState_getDevice##Kind##Handle(THCState* s, int device, int index) {                         \
    H h = handles.get(s, device, index, "THCState_getDevice" #Kind "Handle");                      \
    status_check(set_stream(h, THCState_getCurrentStreamOnDevice(s, device)), __FILE__, __LINE__); \
    return h;                                                                                      \
  }                                                                                                \
  H THCState_getCurrent##Kind##Handle(THCState* s) {                                               \
    return THCState_getDevice##Kind##Handle(s, THCState_getCurrentDevice(s), handles.current());   \
  }                                                                                                \
  void THCState_reserve##Kind##Handles(THCState*, int n) {                                         \
    handles.reserve(n);                                                                            \
  }                                                                                                \
  int THCState_getNum##Kind##Handles(THCState*) {                                                  \
    return handles.reserved();                                                                     \
  }                                                                                                \
  int THCState_getCurrent##Kind##HandleIndex(THCState*) {                                          \
    return handles.current();                                                                      \
  }                                                                                                \
  void THCState_setCurrent##Kind##HandleIndex(THCState*, int handle) {                             \
    handles.set_current(handle, "THCState_setCurrent" #Kind "HandleIndex");                        \
  }
KFL_DEFINE_HANDLE_API(Blas, cublasHandle_t, blas_handles, cublasSetStream, __THCublasCheck)
KFL_DEFINE_HANDLE_API(Sparse, cusparseHandle_t, sparse_handles, cusparseSetStream,
                      __THCusparseCheck)
#undef KFL_DEFINE_HANDLE_API

// torch.linalg needs no MAGMA started
void THCMagma_init(THCState*) {}

size_t THCState_getDeviceScratchSpaceSize(THCState*, int device) {
  check_device(device, "THCState_getDeviceScratchSpaceSize");
  int sms = 0;
  __THCudaCheck(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), __FILE__,
                __LINE__);
  return static_cast<size_t>(sms) * 4 * sizeof(float);
}

size_t THCState_getCurrentDeviceScratchSpaceSize(THCState* s) {
  return THCState_getDeviceScratchSpaceSize(s, THCState_getCurrentDevice(s));
}

void* THCState_getDeviceScratchSpace(THCState* s, int device, int stream) {
  const char* fn = "THCState_getDeviceScratchSpace";
  reserved_stream(device, stream, fn);  // checks the device and the index
  const size_t size = THCState_getDeviceScratchSpaceSize(s, device);
  std::lock_guard<std::mutex> lock(scratch_mutex);
  void*& space = scratch_spaces[{device, stream}];
  if (space == nullptr) {
    int current;
    __THCudaCheck(cudaGetDevice(&current), __FILE__, __LINE__);
    if (current != device) __THCudaCheck(cudaSetDevice(device), __FILE__, __LINE__);
    space = kfl_thc_malloc(s, size);
    if (current != device) __THCudaCheck(cudaSetDevice(current), __FILE__, __LINE__);
  }
  return space;
}

// NULL on a stream that is not one of the reserved ones, as THC's
void* THCState_getCurrentDeviceScratchSpace(THCState* s) {
  const int stream = THCState_getCurrentStreamIndex(s);
  return stream < 0 ? nullptr
                    : THCState_getDeviceScratchSpace(s, THCState_getCurrentDevice(s), stream);
}

void THCSetGCHandler(THCState*, void (*cutorchGCFunction)(void* data), void* data) {
  std::lock_guard<std::mutex> lock(gc_mutex);
  gc_handler = cutorchGCFunction;
  gc_data = data;
}

// THC's heap accounting fed its Lua collector; torch counts its own memory
void THCHeapUpdate(THCState*, ptrdiff_t) {}

void __THCublasCheck(cublasStatus_t status, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    library_error("cuBLAS", cublasGetStatusName(status), cublasGetStatusString(status), file, line);
}

void __THCusparseCheck(cusparseStatus_t status, const char* file, int line) {
  if (status != CUSPARSE_STATUS_SUCCESS)
    library_error("cuSPARSE", cusparseGetErrorName(status), cusparseGetErrorString(status), file,
                  line);
}

int THCState_getNumDevices(THCState*) {
  int count = 0;
  __THCudaCheck(cudaGetDeviceCount(&count), __FILE__, __LINE__);
  return count;
}

}  // extern "C"

namespace {

// THC's texture object over a float tensor's elements (for tex1Dfetch: 2^27
// elements at most), which the caller destroys; THC made them of float
// tensors only
cudaTextureObject_t texture_object(const void* self, bool is_float, const char* fn,
                                   const char* type) {
  need(fn, {{self, 1, "self", type}});
  if (!is_float)
    throw std::runtime_error(std::string(fn) +
                             ": THC made texture objects of float tensors (THCudaTensor) only");
  const Tensor t = borrow(self);
  if (!t.is_contiguous())
    throw std::runtime_error(std::string(fn) + ": the tensor must be contiguous");
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = t.data_ptr();
  resource.res.linear.sizeInBytes = static_cast<size_t>(t.numel()) * sizeof(float);
  resource.res.linear.desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaTextureDesc texture{};
  cudaTextureObject_t object = 0;
  const cudaError_t err = cudaCreateTextureObject(&object, &resource, &texture, nullptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(
        std::string(fn) + ": failed to create a texture object of " + std::to_string(t.numel()) +
        " elements" + (t.numel() > (int64_t{1} << 27) ? " (more than tex1Dfetch's 2^27)" : "") +
        ": " + cudaGetErrorString(err));
  }
  return object;
}

}  // namespace

extern "C" {

#define KFL_DEFINE_DEVICE_API(T, S, real, dtype)                                              \
  cudaTextureObject_t T##_getTextureObject(THCState*, T* self) {                              \
    return texture_object(self, std::is_same_v<real, float>, #T "_getTextureObject", #T "*"); \
  }                                                                                           \
  int T##_getDevice(THCState*, const T* self) {                                               \
    return device_index_of(self, #T "_getDevice", #T "*");                                    \
  }                                                                                           \
  int S##_getDevice(THCState*, const S* storage) {                                            \
    return device_index_of(storage, #S "_getDevice", #S "*");                                 \
  }                                                                                           \
  int T##_checkGPU(THCState* s, unsigned int n_tensors, ...) {                                \
    const int current = THCState_getCurrentDevice(s);                                         \
    va_list args;                                                                             \
    va_start(args, n_tensors);                                                                \
    int same = 1;                                                                             \
    for (unsigned int i = 0; i < n_tensors; i++) {                                            \
      const T* t = va_arg(args, const T*);                                                    \
      if (t != nullptr && T##_getDevice(s, t) != current) same = 0;                           \
    }                                                                                         \
    va_end(args);                                                                             \
    return same;                                                                              \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_DEVICE_API)

void __THCudaCheck(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  if (file == nullptr) file = "?";
  cudaGetLastError();  // a launch error is taken, so the next check does not see it again
  throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorName(err) + ": " +
                           cudaGetErrorString(err) + " (" + file + ":" + std::to_string(line) +
                           ")");
}

void __THCudaCheckWarn(cudaError_t err, const char* file, int line) {
  if (err == cudaSuccess) return;
  if (file == nullptr) file = "?";
  cudaGetLastError();
  std::fprintf(stderr, "THCudaCheckWarn FAIL file=%s line=%i error=%i : %s\n", file, line,
               static_cast<int>(err), cudaGetErrorString(err));
}

void* kfl_thc_malloc(THCState*, size_t size) {
  // torch sets its caching allocator up with CUDA, on its first CUDA
  // tensor; a THC extension may allocate before the process made one
  static std::once_flag started;
  std::call_once(started, [] { empty({1}, aoti_torch_dtype_float32(), true, "THCudaMalloc"); });
  void* ptr = nullptr;
  if (size == 0 || aoti_torch_cuda_caching_allocator_raw_alloc(size, &ptr) == AOTI_TORCH_SUCCESS)
    return ptr;
  void (*handler)(void*);
  void* data;
  {
    std::lock_guard<std::mutex> lock(gc_mutex);
    handler = gc_handler;
    data = gc_data;
  }
  if (handler != nullptr) handler(data);
  check(aoti_torch_cuda_caching_allocator_raw_alloc(size, &ptr), "THCudaMalloc");  // once more
  return ptr;
}

cudaError_t kfl_thc_malloc_into(THCState* s, void** ptr, size_t size) {
  *ptr = kfl_thc_malloc(s, size);
  return cudaSuccess;
}

// A state of one's own (THCState_alloc, THCudaInit): torch started CUDA, and
// the runtime keeps nothing in a state, so any state works as THC's global one
THCState* THCState_alloc(void) {
  return new THCState();
}
void THCState_free(THCState* s) {
  if (s != state) delete s;
}
void THCudaInit(THCState*) {}
void THCudaShutdown(THCState*) {}

int THCState_getPeerToPeerAccess(THCState*, int dev, int devToAccess) {
  const char* fn = "THCState_getPeerToPeerAccess";
  check_device(dev, fn);
  check_device(devToAccess, fn);
  if (dev == devToAccess) return 1;
  {
    std::lock_guard<std::mutex> lock(peer_mutex);
    auto found = peer_access.find({dev, devToAccess});
    if (found != peer_access.end()) return found->second;
  }
  int can = 0;
  __THCudaCheck(cudaDeviceCanAccessPeer(&can, dev, devToAccess), __FILE__, __LINE__);
  return can;
}
// enables or disables dev's access to devToAccess's memory
// (cudaDeviceEnablePeerAccess / DisablePeerAccess on dev)
void THCState_setPeerToPeerAccess(THCState*, int dev, int devToAccess, int enable) {
  const char* fn = "THCState_setPeerToPeerAccess";
  check_device(dev, fn);
  check_device(devToAccess, fn);
  if (dev == devToAccess) return;
  int current;
  __THCudaCheck(cudaGetDevice(&current), __FILE__, __LINE__);
  __THCudaCheck(cudaSetDevice(dev), __FILE__, __LINE__);
  cudaError_t err = enable ? cudaDeviceEnablePeerAccess(devToAccess, 0)
                           : cudaDeviceDisablePeerAccess(devToAccess);
  if (err == cudaErrorPeerAccessAlreadyEnabled || err == cudaErrorPeerAccessNotEnabled) {
    cudaGetLastError();
    err = cudaSuccess;
  }
  __THCudaCheck(cudaSetDevice(current), __FILE__, __LINE__);
  __THCudaCheck(err, __FILE__, __LINE__);
  std::lock_guard<std::mutex> lock(peer_mutex);
  peer_access[{dev, devToAccess}] = enable != 0;
}
// a flag kept for code that asks: torch's ops check devices themselves
int THCState_getKernelPeerToPeerAccessEnabled(THCState*) {
  return kernel_peer_access;
}
void THCState_setKernelPeerToPeerAccessEnabled(THCState*, int val) {
  kernel_peer_access = val != 0;
}

// torch's caching allocator serves THCudaMalloc
int THCState_isCachingAllocatorEnabled(THCState*) {
  return 1;
}

// pinned host memory (cudaHostAlloc; THC cached it, torch's cache is not in
// its stable ABI); freeing waits for the device first, so recording a stream
// has nothing to do
void* THCudaHostAlloc(THCState*, size_t size) {
  void* ptr = nullptr;
  if (size > 0) __THCudaCheck(cudaHostAlloc(&ptr, size, cudaHostAllocDefault), __FILE__, __LINE__);
  return ptr;
}
void THCudaHostFree(THCState*, void* ptr) {
  if (ptr == nullptr) return;
  __THCudaCheck(cudaDeviceSynchronize(), __FILE__, __LINE__);  // copies from it may be in flight
  __THCudaCheck(cudaFreeHost(ptr), __FILE__, __LINE__);
}
void THCudaHostRecord(THCState*, void*) {}

// free and total bytes of the current device: cudaMemGetInfo's, and its
// error returned, as THC's (whose free bytes also counted its own caching
// allocator's unused blocks: torch's stable ABI gives no such figure)
cudaError_t THCudaMemGetInfo(THCState*, size_t* freeBytes, size_t* totalBytes) {
  need("THCudaMemGetInfo",
       {{freeBytes, 1, "freeBytes", "size_t*"}, {totalBytes, 2, "totalBytes", "size_t*"}});
  return cudaMemGetInfo(freeBytes, totalBytes);
}

cudaError_t THCudaFree(THCState*, void* ptr) {
  if (ptr != nullptr) check(aoti_torch_cuda_caching_allocator_raw_delete(ptr), "THCudaFree");
  return cudaSuccess;
}

}  // extern "C"

namespace kernforge_legacy {

void check_launches(const char* fn) {
  const cudaError_t err = cudaGetLastError();  // taken, as __THCudaCheck takes it
  if (err == cudaSuccess) return;
  std::string message = std::string(fn) +
                        ": a CUDA kernel it launched did not run: " + cudaGetErrorName(err) + ": " +
                        cudaGetErrorString(err);
  int device = 0, major = 0, minor = 0;
  if (err == cudaErrorNoKernelImageForDevice && cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
    const std::string sm = std::to_string(major) + std::to_string(minor);
    message += " (its kernels were compiled for other GPUs: compile the .cu files with -arch=sm_" +
               sm + " for this one)";
  }
  throw std::runtime_error(message);
}

}  // namespace kernforge_legacy

#endif  // KERNFORGE_LEGACY_WITH_CUDA
