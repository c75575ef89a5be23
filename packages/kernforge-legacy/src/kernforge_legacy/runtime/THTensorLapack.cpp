// TH's and THC's LAPACK (THTensorLapack.h, THCTensorMathMagma.h, and THC's
// btrifact and btrisolve of THCTensorMathBlas.h) on torch.linalg, for float
// and double: written once, for THFloatTensor, THDoubleTensor and (CUDA
// builds) THCudaTensor and THCudaDoubleTensor. pstrf, which torch lacks, and
// geev's packing of complex eigenvectors run on the host in double.
#include <cmath>
#include <limits>

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

// a = ru diag(rs) rv^T (jobu "A": all of U, "S": the reduced one)
void svd(const void* ru, const void* rs, const void* rv, const Tensor& a, const char* jobu,
         const char* fn) {
  const bool all = flag(jobu, "jobu", "AS", fn) == 'A';
  std::vector<StableIValue> stack = {torch::stable::detail::from(a),
                                     torch::stable::detail::from(all),
                                     torch::stable::detail::from(std::nullopt)};
  check(torch_call_dispatcher("aten::linalg_svd", "", stack.data(), TORCH_ABI_VERSION), fn);
  assign(ru, torch::stable::detail::to<Tensor>(stack[0]), fn);
  assign(rs, torch::stable::detail::to<Tensor>(stack[1]), fn);
  assign(rv, torch::stable::transpose(torch::stable::detail::to<Tensor>(stack[2]), 0, 1), fn);
}

// b as a matrix: a vector is one column, as TH took it
Tensor as_matrix(const Tensor& b) {
  return b.dim() == 1 ? torch::stable::unsqueeze(b, 1) : b;
}

// Raises unless t is a matrix (square where asked), in TH's words
void matrix(const Tensor& t, const char* name, bool square, const char* fn) {
  const std::vector<int64_t> shape = sizes(t);
  if (shape.size() != 2 || (square && shape[0] != shape[1]))
    throw std::runtime_error(std::string(fn) + ": " + name + " should be " +
                             (square ? "a square matrix" : "2 dimensional") + ", got " +
                             describe(shape).str);
}

// a x = b in the least-squares sense (a of full rank), as LAPACK's gels left
// it: rb [max(m, n), k], the solution in its first n rows (m > n: the rows
// after hold Q^T b's rest, whose squares sum to each column's residual); ra
// a's QR factors (m >= n) or LQ factors (m < n).
void least_squares(const void* rb, const void* ra, const Tensor& a, const Tensor& b,
                   const char* fn) {
  matrix(a, "a", false, fn);
  const Tensor B = as_matrix(b);
  const int64_t m = sizes(a)[0], n = sizes(a)[1], k = sizes(B)[1];
  if (sizes(B)[0] != m)
    throw std::runtime_error(std::string(fn) + ": b must have a's " + std::to_string(m) +
                             " rows, got " + describe(sizes(b)).str);
  if (m >= n) {
    const std::vector<Tensor> qr = results(2, "aten::geqrf", "", fn, a);
    const Tensor qtb = aten("aten::ormqr", "", fn, qr[0], qr[1], B, true, true);
    const Tensor r = aten("aten::triu", "", fn, narrowed(qr[0], 0, 0, n, fn), int64_t{0});
    const Tensor x = aten("aten::linalg_solve_triangular", "", fn, r, narrowed(qtb, 0, 0, n, fn),
                          true, true, false);
    Tensor out = aten("aten::clone", "", fn, qtb, std::nullopt);
    Tensor head = narrowed(out, 0, 0, n, fn);
    torch::stable::copy_(head, x);
    assign(rb, out, fn);
    assign(ra, qr[0], fn);
  } else {  // the minimal-norm solution, from a^T = QR: x = Q R^-T b
    const std::vector<Tensor> qr = results(2, "aten::geqrf", "", fn, swapped(a, 0, 1, fn));
    const Tensor r = aten("aten::triu", "", fn, narrowed(qr[0], 0, 0, m, fn), int64_t{0});
    const Tensor y =
        aten("aten::linalg_solve_triangular", "", fn, swapped(r, 0, 1, fn), B, false, true, false);
    Tensor padded = empty({n, k}, dtype_of(a), is_cuda(a), fn);
    torch::stable::zero_(padded);
    Tensor head = narrowed(padded, 0, 0, m, fn);
    torch::stable::copy_(head, y);
    assign(rb, aten("aten::ormqr", "", fn, qr[0], qr[1], padded, true, false), fn);
    assign(ra, swapped(qr[0], 0, 1, fn), fn);
  }
}

