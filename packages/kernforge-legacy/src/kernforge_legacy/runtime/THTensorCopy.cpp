// TH's and THC's copies between tensor types and devices (THTensorCopy.h,
// THCTensorCopy.h): all one copy.
#include "THRuntime.h"

extern "C" {

// Cross-type copies (TH.h's TH_COPY_FROM), and THC's (THC.h): all one copy.
#define KFL_DEFINE_COPY_FROM(Name, Src, T, ...)                                     \
  void T##_copy##Name(__VA_ARGS__ T* self, Src* src) {                              \
    need(#T "_copy" #Name, {{self, 1, "self", #T "*"}, {src, 2, "src", #Src "*"}}); \
    copy_into(self, src, #T "_copy" #Name);                                         \
  }
#define KFL_DEFINE_CPU_COPY(T, S, real, dtype) TH_FORALL_CPU_NAMES(KFL_DEFINE_COPY_FROM, T, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_COPY)

#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_COPY_FROM_CUDA(Name, Src, T, ...)                                    \
  void T##_copyCuda##Name(__VA_ARGS__ T* self, Src* src) {                              \
    need(#T "_copyCuda" #Name, {{self, 1, "self", #T "*"}, {src, 2, "src", #Src "*"}}); \
    copy_into(self, src, #T "_copyCuda" #Name);                                         \
  }
#define KFL_DEFINE_CUDA_COPY(T, S, real, dtype)                                             \
  TH_FORALL_CPU_NAMES(KFL_DEFINE_COPY_FROM, T, THCState*, )                                 \
  TH_FORALL_CUDA_NAMES(KFL_DEFINE_COPY_FROM_CUDA, T, THCState*, )                           \
  void T##_copyIgnoringOverlaps(THCState*, T* self, T* src) {                               \
    need(#T "_copyIgnoringOverlaps", {{self, 1, "self", #T "*"}, {src, 2, "src", #T "*"}}); \
    copy_into(self, src, #T "_copyIgnoringOverlaps");                                       \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_COPY)
#define KFL_DEFINE_CPU_FROM_CUDA(T, S, real, dtype) \
  TH_FORALL_CUDA_NAMES(KFL_DEFINE_COPY_FROM_CUDA, T, THCState*, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_FROM_CUDA)
#define KFL_DEFINE_PAIR_COPY(CPU, CUDA)                                                     \
  void CUDA##_copyCPU(THCState*, CUDA* self, CPU* src) {                                    \
    need(#CUDA "_copyCPU", {{self, 1, "self", #CUDA "*"}, {src, 2, "src", #CPU "*"}});      \
    copy_into(self, src, #CUDA "_copyCPU");                                                 \
  }                                                                                         \
  void CUDA##_copyAsyncCPU(THCState*, CUDA* self, CPU* src) {                               \
    need(#CUDA "_copyAsyncCPU", {{self, 1, "self", #CUDA "*"}, {src, 2, "src", #CPU "*"}}); \
    copy_into(self, src, #CUDA "_copyAsyncCPU");                                            \
  }                                                                                         \
  void CPU##_copyCuda(THCState*, CPU* self, CUDA* src) {                                    \
    need(#CPU "_copyCuda", {{self, 1, "self", #CPU "*"}, {src, 2, "src", #CUDA "*"}});      \
    copy_into(self, src, #CPU "_copyCuda");                                                 \
  }                                                                                         \
  void CPU##_copyAsyncCuda(THCState*, CPU* self, CUDA* src) {                               \
    need(#CPU "_copyAsyncCuda", {{self, 1, "self", #CPU "*"}, {src, 2, "src", #CUDA "*"}}); \
    copy_into(self, src, #CPU "_copyAsyncCuda");                                            \
  }                                                                                         \
  void CUDA##_copyCuda(THCState*, CUDA* self, CUDA* src) {                                  \
    need(#CUDA "_copyCuda", {{self, 1, "self", #CUDA "*"}, {src, 2, "src", #CUDA "*"}});    \
    copy_into(self, src, #CUDA "_copyCuda");                                                \
  }
TH_FORALL_CPU_CUDA_PAIRS(KFL_DEFINE_PAIR_COPY)
#endif

}  // extern "C"
