// TH's and THC's LAPACK (THTensorLapack.h, THCTensorMathMagma.h) on
// torch.linalg, for float and double: written once, for THFloatTensor,
// THDoubleTensor and (CUDA builds) THCudaTensor and THCudaDoubleTensor.
#include "THRuntime.h"

namespace {

// A LAPACK flag's first letter, upper case, one of `allowed`
char flag(const char* value, const char* name, const char* allowed, const char* fn) {
  if (value == nullptr)
    throw std::runtime_error(std::string(fn) + ": " + name + " is NULL; one of \"" + allowed +
                             "\" is needed");
  const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(value[0])));
  if (c == 0 || std::strchr(allowed, c) == nullptr)
    throw std::runtime_error(std::string(fn) + ": " + name + " must be one of \"" + allowed +
                             "\", got \"" + value + "\"");
  return c;
}

// The results of aten::<name>.<overload>(args...), each into its handle
template <class... A>
void results_into(std::initializer_list<const void*> outs, const char* name, const char* overload,
                  const char* fn, const A&... args) {
  std::vector<StableIValue> stack = {torch::stable::detail::from(args)...};
  stack.resize(std::max(stack.size(), outs.size()));
  check(torch_call_dispatcher(name, overload, stack.data(), TORCH_ABI_VERSION), fn);
  size_t i = 0;
  for (const void* out : outs) {
    const Tensor value = torch::stable::detail::to<Tensor>(stack[i++]);
    if (out != nullptr) assign(out, value, fn);
  }
}

// b as a matrix: a vector is one column, as TH took it
Tensor as_matrix(const Tensor& b) {
  return b.dim() == 1 ? torch::stable::unsqueeze(b, 1) : b;
}

}  // namespace