// a's eigenvalues as LAPACK's geev gave them: re [n, 2] (real and imaginary
// parts) and, unless rv is null, its right eigenvectors in rv's columns,
// real ones as they are and a complex pair (the one of positive imaginary
// part first) as two columns, its real and imaginary parts.
void eigen(const void* re, const void* rv, const Tensor& a, const char* fn) {
  matrix(a, "a", true, fn);
  const std::vector<Tensor> eig = results(2, "aten::linalg_eig", "", fn, a);
  const Tensor values = on_host(aten("aten::view_as_real", "", fn, eig[0]), fn);
  assign(re, like(values, a, fn), fn);
  if (rv == nullptr) return;
  const Tensor vectors = on_host(aten("aten::view_as_real", "", fn, eig[1]), fn);  // [n, n, 2]
  const int64_t n = sizes(a)[0];
  const auto* val = static_cast<const double*>(values.data_ptr());
  const auto* vec = static_cast<const double*>(vectors.data_ptr());
  Tensor packed = empty({n, n}, aoti_torch_dtype_float64(), false, fn);
  auto* out = static_cast<double*>(packed.data_ptr());
  for (int64_t j = 0; j < n; ++j) {
    const bool pair = val[2 * j + 1] > 0 && j + 1 < n;
    for (int64_t i = 0; i < n; ++i) {
      out[i * n + j] = vec[(i * n + j) * 2];
      if (pair) out[i * n + j + 1] = vec[(i * n + j) * 2 + 1];
    }
    if (pair) ++j;
  }
  assign(rv, like(packed, a, fn), fn);
}

// The Cholesky factorization with complete (diagonal) pivoting of the
// symmetric positive semidefinite a, from its `upper` or lower triangle, as
// LAPACK's pstrf: a[piv][:, piv] = U^T U (upper) or L L^T, the factor in ra
// (its other triangle zero) and the 1-based pivots in rpiv. The elimination
// stops where the largest remaining diagonal element is at most tol (tol < 0:
// n * eps * the largest diagonal element, eps of a's type); short of n
// steps, a is rank deficient or not positive semidefinite, an error as in TH.
void pivoted_cholesky(const void* ra, const void* rpiv, const Tensor& a, bool upper, double tol,
                      double eps, const char* fn) {
  matrix(a, "a", true, fn);
  const int64_t n = sizes(a)[0];
  const Tensor host = on_host(a, fn);
  const auto* src = static_cast<const double*>(host.data_ptr());
  std::vector<double> s(n * n);  // the full symmetric matrix, from the given triangle
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      s[i * n + j] = (upper ? i <= j : i >= j) ? src[i * n + j] : src[j * n + i];
  std::vector<int64_t> piv(n);
  for (int64_t i = 0; i < n; ++i) piv[i] = i;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (s[i * n + i] > s[p * n + p]) p = i;
    if (k == 0 && tol < 0) tol = static_cast<double>(n) * eps * s[p * n + p];
    if (!(s[p * n + p] > tol))
      throw std::runtime_error(std::string(fn) +
                               ": matrix is rank deficient or not positive semidefinite (rank " +
                               std::to_string(k) + " of " + std::to_string(n) + ")");
    if (p != k) {  // the symmetric swap of rows and columns k and p
      for (int64_t i = 0; i < n; ++i) std::swap(s[i * n + k], s[i * n + p]);
      for (int64_t j = 0; j < n; ++j) std::swap(s[k * n + j], s[p * n + j]);
      std::swap(piv[k], piv[p]);
    }
    const double d = std::sqrt(s[k * n + k]);
    s[k * n + k] = d;
    for (int64_t i = k + 1; i < n; ++i) s[i * n + k] /= d;  // column k of L
    // the trailing matrix, kept whole (a later swap reads both triangles)
    for (int64_t i = k + 1; i < n; ++i)
      for (int64_t j = k + 1; j < n; ++j) s[i * n + j] -= s[i * n + k] * s[j * n + k];
  }
  Tensor factor = empty({n, n}, aoti_torch_dtype_float64(), false, fn);
  auto* f = static_cast<double*>(factor.data_ptr());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double l = i >= j ? s[i * n + j] : 0.0;  // L[i][j]
      if (upper)
        f[j * n + i] = l;  // U = L^T
      else
        f[i * n + j] = l;
    }
  Tensor pivots = empty({n}, aoti_torch_dtype_int32(), false, fn);
  auto* pv = static_cast<int32_t*>(pivots.data_ptr());
  for (int64_t i = 0; i < n; ++i) pv[i] = static_cast<int32_t>(piv[i] + 1);
  assign(ra, like(factor, a, fn), fn);
  assign(rpiv, pivots, fn);
}

