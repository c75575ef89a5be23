/* THC/THCAtomics.cuh: atomicAdd for the element types CUDA has none for,
 * as THC gave them: uint8_t, int8_t, int16_t (a compare-and-swap on the
 * aligned 32-bit word around the element) and int64_t (CUDA's 64-bit add,
 * the same bits in two's complement). CUDA itself has atomicAdd for int,
 * unsigned, float, double (sm_60 on) and half (sm_70 on).
 * The narrow adds read and swap back the whole word, the neighbours'
 * bytes unchanged: the word must lie in the allocation, as it does in any
 * of torch's (rounded up to 512 bytes). An array allocated to an exact size
 * that is not a multiple of 4 bytes has its last element's word run past
 * its end, which compute-sanitizer's memcheck reports. */
#ifndef KERNFORGE_LEGACY_THC_ATOMICS_CUH
#define KERNFORGE_LEGACY_THC_ATOMICS_CUH

#include <cuda_runtime.h>

#include <cstdint>

/* *address += val for a 1- or 2-byte T, by its 32-bit word */
template <typename T>
__device__ __forceinline__ void kfl_atomic_add_narrow(T* address, T val) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "narrow types only");
  const size_t offset = reinterpret_cast<size_t>(address) & 3;
  unsigned int* word = reinterpret_cast<unsigned int*>(reinterpret_cast<char*>(address) - offset);
  const unsigned int shift = offset * 8, bits = sizeof(T) * 8;
  const unsigned int field = ((1u << bits) - 1u) << shift;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    const T current = static_cast<T>((assumed & field) >> shift);
    const unsigned int sum =
        static_cast<unsigned int>(static_cast<T>(current + val)) & ((1u << bits) - 1u);
    old = atomicCAS(word, assumed, (assumed & ~field) | (sum << shift));
  } while (assumed != old);
}

static inline __device__ void atomicAdd(uint8_t* address, uint8_t val) {
  kfl_atomic_add_narrow(address, val);
}
static inline __device__ void atomicAdd(int8_t* address, int8_t val) {
  kfl_atomic_add_narrow(address, val);
}
static inline __device__ void atomicAdd(int16_t* address, int16_t val) {
  kfl_atomic_add_narrow(address, val);
}
static inline __device__ void atomicAdd(int64_t* address, int64_t val) {
  atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(val));
}

#endif /* KERNFORGE_LEGACY_THC_ATOMICS_CUH */