extern "C" {

#define KFL_DEFINE_LAPACK_API(T, ...)                                                              \
  void T##_gesv(__VA_ARGS__ T* rb, T* ra, T* b, T* a) {                                            \
    const char* fn = #T "_gesv";                                                                   \
    need(                                                                                          \
        fn,                                                                                        \
        {{rb, 1, "rb", #T "*"}, {ra, 2, "ra", #T "*"}, {b, 3, "b", #T "*"}, {a, 4, "a", #T "*"}}); \
    const Tensor A = borrow(a), B = as_matrix(borrow(b));                                          \
    assign(rb, aten("aten::linalg_solve", "", fn, A, B, true), fn);                                \
    results_into({ra, nullptr}, "aten::linalg_lu_factor", "", fn, A, true);                        \
  }                                                                                                \
  void T##_trtrs(__VA_ARGS__ T* rb, T* ra, T* b, T* a, const char* uplo, const char* trans,        \
                 const char* diag) {                                                               \
    const char* fn = #T "_trtrs";                                                                  \
    need(                                                                                          \
        fn,                                                                                        \
        {{rb, 1, "rb", #T "*"}, {ra, 2, "ra", #T "*"}, {b, 3, "b", #T "*"}, {a, 4, "a", #T "*"}}); \
    const bool upper = flag(uplo, "uplo", "UL", fn) == 'U';                                        \
    const bool transposed = flag(trans, "trans", "NTC", fn) != 'N';                                \
    const bool unit = flag(diag, "diag", "NU", fn) == 'U';                                         \
    Tensor A = borrow(a);                                                                          \
    if (A.dim() != 2)                                                                              \
      throw std::runtime_error(std::string(fn) + ": a must be a matrix, got " +                    \
                               describe(sizes(A)).str);                                            \
    const Tensor op = transposed ? torch::stable::transpose(A, 0, 1) : A;                          \
    assign(rb,                                                                                     \
           aten("aten::linalg_solve_triangular", "", fn, op, as_matrix(borrow(b)),                 \
                upper != transposed, true, unit),                                                  \
           fn);                                                                                    \
    assign(ra, A, fn);                                                                             \
  }                                                                                                \
  void T##_syev(__VA_ARGS__ T* re, T* rv, T* a, const char* jobz, const char* uplo) {              \
    const char* fn = #T "_syev";                                                                   \
    need(fn, {{re, 1, "re", #T "*"}, {rv, 2, "rv", #T "*"}, {a, 3, "a", #T "*"}});                 \
    const bool vectors = flag(jobz, "jobz", "NV", fn) == 'V';                                      \
    const std::string triangle(1, flag(uplo, "uplo", "UL", fn));                                   \
    results_into({re, vectors ? static_cast<const void*>(rv) : nullptr}, "aten::linalg_eigh", "",  \
                 fn, borrow(a), triangle);                                                         \
    if (!vectors) assign(rv, borrow(a), fn);                                                       \
  }                                                                                                \
  void T##_gesvd(__VA_ARGS__ T* ru, T* rs, T* rv, T* a, const char* jobu) {                        \
    const char* fn = #T "_gesvd";                                                                  \
    need(fn, {{ru, 1, "ru", #T "*"},                                                               \
              {rs, 2, "rs", #T "*"},                                                               \
              {rv, 3, "rv", #T "*"},                                                               \
              {a, 4, "a", #T "*"}});                                                               \
    const bool all = flag(jobu, "jobu", "AS", fn) == 'A';                                          \
    std::vector<StableIValue> stack = {torch::stable::detail::from(borrow(a)),                     \
                                       torch::stable::detail::from(all),                           \
                                       torch::stable::detail::from(std::nullopt)};                 \
    check(torch_call_dispatcher("aten::linalg_svd", "", stack.data(), TORCH_ABI_VERSION), fn);     \
    const Tensor U = torch::stable::detail::to<Tensor>(stack[0]);                                  \
    const Tensor S = torch::stable::detail::to<Tensor>(stack[1]);                                  \
    const Tensor Vh = torch::stable::detail::to<Tensor>(stack[2]);                                 \
    assign(ru, U, fn);                                                                             \
    assign(rs, S, fn);                                                                             \
    assign(rv, torch::stable::transpose(Vh, 0, 1), fn);                                            \
  }                                                                                                \
  void T##_getri(__VA_ARGS__ T* ra, T* a) {                                                        \
    need(#T "_getri", {{ra, 1, "ra", #T "*"}, {a, 2, "a", #T "*"}});                               \
    into(ra, "aten::linalg_inv", "", #T "_getri", borrow(a));                                      \
  }                                                                                                \
  void T##_potrf(__VA_ARGS__ T* ra, T* a, const char* uplo) {                                      \
    const char* fn = #T "_potrf";                                                                  \
    need(fn, {{ra, 1, "ra", #T "*"}, {a, 2, "a", #T "*"}});                                        \
    into(ra, "aten::linalg_cholesky", "", fn, borrow(a), flag(uplo, "uplo", "UL", fn) == 'U');     \
  }                                                                                                \
  void T##_potrs(__VA_ARGS__ T* rb, T* b, T* a, const char* uplo) {                                \
    const char* fn = #T "_potrs";                                                                  \
    need(fn, {{rb, 1, "rb", #T "*"}, {b, 2, "b", #T "*"}, {a, 3, "a", #T "*"}});                   \
    into(rb, "aten::cholesky_solve", "", fn, as_matrix(borrow(b)), borrow(a),                      \
         flag(uplo, "uplo", "UL", fn) == 'U');                                                     \
  }                                                                                                \
  void T##_potri(__VA_ARGS__ T* ra, T* a, const char* uplo) {                                      \
    const char* fn = #T "_potri";                                                                  \
    need(fn, {{ra, 1, "ra", #T "*"}, {a, 2, "a", #T "*"}});                                        \
    into(ra, "aten::cholesky_inverse", "", fn, borrow(a), flag(uplo, "uplo", "UL", fn) == 'U');    \
  }                                                                                                \
  void T##_qr(__VA_ARGS__ T* rq, T* rr, T* a) {                                                    \
    const char* fn = #T "_qr";                                                                     \
    need(fn, {{rq, 1, "rq", #T "*"}, {rr, 2, "rr", #T "*"}, {a, 3, "a", #T "*"}});                 \
    results_into({rq, rr}, "aten::linalg_qr", "", fn, borrow(a), std::string("reduced"));          \
  }
KFL_DEFINE_LAPACK_API(THFloatTensor, )
KFL_DEFINE_LAPACK_API(THDoubleTensor, )
#ifdef KERNFORGE_LEGACY_WITH_CUDA
KFL_DEFINE_LAPACK_API(THCudaTensor, THCState*, )
KFL_DEFINE_LAPACK_API(THCudaDoubleTensor, THCState*, )
#endif

}  // extern "C"