// The LU factors of each matrix of the batch a [B, n, n], with partial
// pivoting as LAPACK's getrf: ra the factors, rpivots [B, n] the 1-based
// pivots, rinfo [B] getrf's info per matrix (0: done; i > 0: U(i, i) is
// exactly zero). rinfo null: such a matrix is an error, as in TH.
void batch_lu(const void* ra, const void* rpivots, const void* rinfo, const Tensor& a,
              const char* fn) {
  if (a.dim() != 3)
    throw std::runtime_error(std::string(fn) + ": expected 3D tensor, got " +
                             describe(sizes(a)).str);
  if (sizes(a)[1] != sizes(a)[2])
    throw std::runtime_error(std::string(fn) +
                             ": btrifact is only implemented for square matrices, got " +
                             describe(sizes(a)).str);
  const std::vector<Tensor> lu = results(3, "aten::linalg_lu_factor_ex", "", fn, a, true, false);
  if (rinfo == nullptr) {
    const Tensor info = on_host(lu[2], fn);
    const auto* v = static_cast<const double*>(info.data_ptr());
    for (int64_t b = 0; b < sizes(a)[0]; ++b)
      if (v[b] != 0)
        throw std::runtime_error(std::string(fn) + ": failed to factorize batch element " +
                                 std::to_string(b) +
                                 " (info == " + std::to_string(static_cast<int64_t>(v[b])) + ")");
  } else {
    assign(rinfo, lu[2], fn);
  }
  assign(ra, lu[0], fn);
  assign(rpivots, lu[1], fn);
}

