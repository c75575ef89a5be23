// TH's vector loops over raw host memory (THVector.h), for every CPU type.
#include "THRuntime.h"

extern "C" {

#define KFL_DEFINE_VECTOR_API(V, real)                                                          \
  void V##_fill(real* x, const real c, const ptrdiff_t n) {                                     \
    vector_loop<real>(x, x, &c, 0, n, false, #V "_fill", [](auto, auto b) { return b; });       \
  }                                                                                             \
  void V##_cadd(real* z, const real* x, const real* y, const real c, const ptrdiff_t n) {       \
    const double k = as_double(c);                                                              \
    vector_loop<real>(z, x, y, 1, n, false, #V "_cadd",                                         \
                      [k](auto a, auto b) { return a + static_cast<decltype(b)>(k) * b; });     \
  }                                                                                             \
  void V##_adds(real* y, const real* x, const real c, const ptrdiff_t n) {                      \
    vector_loop<real>(y, x, &c, 0, n, false, #V "_adds", [](auto a, auto b) { return a + b; }); \
  }                                                                                             \
  void V##_cmul(real* z, const real* x, const real* y, const ptrdiff_t n) {                     \
    vector_loop<real>(z, x, y, 1, n, false, #V "_cmul", [](auto a, auto b) { return a * b; });  \
  }                                                                                             \
  void V##_muls(real* y, const real* x, const real c, const ptrdiff_t n) {                      \
    vector_loop<real>(y, x, &c, 0, n, false, #V "_muls", [](auto a, auto b) { return a * b; }); \
  }                                                                                             \
  void V##_cdiv(real* z, const real* x, const real* y, const ptrdiff_t n) {                     \
    vector_loop<real>(z, x, y, 1, n, true, #V "_cdiv", [](auto a, auto b) { return a / b; });   \
  }                                                                                             \
  void V##_divs(real* y, const real* x, const real c, const ptrdiff_t n) {                      \
    vector_loop<real>(y, x, &c, 0, n, true, #V "_divs", [](auto a, auto b) { return a / b; });  \
  }                                                                                             \
  void V##_copy(real* y, const real* x, const ptrdiff_t n) {                                    \
    vector_loop<real>(y, x, x, 1, n, false, #V "_copy", [](auto a, auto) { return a; });        \
  }                                                                                             \
  void V##_vectorDispatchInit(void) {}
TH_FORALL_CPU_VECTORS(KFL_DEFINE_VECTOR_API)

}  // extern "C"
