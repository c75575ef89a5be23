// TH's and THC's copies between storages (THStorageCopy.h, THCStorageCopy.h),
// for every storage type: all one copy.
#include "THRuntime.h"

extern "C" {

#define KFL_DEFINE_STORAGE_COPY_FROM(Name, Src, S, ...)                             \
  void S##_copy##Name(__VA_ARGS__ S* self, Src* src) {                              \
    need(#S "_copy" #Name, {{self, 1, "self", #S "*"}, {src, 2, "src", #Src "*"}}); \
    storage_copy(self, src, #S "_copy" #Name);                                      \
  }
#define KFL_DEFINE_STORAGE_COPY_API(S, real, dtype, cuda, ...)                    \
  void S##_rawCopy(__VA_ARGS__ S* self, real* src) {                              \
    need(#S "_rawCopy", {{self, 1, "self", #S "*"}});                             \
    storage_raw_copy(self, src, aoti_torch_dtype_##dtype(), cuda, #S "_rawCopy"); \
  }                                                                               \
  void S##_copy(__VA_ARGS__ S* self, S* src) {                                    \
    need(#S "_copy", {{self, 1, "self", #S "*"}, {src, 2, "src", #S "*"}});       \
    storage_copy(self, src, #S "_copy");                                          \
  }                                                                               \
  TH_FORALL_CPU_STORAGE_NAMES(KFL_DEFINE_STORAGE_COPY_FROM, S, __VA_ARGS__)

#define KFL_DEFINE_CPU_STORAGE_COPY(T, S, real, dtype) \
  KFL_DEFINE_STORAGE_COPY_API(S, real, dtype, false, ) \
  size_t S##_elementSize(void) {                       \
    return sizeof(real);                               \
  }
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_STORAGE_COPY)

#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_STORAGE_COPY_FROM_CUDA(Name, Src, S, ...)                            \
  void S##_copyCuda##Name(__VA_ARGS__ S* self, Src* src) {                              \
    need(#S "_copyCuda" #Name, {{self, 1, "self", #S "*"}, {src, 2, "src", #Src "*"}}); \
    storage_copy(self, src, #S "_copyCuda" #Name);                                      \
  }
#define KFL_DEFINE_CUDA_STORAGE_COPY(T, S, real, dtype)                           \
  KFL_DEFINE_STORAGE_COPY_API(S, real, dtype, true, THCState*, )                  \
  TH_FORALL_CUDA_STORAGE_NAMES(KFL_DEFINE_STORAGE_COPY_FROM_CUDA, S, THCState*, ) \
  int S##_elementSize(THCState*) {                                                \
    return static_cast<int>(sizeof(real));                                        \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_STORAGE_COPY)
#define KFL_DEFINE_CPU_STORAGE_FROM_CUDA(T, S, real, dtype) \
  TH_FORALL_CUDA_STORAGE_NAMES(KFL_DEFINE_STORAGE_COPY_FROM_CUDA, S, THCState*, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_STORAGE_FROM_CUDA)
#define KFL_DEFINE_STORAGE_PAIR_COPY(CPU, CUDA)                                          \
  void CUDA##_copyCPU(THCState*, CUDA* self, CPU* src) {                                 \
    need(#CUDA "_copyCPU", {{self, 1, "self", #CUDA "*"}, {src, 2, "src", #CPU "*"}});   \
    storage_copy(self, src, #CUDA "_copyCPU");                                           \
  }                                                                                      \
  void CPU##_copyCuda(THCState*, CPU* self, CUDA* src) {                                 \
    need(#CPU "_copyCuda", {{self, 1, "self", #CPU "*"}, {src, 2, "src", #CUDA "*"}});   \
    storage_copy(self, src, #CPU "_copyCuda");                                           \
  }                                                                                      \
  void CUDA##_copyCuda(THCState*, CUDA* self, CUDA* src) {                               \
    need(#CUDA "_copyCuda", {{self, 1, "self", #CUDA "*"}, {src, 2, "src", #CUDA "*"}}); \
    storage_copy(self, src, #CUDA "_copyCuda");                                          \
  }
TH_FORALL_CPU_CUDA_STORAGE_PAIRS(KFL_DEFINE_STORAGE_PAIR_COPY)
#endif

}  // extern "C"