// Solves each a_i x = b_i from btrifact's factors atf [B, n, n] and pivots
// [B, n]: b [B, n] or [B, n, k]
void batch_lu_solve(const void* rb, const Tensor& b, const Tensor& atf, const Tensor& pivots,
                    const char* fn) {
  if (atf.dim() != 3)
    throw std::runtime_error(std::string(fn) + ": expected 3D tensor, got " +
                             describe(sizes(atf)).str);
  if (b.dim() != 2 && b.dim() != 3)
    throw std::runtime_error(std::string(fn) + ": expected 2D or 3D tensor, got " +
                             describe(sizes(b)).str);
  if (sizes(atf)[0] != sizes(b)[0] || sizes(atf)[1] != sizes(atf)[2] ||
      sizes(atf)[1] != sizes(b)[1])
    throw std::runtime_error(std::string(fn) + ": b " + describe(sizes(b)).str +
                             " does not fit the factors " + describe(sizes(atf)).str +
                             " (the same number of batches, square matrices of b's rows)");
  const Tensor B = b.dim() == 2 ? torch::stable::unsqueeze(b, 2) : b;
  Tensor x = aten("aten::linalg_lu_solve", "", fn, atf, pivots, B, true, false);
  assign(rb, b.dim() == 2 ? aten("aten::squeeze", "dim", fn, x, int64_t{2}) : x, fn);
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
    svd(ru, rs, rv, borrow(a), jobu, fn);                                                          \
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
  }                                                                                                \
  void T##_gels(__VA_ARGS__ T* rb, T* ra, T* b, T* a) {                                            \
    const char* fn = #T "_gels";                                                                   \
    need(                                                                                          \
        fn,                                                                                        \
        {{rb, 1, "rb", #T "*"}, {ra, 2, "ra", #T "*"}, {b, 3, "b", #T "*"}, {a, 4, "a", #T "*"}}); \
    least_squares(rb, ra, borrow(a), borrow(b), fn);                                               \
  }                                                                                                \
  void T##_geev(__VA_ARGS__ T* re, T* rv, T* a, const char* jobvr) {                               \
    const char* fn = #T "_geev";                                                                   \
    need(fn, {{re, 1, "re", #T "*"}, {rv, 2, "rv", #T "*"}, {a, 3, "a", #T "*"}});                 \
    const bool vectors = flag(jobvr, "jobvr", "NV", fn) == 'V';                                    \
    eigen(re, vectors ? rv : nullptr, borrow(a), fn);                                              \
  }                                                                                                \
  void T##_gesvd2(__VA_ARGS__ T* ru, T* rs, T* rv, T* ra, T* a, const char* jobu) {                \
    const char* fn = #T "_gesvd2";                                                                 \
    need(fn, {{ru, 1, "ru", #T "*"},                                                               \
              {rs, 2, "rs", #T "*"},                                                               \
              {rv, 3, "rv", #T "*"},                                                               \
              {ra, 4, "ra", #T "*"},                                                               \
              {a, 5, "a", #T "*"}});                                                               \
    svd(ru, rs, rv, borrow(a), jobu, fn);                                                          \
    assign(ra, borrow(a), fn); /* LAPACK left its work in a's copy; here a itself */               \
  }
KFL_DEFINE_LAPACK_API(THFloatTensor, )
KFL_DEFINE_LAPACK_API(THDoubleTensor, )
#ifdef KERNFORGE_LEGACY_WITH_CUDA
KFL_DEFINE_LAPACK_API(THCudaTensor, THCState*, )
KFL_DEFINE_LAPACK_API(THCudaDoubleTensor, THCState*, )
#endif

// btrifact and btrisolve: TH's and THC's (I: their int tensor of pivots)
#define KFL_DEFINE_BATCH_LU_API(T, I, ...)                                                   \
  void T##_btrifact(__VA_ARGS__ T* ra, I* rpivots, I* rinfo, T* a) {                         \
    const char* fn = #T "_btrifact";                                                         \
    need(fn, {{ra, 1, "ra", #T "*"}, {rpivots, 2, "rpivots", #I "*"}, {a, 4, "a", #T "*"}}); \
    batch_lu(ra, rpivots, rinfo, borrow(a), fn);                                             \
  }                                                                                          \
  void T##_btrisolve(__VA_ARGS__ T* rb, T* b, T* atf, I* pivots) {                           \
    const char* fn = #T "_btrisolve";                                                        \
    need(fn, {{rb, 1, "rb", #T "*"},                                                         \
              {b, 2, "b", #T "*"},                                                           \
              {atf, 3, "atf", #T "*"},                                                       \
              {pivots, 4, "pivots", #I "*"}});                                               \
    batch_lu_solve(rb, borrow(b), borrow(atf), borrow(pivots), fn);                          \
  }
KFL_DEFINE_BATCH_LU_API(THFloatTensor, THIntTensor, )
KFL_DEFINE_BATCH_LU_API(THDoubleTensor, THIntTensor, )
#ifdef KERNFORGE_LEGACY_WITH_CUDA
KFL_DEFINE_BATCH_LU_API(THCudaTensor, THCudaIntTensor, THCState*, )
KFL_DEFINE_BATCH_LU_API(THCudaDoubleTensor, THCudaIntTensor, THCState*, )
// THC declared them for every type and raised for the others
#define KFL_DEFINE_OTHER_BATCH_LU(T, S, real, dtype)                                         \
  void T##_btrifact(THCState*, T*, THCudaIntTensor*, THCudaIntTensor*, T*) {                 \
    throw std::runtime_error(#T                                                              \
                             "_btrifact: btrifact for CUDA tensors is only supported for "   \
                             "floats and doubles");                                          \
  }                                                                                          \
  void T##_btrisolve(THCState*, T*, T*, T*, THCudaIntTensor*) {                              \
    throw std::runtime_error(#T                                                              \
                             "_btrisolve: btrisolve for CUDA tensors is only supported for " \
                             "floats and doubles");                                          \
  }
TH_FORALL_CUDA_INT_TENSORS(KFL_DEFINE_OTHER_BATCH_LU)
KFL_DEFINE_OTHER_BATCH_LU(THCudaHalfTensor, , , )
#undef KFL_DEFINE_OTHER_BATCH_LU
#endif

// TH's QR parts and pivoted Cholesky (THC had none of them); eps: the type's
#define KFL_DEFINE_TH_LAPACK_API(T, real)                                                      \
  void T##_geqrf(T* ra, T* rtau, T* a) {                                                       \
    const char* fn = #T "_geqrf";                                                              \
    need(fn, {{ra, 1, "ra", #T "*"}, {rtau, 2, "rtau", #T "*"}, {a, 3, "a", #T "*"}});         \
    const Tensor A = borrow(a);                                                                \
    matrix(A, "a", false, fn);                                                                 \
    results_into({ra, rtau}, "aten::geqrf", "", fn, A);                                        \
  }                                                                                            \
  void T##_orgqr(T* ra, T* a, T* tau) {                                                        \
    const char* fn = #T "_orgqr";                                                              \
    need(fn, {{ra, 1, "ra", #T "*"}, {a, 2, "a", #T "*"}, {tau, 3, "tau", #T "*"}});           \
    const Tensor A = borrow(a);                                                                \
    matrix(A, "a", false, fn);                                                                 \
    into(ra, "aten::linalg_householder_product", "", fn, A, borrow(tau));                      \
  }                                                                                            \
  void T##_ormqr(T* ra, T* a, T* tau, T* c, const char* side, const char* trans) {             \
    const char* fn = #T "_ormqr";                                                              \
    need(fn, {{ra, 1, "ra", #T "*"},                                                           \
              {a, 2, "a", #T "*"},                                                             \
              {tau, 3, "tau", #T "*"},                                                         \
              {c, 4, "c", #T "*"}});                                                           \
    const bool left = flag(side, "side", "LR", fn) == 'L';                                     \
    const bool transposed = flag(trans, "trans", "NT", fn) == 'T';                             \
    const Tensor A = borrow(a);                                                                \
    matrix(A, "a", false, fn);                                                                 \
    into(ra, "aten::ormqr", "", fn, A, borrow(tau), borrow(c), left, transposed);              \
  }                                                                                            \
  void T##_pstrf(T* ra, THIntTensor* rpiv, T* a, const char* uplo, real tol) {                 \
    const char* fn = #T "_pstrf";                                                              \
    need(fn, {{ra, 1, "ra", #T "*"}, {rpiv, 2, "rpiv", "THIntTensor*"}, {a, 3, "a", #T "*"}}); \
    pivoted_cholesky(ra, rpiv, borrow(a), flag(uplo, "uplo", "UL", fn) == 'U', tol,            \
                     std::numeric_limits<real>::epsilon(), fn);                                \
  }
KFL_DEFINE_TH_LAPACK_API(THFloatTensor, float)
KFL_DEFINE_TH_LAPACK_API(THDoubleTensor, double)

}  // extern "C"
