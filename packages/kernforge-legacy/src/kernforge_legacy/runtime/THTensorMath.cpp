// TH's math (THTensorMath.h): pointwise, reductions, BLAS-like products,
// orderings, indexing and comparisons, for every TH and THC tensor type
// that TH and THC had them for.
#include "THRuntime.h"

extern "C" {

// TH's math of every handle type T (TH/TH.h's TH_TENSOR_ARITH_API).
#define KFL_DEFINE_ARITH_API(T, real, accreal, ...)                                                \
  void T##_add(__VA_ARGS__ T* r, T* t, real value) {                                               \
    axpy_op<real>(r, t, nullptr, 0.0, as_double(value), #T "_add");                                \
  }                                                                                                \
  void T##_mul(__VA_ARGS__ T* r, T* t, real value) {                                               \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::mul", r, {self, scalar_like(self, value)}, #T "_mul");                           \
  }                                                                                                \
  void T##_div(__VA_ARGS__ T* r, T* t, real value) {                                               \
    const Tensor self = borrow(t);                                                                 \
    div_op<real>(r, self, scalar_like(self, value), #T "_div");                                    \
  }                                                                                                \
  void T##_cadd(__VA_ARGS__ T* r, T* t, real value, T* src) {                                      \
    axpy_op<real>(r, t, src, as_double(value), 0.0, #T "_cadd");                                   \
  }                                                                                                \
  void T##_csub(__VA_ARGS__ T* r, T* t, real value, T* src) {                                      \
    axpy_op<real>(r, t, src, -as_double(value), 0.0, #T "_csub");                                  \
  }                                                                                                \
  void T##_cmul(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    out_op("aten::mul", r, {borrow(t), borrow(src)}, #T "_cmul");                                  \
  }                                                                                                \
  void T##_cdiv(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    div_op<real>(r, borrow(t), borrow(src), #T "_cdiv");                                           \
  }                                                                                                \
  void T##_abs(__VA_ARGS__ T* r, T* t) {                                                           \
    out_op("aten::abs", r, {borrow(t)}, #T "_abs");                                                \
  }                                                                                                \
  void T##_clamp(__VA_ARGS__ T* r, T* t, real min_value, real max_value) {                         \
    const Tensor self = borrow(t);                                                                 \
    call("aten::clamp", "Tensor_out",                                                              \
         {torch::stable::detail::from(self),                                                       \
          torch::stable::detail::from(std::optional<Tensor>(scalar_like(self, min_value))),        \
          torch::stable::detail::from(std::optional<Tensor>(scalar_like(self, max_value))),        \
          torch::stable::detail::from(borrow(r))},                                                 \
         #T "_clamp");                                                                             \
    refresh(r);                                                                                    \
  }                                                                                                \
  accreal T##_sumall(__VA_ARGS__ T* t) {                                                           \
    return accumulate_all<accreal>("aten::sum", t, #T "_sumall");                                  \
  }                                                                                                \
  accreal T##_prodall(__VA_ARGS__ T* t) {                                                          \
    return accumulate_all<accreal>("aten::prod", t, #T "_prodall");                                \
  }                                                                                                \
  void T##_sub(__VA_ARGS__ T* r, T* t, real value) {                                               \
    axpy_op<real>(r, t, nullptr, 0.0, -as_double(value), #T "_sub");                               \
  }                                                                                                \
  void T##_neg(__VA_ARGS__ T* r, T* t) {                                                           \
    out_op("aten::neg", r, {borrow(t)}, #T "_neg");                                                \
  }                                                                                                \
  void T##_sign(__VA_ARGS__ T* r, T* t) {                                                          \
    out_op("aten::sign", r, {borrow(t)}, #T "_sign");                                              \
  }                                                                                                \
  void T##_fmod(__VA_ARGS__ T* r, T* t, real value) {                                              \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::fmod", "Tensor", #T "_fmod", self, scalar_like(self, value));                   \
  }                                                                                                \
  void T##_remainder(__VA_ARGS__ T* r, T* t, real value) {                                         \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::remainder", "Tensor", #T "_remainder", self, scalar_like(self, value));         \
  }                                                                                                \
  void T##_cfmod(__VA_ARGS__ T* r, T* t, T* src) {                                                 \
    into(r, "aten::fmod", "Tensor", #T "_cfmod", borrow(t), borrow(src));                          \
  }                                                                                                \
  void T##_cremainder(__VA_ARGS__ T* r, T* t, T* src) {                                            \
    into(r, "aten::remainder", "Tensor", #T "_cremainder", borrow(t), borrow(src));                \
  }                                                                                                \
  void T##_cmax(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    out_op("aten::maximum", r, {borrow(t), borrow(src)}, #T "_cmax");                              \
  }                                                                                                \
  void T##_cmin(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    out_op("aten::minimum", r, {borrow(t), borrow(src)}, #T "_cmin");                              \
  }                                                                                                \
  void T##_cmaxValue(__VA_ARGS__ T* r, T* t, real value) {                                         \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::maximum", r, {self, scalar_like(self, value)}, #T "_cmaxValue");                 \
  }                                                                                                \
  void T##_cminValue(__VA_ARGS__ T* r, T* t, real value) {                                         \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::minimum", r, {self, scalar_like(self, value)}, #T "_cminValue");                 \
  }                                                                                                \
  void T##_sum(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                               \
    into(r, "aten::sum", "dim_IntList", #T "_sum", borrow(t), dims(dimension), keepdim != 0,       \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_prod(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                              \
    into(r, "aten::prod", "dim_int", #T "_prod", borrow(t), static_cast<int64_t>(dimension),       \
         keepdim != 0, std::nullopt);                                                              \
  }                                                                                                \
  void T##_cumsum(__VA_ARGS__ T* r, T* t, int dimension) {                                         \
    into(r, "aten::cumsum", "", #T "_cumsum", borrow(t), static_cast<int64_t>(dimension),          \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_cumprod(__VA_ARGS__ T* r, T* t, int dimension) {                                        \
    into(r, "aten::cumprod", "", #T "_cumprod", borrow(t), static_cast<int64_t>(dimension),        \
         std::nullopt);                                                                            \
  }                                                                                                \
  ptrdiff_t T##_numel(__VA_ARGS__ T* t) {                                                          \
    return numel(t);                                                                               \
  }                                                                                                \
  void T##_zeros(__VA_ARGS__ T* r, THLongStorage* size) {                                          \
    filled(r, longs_of(size, #T "_zeros"), 0.0, #T "_zeros");                                      \
  }                                                                                                \
  void T##_ones(__VA_ARGS__ T* r, THLongStorage* size) {                                           \
    filled(r, longs_of(size, #T "_ones"), 1.0, #T "_ones");                                        \
  }                                                                                                \
  void T##_zerosLike(__VA_ARGS__ T* r, T* input) {                                                 \
    filled(r, sizes(input), 0.0, #T "_zerosLike");                                                 \
  }                                                                                                \
  void T##_onesLike(__VA_ARGS__ T* r, T* input) {                                                  \
    filled(r, sizes(input), 1.0, #T "_onesLike");                                                  \
  }                                                                                                \
  void T##_eye(__VA_ARGS__ T* r, int64_t n, int64_t m) {                                           \
    const char* fn = #T "_eye";                                                                    \
    filled(r, {n, m > 0 ? m : n}, 0.0, fn);                                                        \
    const Tensor self = borrow(r);                                                                 \
    const Tensor diagonal =                                                                        \
        aten("aten::diagonal", "", fn, self, int64_t{0}, int64_t{0}, int64_t{1});                  \
    aten("aten::fill_", "Tensor", fn, diagonal, scalar_like(self, 1));                             \
  }                                                                                                \
  void T##_diag(__VA_ARGS__ T* r, T* t, int k) {                                                   \
    into(r, "aten::diag", "", #T "_diag", borrow(t), static_cast<int64_t>(k));                     \
  }                                                                                                \
  void T##_tril(__VA_ARGS__ T* r, T* t, int64_t k) {                                               \
    into(r, "aten::tril", "", #T "_tril", borrow(t), k);                                           \
  }                                                                                                \
  void T##_triu(__VA_ARGS__ T* r, T* t, int64_t k) {                                               \
    into(r, "aten::triu", "", #T "_triu", borrow(t), k);                                           \
  }                                                                                                \
  accreal T##_trace(__VA_ARGS__ T* t) {                                                            \
    return accumulated<accreal>(aten("aten::trace", "", #T "_trace", borrow(t)), #T "_trace");     \
  }                                                                                                \
  int T##_equal(__VA_ARGS__ T* ta, T* tb) {                                                        \
    std::vector<StableIValue> stack = {torch::stable::detail::from(borrow(ta)),                    \
                                       torch::stable::detail::from(borrow(tb))};                   \
    check(torch_call_dispatcher("aten::equal", "", stack.data(), TORCH_ABI_VERSION), #T "_equal"); \
    return torch::stable::detail::to<bool>(stack[0]) ? 1 : 0;                                      \
  }                                                                                                \
  void T##_cat(__VA_ARGS__ T* r, T* ta, T* tb, int dimension) {                                    \
    const void* inputs[] = {ta, tb};                                                               \
    joined(r, inputs, 2, dimension, #T "_cat");                                                    \
  }                                                                                                \
  void T##_catArray(__VA_ARGS__ T* r, T** inputs, int n, int dimension) {                          \
    joined(r, reinterpret_cast<const void* const*>(inputs), n, dimension, #T "_catArray");         \
  }                                                                                                \
  void T##_range(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step) {                     \
    range_into(r, xmin, xmax, step, true, #T "_range");                                            \
  }                                                                                                \
  void T##_arange(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step) {                    \
    range_into(r, xmin, xmax, step, false, #T "_arange");                                          \
  }                                                                                                \
  real T##_maxall(__VA_ARGS__ T* t) {                                                              \
    return reduce_all<real>("aten::max", t, #T "_maxall");                                         \
  }                                                                                                \
  real T##_minall(__VA_ARGS__ T* t) {                                                              \
    return reduce_all<real>("aten::min", t, #T "_minall");                                         \
  }

// and of the floating types only (TH_TENSOR_FLOAT_MATH_API)
#define KFL_DEFINE_FLOAT_MATH_API(T, real, ...)                                                    \
  void T##_exp(__VA_ARGS__ T* r, T* t) {                                                           \
    out_op("aten::exp", r, {borrow(t)}, #T "_exp");                                                \
  }                                                                                                \
  void T##_sqrt(__VA_ARGS__ T* r, T* t) {                                                          \
    out_op("aten::sqrt", r, {borrow(t)}, #T "_sqrt");                                              \
  }                                                                                                \
  double T##_dot(__VA_ARGS__ T* t, T* src) {                                                       \
    return item(                                                                                   \
        call("aten::dot", "",                                                                      \
             {torch::stable::detail::from(borrow(t)), torch::stable::detail::from(borrow(src))},   \
             #T "_dot"),                                                                           \
        #T "_dot");                                                                                \
  }                                                                                                \
  void T##_addmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat1, T* mat2) {                \
    if (r != t) assign(r, borrow(t), #T "_addmm");                                                 \
    addmm_into(r, borrow(mat1), borrow(mat2), as_double(beta), as_double(alpha), #T "_addmm");     \
  }                                                                                                \
  void T##_addmv(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat, T* vec) {                  \
    assign(r,                                                                                      \
           addmv_of(borrow(t), borrow(mat), borrow(vec), as_double(beta), as_double(alpha),        \
                    #T "_addmv"),                                                                  \
           #T "_addmv");                                                                           \
  }                                                                                                \
  TH_FLOAT_UNARY_NAMES(KFL_DEFINE_UNARY, T, __VA_ARGS__)                                           \
  void T##_round(__VA_ARGS__ T* r, T* t) {                                                         \
    assign(r, round_half_away(borrow(t), #T "_round"), #T "_round");                               \
  }                                                                                                \
  void T##_cinv(__VA_ARGS__ T* r, T* t) {                                                          \
    out_op("aten::reciprocal", r, {borrow(t)}, #T "_cinv");                                        \
  }                                                                                                \
  void T##_atan2(__VA_ARGS__ T* r, T* tx, T* ty) {                                                 \
    out_op("aten::atan2", r, {borrow(tx), borrow(ty)}, #T "_atan2");                               \
  }                                                                                                \
  void T##_pow(__VA_ARGS__ T* r, T* t, real value) {                                               \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::pow", "Tensor_Tensor", #T "_pow", self, scalar_like(self, value));              \
  }                                                                                                \
  void T##_tpow(__VA_ARGS__ T* r, real value, T* t) {                                              \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::pow", "Tensor_Tensor", #T "_tpow", scalar_like(self, value), self);             \
  }                                                                                                \
  void T##_cpow(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    into(r, "aten::pow", "Tensor_Tensor", #T "_cpow", borrow(t), borrow(src));                     \
  }                                                                                                \
  void T##_lerp(__VA_ARGS__ T* r, T* a, T* b, real weight) {                                       \
    const Tensor self = borrow(a);                                                                 \
    into(r, "aten::lerp", "Tensor", #T "_lerp", self, borrow(b), scalar_like(self, weight));       \
  }                                                                                                \
  void T##_addcmul(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2) {                         \
    const Tensor product = aten("aten::mul", "Tensor", #T "_addcmul", borrow(src1), borrow(src2)); \
    assign(r, torch::stable::subtract(borrow(t), product, -as_double(value)), #T "_addcmul");      \
  }                                                                                                \
  void T##_addcdiv(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2) {                         \
    const Tensor quotient =                                                                        \
        aten("aten::div", "Tensor", #T "_addcdiv", borrow(src1), borrow(src2));                    \
    assign(r, torch::stable::subtract(borrow(t), quotient, -as_double(value)), #T "_addcdiv");     \
  }                                                                                                \
  void T##_mean(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                              \
    into(r, "aten::mean", "dim", #T "_mean", borrow(t), dims(dimension), keepdim != 0,             \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_std(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim) {                   \
    into(r, "aten::std", "dim", #T "_std", borrow(t), dims(dimension), biased == 0, keepdim != 0); \
  }                                                                                                \
  void T##_var(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim) {                   \
    into(r, "aten::var", "dim", #T "_var", borrow(t), dims(dimension), biased == 0, keepdim != 0); \
  }                                                                                                \
  double T##_meanall(__VA_ARGS__ T* t) {                                                           \
    return item(aten("aten::mean", "", #T "_meanall", borrow(t), std::nullopt), #T "_meanall");    \
  }                                                                                                \
  double T##_varall(__VA_ARGS__ T* t, int biased) {                                                \
    return item(aten("aten::var", "", #T "_varall", borrow(t), biased == 0), #T "_varall");        \
  }                                                                                                \
  double T##_stdall(__VA_ARGS__ T* t, int biased) {                                                \
    return item(aten("aten::std", "", #T "_stdall", borrow(t), biased == 0), #T "_stdall");        \
  }                                                                                                \
  void T##_addr(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* vec1, T* vec2) {                 \
    const char* fn = #T "_addr";                                                                   \
    const Tensor outer = aten("aten::outer", "", fn, borrow(vec1), borrow(vec2));                  \
    assign(r, scaled_sum(borrow(t), as_double(beta), outer, as_double(alpha), fn), fn);            \
  }                                                                                                \
  void T##_addbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2) {           \
    const char* fn = #T "_addbmm";                                                                 \
    const Tensor products = aten("aten::bmm", "", fn, borrow(batch1), borrow(batch2));             \
    const Tensor sum =                                                                             \
        aten("aten::sum", "dim_IntList", fn, products, dims(0), false, std::nullopt);              \
    assign(r, scaled_sum(borrow(t), as_double(beta), sum, as_double(alpha), fn), fn);              \
  }                                                                                                \
  void T##_baddbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2) {          \
    const char* fn = #T "_baddbmm";                                                                \
    if (r != t) assign(r, borrow(t), fn);                                                          \
    baddbmm_into(borrow(r), borrow(batch1), borrow(batch2), as_double(beta), as_double(alpha),     \
                 fn);                                                                              \
  }                                                                                                \
  void T##_norm(__VA_ARGS__ T* r, T* t, real value, int dimension, int keepdim) {                  \
    const char* fn = #T "_norm";                                                                   \
    assign(r, p_norm(borrow(t), as_double(value), {dimension}, keepdim != 0, fn), fn);             \
  }                                                                                                \
  double T##_normall(__VA_ARGS__ T* t, real value) {                                               \
    const char* fn = #T "_normall";                                                                \
    return item(p_norm(borrow(t), as_double(value), {}, false, fn), fn);                           \
  }                                                                                                \
  void T##_renorm(__VA_ARGS__ T* r, T* t, real value, int dimension, real maxnorm) {               \
    const char* fn = #T "_renorm";                                                                 \
    assign(r, renormed(borrow(t), as_double(value), dimension, as_double(maxnorm), fn), fn);       \
  }                                                                                                \
  double T##_dist(__VA_ARGS__ T* a, T* b, real value) {                                            \
    return distance(a, b, as_double(value), #T "_dist");                                           \
  }                                                                                                \
  void T##_linspace(__VA_ARGS__ T* r, real a, real b, int64_t n) {                                 \
    spaced_into(r, as_double(a), as_double(b), n, false, #T "_linspace");                          \
  }                                                                                                \
  void T##_logspace(__VA_ARGS__ T* r, real a, real b, int64_t n) {                                 \
    spaced_into(r, as_double(a), as_double(b), n, true, #T "_logspace");                           \
  }
#define KFL_DEFINE_UNARY(name, T, ...)                    \
  void T##_##name(__VA_ARGS__ T* r, T* t) {               \
    out_op("aten::" #name, r, {borrow(t)}, #T "_" #name); \
  }

// of every type (TH_TENSOR_INDEX_API)
#define KFL_DEFINE_INDEX_API(T, L, B, real, ...)                                                   \
  void T##_max(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {              \
    pair_into(values, indices, "aten::max", "dim", #T "_max", borrow(t),                           \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_min(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {              \
    pair_into(values, indices, "aten::min", "dim", #T "_min", borrow(t),                           \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_indexSelect(__VA_ARGS__ T* r, T* src, int dim, L* index) {                              \
    into(r, "aten::index_select", "", #T "_indexSelect", borrow(src), static_cast<int64_t>(dim),   \
         borrow(index));                                                                           \
  }                                                                                                \
  void T##_indexCopy(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                \
    aten("aten::index_copy_", "", #T "_indexCopy", borrow(t), static_cast<int64_t>(dim),           \
         borrow(index), borrow(src));                                                              \
  }                                                                                                \
  void T##_indexAdd(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                 \
    const Tensor source = borrow(src);                                                             \
    aten("aten::scatter_add_", "", #T "_indexAdd", borrow(t), static_cast<int64_t>(dim),           \
         spread(borrow(index), source, dim, #T "_indexAdd"), source);                              \
  }                                                                                                \
  void T##_indexFill(__VA_ARGS__ T* t, int dim, L* index, real value) {                            \
    const Tensor self = borrow(t);                                                                 \
    aten("aten::index_fill_", "int_Tensor", #T "_indexFill", self, static_cast<int64_t>(dim),      \
         borrow(index), scalar_like(self, value));                                                 \
  }                                                                                                \
  void T##_gather(__VA_ARGS__ T* r, T* src, int dim, L* index) {                                   \
    into(r, "aten::gather", "", #T "_gather", borrow(src), static_cast<int64_t>(dim),              \
         borrow(index), false);                                                                    \
  }                                                                                                \
  void T##_scatter(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                  \
    aten("aten::scatter_", "src", #T "_scatter", borrow(t), static_cast<int64_t>(dim),             \
         borrow(index), borrow(src));                                                              \
  }                                                                                                \
  void T##_scatterAdd(__VA_ARGS__ T* t, int dim, L* index, T* src) {                               \
    aten("aten::scatter_add_", "", #T "_scatterAdd", borrow(t), static_cast<int64_t>(dim),         \
         borrow(index), borrow(src));                                                              \
  }                                                                                                \
  void T##_scatterFill(__VA_ARGS__ T* t, int dim, L* index, real value) {                          \
    const Tensor self = borrow(t), at = borrow(index);                                             \
    aten("aten::scatter_", "src", #T "_scatterFill", self, static_cast<int64_t>(dim), at,          \
         aten("aten::expand", "", #T "_scatterFill", scalar_like(self, value), sizes(at), false)); \
  }                                                                                                \
  void T##_maskedFill(__VA_ARGS__ T* t, B* mask, real value) {                                     \
    const Tensor self = borrow(t);                                                                 \
    aten("aten::masked_fill_", "Tensor", #T "_maskedFill", self, as_bool(mask),                    \
         scalar_like(self, value));                                                                \
  }                                                                                                \
  void T##_maskedCopy(__VA_ARGS__ T* t, B* mask, T* src) {                                         \
    aten("aten::masked_scatter_", "", #T "_maskedCopy", borrow(t), as_bool(mask), borrow(src));    \
  }                                                                                                \
  void T##_maskedSelect(__VA_ARGS__ T* r, T* src, B* mask) {                                       \
    into(r, "aten::masked_select", "", #T "_maskedSelect", borrow(src), as_bool(mask));            \
  }                                                                                                \
  void T##_nonzero(__VA_ARGS__ L* subscript, T* t) {                                               \
    into(subscript, "aten::nonzero", "", #T "_nonzero", borrow(t));                                \
  }                                                                                                \
  void T##_sort(__VA_ARGS__ T* rt, L* ri, T* t, int dimension, int descendingOrder) {              \
    pair_into(rt, ri, "aten::sort", "", #T "_sort", borrow(t), static_cast<int64_t>(dimension),    \
              descendingOrder != 0);                                                               \
  }                                                                                                \
  void T##_topk(__VA_ARGS__ T* rt, L* ri, T* t, int64_t k, int dim, int dir, int sorted) {         \
    pair_into(rt, ri, "aten::topk", "", #T "_topk", borrow(t), k, static_cast<int64_t>(dim),       \
              dir != 0, sorted != 0);                                                              \
  }                                                                                                \
  void T##_kthvalue(__VA_ARGS__ T* values, L* indices, T* t, int64_t k, int dimension,             \
                    int keepdim) {                                                                 \
    pair_into(values, indices, "aten::kthvalue", "", #T "_kthvalue", borrow(t), k,                 \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_median(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {           \
    pair_into(values, indices, "aten::median", "dim", #T "_median", borrow(t),                     \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_mode(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {             \
    pair_into(values, indices, "aten::mode", "", #T "_mode", borrow(t),                            \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  real T##_medianall(__VA_ARGS__ T* t) {                                                           \
    return reduce_all<real>("aten::median", t, #T "_medianall");                                   \
  }                                                                                                \
  TH_COMPARISON_NAMES(KFL_DEFINE_COMPARISON, T, B, real, __VA_ARGS__)
#define KFL_DEFINE_COMPARISON(op, T, B, real, ...)                                       \
  void T##_##op##Value(__VA_ARGS__ B* r, T* t, real value) {                             \
    const Tensor self = borrow(t);                                                       \
    into(r, "aten::" #op, "Tensor", #T "_" #op "Value", self, scalar_like(self, value)); \
  }                                                                                      \
  void T##_##op##Tensor(__VA_ARGS__ B* r, T* a, T* b) {                                  \
    into(r, "aten::" #op, "Tensor", #T "_" #op "Tensor", borrow(a), borrow(b));          \
  }

#define KFL_DEFINE_CPU_INT_MATH(T, S, real, dtype) KFL_DEFINE_ARITH_API(T, real, int64_t, )
TH_FORALL_CPU_INT_TENSORS(KFL_DEFINE_CPU_INT_MATH)
#define KFL_DEFINE_CPU_FLOAT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, double, )            \
  KFL_DEFINE_FLOAT_MATH_API(T, real, )
TH_FORALL_CPU_FLOAT_TENSORS(KFL_DEFINE_CPU_FLOAT_MATH)
#define KFL_DEFINE_CPU_INDEX(T, S, real, dtype) \
  KFL_DEFINE_INDEX_API(T, THLongTensor, THByteTensor, real, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_INDEX)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA_INT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, int64_t, THCState*, )
TH_FORALL_CUDA_INT_TENSORS(KFL_DEFINE_CUDA_INT_MATH)
#define KFL_DEFINE_CUDA_FLOAT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, double, THCState*, )  \
  KFL_DEFINE_FLOAT_MATH_API(T, real, THCState*, )
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_FLOAT_MATH)
#define KFL_DEFINE_CUDA_INDEX(T, S, real, dtype) \
  KFL_DEFINE_INDEX_API(T, THCudaLongTensor, THCudaByteTensor, real, THCState*, )
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_INDEX)
#endif

}  // extern "C"
