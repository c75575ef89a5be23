// TH's atomic operations (THAtomic.h) on int, long and ptrdiff_t, with the
// compiler's atomic builtins (sequentially consistent, as TH's C11 backend).
#include "THRuntime.h"

namespace {

template <class V>
volatile V* checked(volatile V* a, const char* fn) {
  if (a == nullptr) throw std::runtime_error(std::string(fn) + ": a is NULL");
  return a;
}

}  // namespace

extern "C" {

#define KFL_DEFINE_ATOMIC(Suffix, V)                                                            \
  void THAtomicSet##Suffix(V volatile* a, V newvalue) {                                         \
    __atomic_store_n(checked(a, "THAtomicSet" #Suffix), newvalue, __ATOMIC_SEQ_CST);            \
  }                                                                                             \
  V THAtomicGet##Suffix(V volatile* a) {                                                        \
    return __atomic_load_n(checked(a, "THAtomicGet" #Suffix), __ATOMIC_SEQ_CST);                \
  }                                                                                             \
  V THAtomicAdd##Suffix(V volatile* a, V value) {                                               \
    return __atomic_fetch_add(checked(a, "THAtomicAdd" #Suffix), value, __ATOMIC_SEQ_CST);      \
  }                                                                                             \
  V THAtomicCompareAndSwap##Suffix(V volatile* a, V oldvalue, V newvalue) {                     \
    return __atomic_compare_exchange_n(checked(a, "THAtomicCompareAndSwap" #Suffix), &oldvalue, \
                                       newvalue, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);    \
  }
KFL_DEFINE_ATOMIC(, int)
KFL_DEFINE_ATOMIC(Long, long)
KFL_DEFINE_ATOMIC(Ptrdiff, ptrdiff_t)

void THAtomicIncrementRef(int volatile* a) {
  __atomic_add_fetch(checked(a, "THAtomicIncrementRef"), 1, __ATOMIC_SEQ_CST);
}

int THAtomicDecrementRef(int volatile* a) {
  return __atomic_sub_fetch(checked(a, "THAtomicDecrementRef"), 1, __ATOMIC_SEQ_CST) == 0;
}

}  // extern "C"
