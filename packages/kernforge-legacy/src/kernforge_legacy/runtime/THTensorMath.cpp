// TH's math (THTensorMath.h): pointwise, reductions, BLAS-like products,
// orderings, indexing and comparisons, for every TH and THC tensor type
// that TH and THC had them for.
#include "THRuntime.h"

// TH's index and mask operations over an index (int64) or a mask (bool) as a
// tensor: the bodies of T_indexSelect ... T_maskedSelect, and of THC's _long
// and Byte forms, whose CPU index or mask is first moved to t's device
namespace {

// t on model's device (the current CUDA device, or the CPU), as it is when it is there already
Tensor on_device_of(const Tensor& t, const Tensor& model, const char* fn) {
  if (is_cuda(t) == is_cuda(model)) return t;
  Tensor out = empty(sizes(t), dtype_of(t), is_cuda(model), fn);
  torch::stable::copy_(out, t);
  return out;
}

// TH's "index out of range": every value of index a position along dimension
// dim of t, checked before torch runs. On the GPU torch's index kernels stop
// on a device-side assert instead, after which every CUDA call of the
// process fails. A CUDA index is read on the host once (one synchronization).
void check_index_values(const Tensor& index, const Tensor& t, int dim, const char* fn) {
  check_dim(t, dim, fn);
  if (index.numel() == 0) return;
  const auto [lo, hi] = value_range(index, fn);
  const int64_t n = sizes(t)[dim];
  if (lo < 0 || hi >= static_cast<double>(n))
    throw std::runtime_error(
        std::string(fn) +
        ": index out of range: " + std::to_string(static_cast<int64_t>(lo < 0 ? lo : hi)) +
        " is not in [0, " + std::to_string(n) + ") along dimension " + std::to_string(dim));
}

void index_select_into(const void* r, const Tensor& src, int dim, const Tensor& index,
                       const char* fn) {
  check_index_values(index, src, dim, fn);
  into(r, "aten::index_select", "", fn, src, static_cast<int64_t>(dim), index);
}
void index_copy(const Tensor& t, int dim, const Tensor& index, const Tensor& src, const char* fn) {
  check_index_values(index, t, dim, fn);
  aten("aten::index_copy_", "", fn, t, static_cast<int64_t>(dim), index, src);
}
void index_add(const Tensor& t, int dim, const Tensor& index, const Tensor& src, const char* fn) {
  check_index_values(index, t, dim, fn);
  aten("aten::scatter_add_", "", fn, t, static_cast<int64_t>(dim), spread(index, src, dim, fn),
       src);
}
template <typename Real>
void index_fill(const Tensor& t, int dim, const Tensor& index, Real value, const char* fn) {
  check_index_values(index, t, dim, fn);
  aten("aten::index_fill_", "int_Tensor", fn, t, static_cast<int64_t>(dim), index,
       scalar_like(t, value));
}
template <typename Real>
void masked_fill(const Tensor& t, const Tensor& mask, Real value, const char* fn) {
  aten("aten::masked_fill_", "Tensor", fn, t, mask, scalar_like(t, value));
}
void masked_copy(const Tensor& t, const Tensor& mask, const Tensor& src, const char* fn) {
  aten("aten::masked_scatter_", "", fn, t, mask, src);
}
void masked_select_into(const void* r, const Tensor& src, const Tensor& mask, const char* fn) {
  into(r, "aten::masked_select", "", fn, src, mask);
}

// THC's sortKeyValueInplace: key sorted along dim (dir: descending), value
// permuted as key was
void sort_key_value(const Tensor& key, const Tensor& value, int dim, bool dir, const char* fn) {
  if (sizes(key) != sizes(value))
    throw std::runtime_error(std::string(fn) +
                             ": key tensor must have same size as value tensor, got " +
                             describe(sizes(key)).str + " and " + describe(sizes(value)).str);
  check_dim(key, dim, fn);
  std::vector<StableIValue> stack = {torch::stable::detail::from(key),
                                     torch::stable::detail::from(static_cast<int64_t>(dim)),
                                     torch::stable::detail::from(dir)};
  check(torch_call_dispatcher("aten::sort", "", stack.data(), TORCH_ABI_VERSION), fn);
  const Tensor sorted = torch::stable::detail::to<Tensor>(stack[0]);
  const Tensor order = torch::stable::detail::to<Tensor>(stack[1]);
  const Tensor permuted =
      aten("aten::gather", "", fn, value, static_cast<int64_t>(dim), order, false);
  Tensor k = key, v = value;
  torch::stable::copy_(k, sorted);
  torch::stable::copy_(v, permuted);
}

// THC's integer mean along a dimension: the sum in int64 divided by the
// count with C's truncation
void integer_mean_into(const void* r, const Tensor& self, int dimension, bool keepdim,
                       const char* fn) {
  check_dim(self, dimension, fn);
  const Tensor wide = torch::stable::to(self, torch::headeronly::ScalarType::Long);
  const Tensor sum =
      aten("aten::sum", "dim_IntList", fn, wide, dims(dimension), keepdim, std::nullopt);
  const int64_t count = sizes(self)[dimension];
  assign(r,
         count == 0 ? sum
                    : aten("aten::div", "Tensor_mode", fn, sum,
                           scalar_like(sum, static_cast<double>(count)),
                           std::optional<std::string>("trunc")),
         fn);
}

#ifdef KERNFORGE_LEGACY_WITH_CUDA
// THC's calculateAdvancedIndexingOffsets: output[i] = baseOffset + the
// offset in `indexed` (its strides) of element i of the indexing, whose
// dimensions with an indexer (a 1-D int64 tensor, the same count for all)
// take that indexer's value at i's position along them, stepping together
// where indexers are adjacent; the others count over the dimension
void advanced_offsets(const void* output, const void* indexed, ptrdiff_t base,
                      const void* const* indexers, const char* fn) {
  const Tensor self = borrow(indexed);
  const int64_t ndim = self.dim();
  if (ndim > 5)
    throw std::runtime_error(std::string(fn) + ": indexed has " + std::to_string(ndim) +
                             " dimensions, at most 5");
  if (ndim > 0 && indexers == nullptr)
    throw std::runtime_error(std::string(fn) + ": indexers is NULL for a " + std::to_string(ndim) +
                             "-D tensor");
  Tensor out = borrow(output);
  const int64_t n = out.numel();
  if (n == 0) return;
  const std::vector<int64_t> shape = sizes(self), steps = strides(indexed), flat = {-1};
  // positions and offsets in double (exact below 2^53): torch's integer
  // arithmetic takes no floating alpha
  const auto real = torch::headeronly::ScalarType::Double;
  Tensor index = torch::stable::new_empty(out, {n}, real);
  torch::stable::fill_(index, 1.0);
  index = torch::stable::subtract(aten("aten::cumsum", "", fn, index, int64_t{0}, std::nullopt),
                                  scalar_like(index, 1.0), 1.0);
  Tensor offset = torch::stable::new_empty(out, {n}, real);
  torch::stable::fill_(offset, static_cast<double>(base));
  for (int64_t dim = ndim - 1; dim >= 0; --dim) {
    const bool advanced = indexers[dim] != nullptr;
    const Tensor values =
        advanced ? aten("aten::reshape", "", fn, borrow(indexers[dim]), flat) : Tensor();
    const int64_t size = advanced ? values.numel() : shape[dim];
    if (size == 0)
      throw std::runtime_error(std::string(fn) + ": dimension " + std::to_string(dim) +
                               " has size 0");
    const Tensor along = scalar_like(index, static_cast<double>(size));
    const Tensor next =
        aten("aten::div", "Tensor_mode", fn, index, along, std::optional<std::string>("floor"));
    Tensor at;
    if (advanced) {
      check_index_values(values, self, static_cast<int>(dim), fn);
      const Tensor position = torch::stable::to(aten("aten::remainder", "Tensor", fn, index, along),
                                                torch::headeronly::ScalarType::Long);
      at = torch::stable::to(aten("aten::take", "", fn, values, position), real);
    } else {
      at = torch::stable::subtract(index, aten("aten::mul", "Tensor", fn, next, along), 1.0);
    }
    offset = torch::stable::subtract(offset, at, -static_cast<double>(steps[dim]));
    if (!(advanced && dim > 0 && indexers[dim - 1] != nullptr)) index = next;
  }
  torch::stable::copy_(out, aten("aten::reshape", "", fn, offset, sizes(out)));
}
#endif

}  // namespace

extern "C" {

// TH's math of every handle type T (TH/TH.h's TH_TENSOR_ARITH_API).
#define KFL_DEFINE_ARITH_API(T, real, accreal, ...)                                                \
  void T##_add(__VA_ARGS__ T* r, T* t, real value) {                                               \
    need(#T "_add", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    axpy_op<real>(r, t, nullptr, 0.0, as_double(value), #T "_add");                                \
  }                                                                                                \
  void T##_mul(__VA_ARGS__ T* r, T* t, real value) {                                               \
    need(#T "_mul", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::mul", r, {self, scalar_like(self, value)}, #T "_mul");                           \
  }                                                                                                \
  void T##_div(__VA_ARGS__ T* r, T* t, real value) {                                               \
    need(#T "_div", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    const Tensor self = borrow(t);                                                                 \
    div_op<real>(r, self, scalar_like(self, value), #T "_div");                                    \
  }                                                                                                \
  void T##_cadd(__VA_ARGS__ T* r, T* t, real value, T* src) {                                      \
    need(#T "_cadd", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 4, "src", #T "*"}});         \
    axpy_op<real>(r, t, src, as_double(value), 0.0, #T "_cadd");                                   \
  }                                                                                                \
  void T##_csub(__VA_ARGS__ T* r, T* t, real value, T* src) {                                      \
    need(#T "_csub", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 4, "src", #T "*"}});         \
    axpy_op<real>(r, t, src, -as_double(value), 0.0, #T "_csub");                                  \
  }                                                                                                \
  void T##_cmul(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    need(#T "_cmul", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});         \
    out_op("aten::mul", r, {borrow(t), borrow(src)}, #T "_cmul");                                  \
  }                                                                                                \
  void T##_cdiv(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    need(#T "_cdiv", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});         \
    div_op<real>(r, borrow(t), borrow(src), #T "_cdiv");                                           \
  }                                                                                                \
  void T##_abs(__VA_ARGS__ T* r, T* t) {                                                           \
    need(#T "_abs", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    out_op("aten::abs", r, {borrow(t)}, #T "_abs");                                                \
  }                                                                                                \
  void T##_clamp(__VA_ARGS__ T* r, T* t, real min_value, real max_value) {                         \
    need(#T "_clamp", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                 \
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
    need(#T "_sumall", {{t, 1, "t", #T "*"}});                                                     \
    return accumulate_all<accreal>("aten::sum", t, #T "_sumall");                                  \
  }                                                                                                \
  accreal T##_prodall(__VA_ARGS__ T* t) {                                                          \
    need(#T "_prodall", {{t, 1, "t", #T "*"}});                                                    \
    return accumulate_all<accreal>("aten::prod", t, #T "_prodall");                                \
  }                                                                                                \
  void T##_sub(__VA_ARGS__ T* r, T* t, real value) {                                               \
    need(#T "_sub", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    axpy_op<real>(r, t, nullptr, 0.0, -as_double(value), #T "_sub");                               \
  }                                                                                                \
  void T##_neg(__VA_ARGS__ T* r, T* t) {                                                           \
    need(#T "_neg", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    out_op("aten::neg", r, {borrow(t)}, #T "_neg");                                                \
  }                                                                                                \
  void T##_sign(__VA_ARGS__ T* r, T* t) {                                                          \
    need(#T "_sign", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    out_op("aten::sign", r, {borrow(t)}, #T "_sign");                                              \
  }                                                                                                \
  void T##_fmod(__VA_ARGS__ T* r, T* t, real value) {                                              \
    need(#T "_fmod", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::fmod", "Tensor", #T "_fmod", self, scalar_like(self, value));                   \
  }                                                                                                \
  void T##_remainder(__VA_ARGS__ T* r, T* t, real value) {                                         \
    need(#T "_remainder", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                             \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::remainder", "Tensor", #T "_remainder", self, scalar_like(self, value));         \
  }                                                                                                \
  void T##_cfmod(__VA_ARGS__ T* r, T* t, T* src) {                                                 \
    need(#T "_cfmod", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});        \
    into(r, "aten::fmod", "Tensor", #T "_cfmod", borrow(t), borrow(src));                          \
  }                                                                                                \
  void T##_cremainder(__VA_ARGS__ T* r, T* t, T* src) {                                            \
    need(#T "_cremainder", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});   \
    into(r, "aten::remainder", "Tensor", #T "_cremainder", borrow(t), borrow(src));                \
  }                                                                                                \
  void T##_cmax(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    need(#T "_cmax", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});         \
    out_op("aten::maximum", r, {borrow(t), borrow(src)}, #T "_cmax");                              \
  }                                                                                                \
  void T##_cmin(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    need(#T "_cmin", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});         \
    out_op("aten::minimum", r, {borrow(t), borrow(src)}, #T "_cmin");                              \
  }                                                                                                \
  void T##_cmaxValue(__VA_ARGS__ T* r, T* t, real value) {                                         \
    need(#T "_cmaxValue", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                             \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::maximum", r, {self, scalar_like(self, value)}, #T "_cmaxValue");                 \
  }                                                                                                \
  void T##_cminValue(__VA_ARGS__ T* r, T* t, real value) {                                         \
    need(#T "_cminValue", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                             \
    const Tensor self = borrow(t);                                                                 \
    out_op("aten::minimum", r, {self, scalar_like(self, value)}, #T "_cminValue");                 \
  }                                                                                                \
  void T##_sum(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                               \
    need(#T "_sum", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    into(r, "aten::sum", "dim_IntList", #T "_sum", borrow(t), dims(dimension), keepdim != 0,       \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_prod(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                              \
    need(#T "_prod", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    into(r, "aten::prod", "dim_int", #T "_prod", borrow(t), static_cast<int64_t>(dimension),       \
         keepdim != 0, std::nullopt);                                                              \
  }                                                                                                \
  void T##_cumsum(__VA_ARGS__ T* r, T* t, int dimension) {                                         \
    need(#T "_cumsum", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                \
    into(r, "aten::cumsum", "", #T "_cumsum", borrow(t), static_cast<int64_t>(dimension),          \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_cumprod(__VA_ARGS__ T* r, T* t, int dimension) {                                        \
    need(#T "_cumprod", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                               \
    into(r, "aten::cumprod", "", #T "_cumprod", borrow(t), static_cast<int64_t>(dimension),        \
         std::nullopt);                                                                            \
  }                                                                                                \
  ptrdiff_t T##_numel(__VA_ARGS__ T* t) {                                                          \
    need(#T "_numel", {{t, 1, "t", #T "*"}});                                                      \
    return numel(t);                                                                               \
  }                                                                                                \
  void T##_zeros(__VA_ARGS__ T* r, THLongStorage* size) {                                          \
    need(#T "_zeros", {{r, 1, "r", #T "*"}, {size, 2, "size", "THLongStorage*"}});                 \
    filled(r, longs_of(size, #T "_zeros"), 0.0, #T "_zeros");                                      \
  }                                                                                                \
  void T##_ones(__VA_ARGS__ T* r, THLongStorage* size) {                                           \
    need(#T "_ones", {{r, 1, "r", #T "*"}, {size, 2, "size", "THLongStorage*"}});                  \
    filled(r, longs_of(size, #T "_ones"), 1.0, #T "_ones");                                        \
  }                                                                                                \
  void T##_zerosLike(__VA_ARGS__ T* r, T* input) {                                                 \
    need(#T "_zerosLike", {{r, 1, "r", #T "*"}, {input, 2, "input", #T "*"}});                     \
    filled(r, sizes(input), 0.0, #T "_zerosLike");                                                 \
  }                                                                                                \
  void T##_onesLike(__VA_ARGS__ T* r, T* input) {                                                  \
    need(#T "_onesLike", {{r, 1, "r", #T "*"}, {input, 2, "input", #T "*"}});                      \
    filled(r, sizes(input), 1.0, #T "_onesLike");                                                  \
  }                                                                                                \
  void T##_eye(__VA_ARGS__ T* r, int64_t n, int64_t m) {                                           \
    need(#T "_eye", {{r, 1, "r", #T "*"}});                                                        \
    const char* fn = #T "_eye";                                                                    \
    filled(r, {n, m > 0 ? m : n}, 0.0, fn);                                                        \
    const Tensor self = borrow(r);                                                                 \
    const Tensor diagonal =                                                                        \
        aten("aten::diagonal", "", fn, self, int64_t{0}, int64_t{0}, int64_t{1});                  \
    aten("aten::fill_", "Tensor", fn, diagonal, scalar_like(self, 1));                             \
  }                                                                                                \
  void T##_diag(__VA_ARGS__ T* r, T* t, int k) {                                                   \
    need(#T "_diag", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    into(r, "aten::diag", "", #T "_diag", borrow(t), static_cast<int64_t>(k));                     \
  }                                                                                                \
  void T##_tril(__VA_ARGS__ T* r, T* t, int64_t k) {                                               \
    need(#T "_tril", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    into(r, "aten::tril", "", #T "_tril", borrow(t), k);                                           \
  }                                                                                                \
  void T##_triu(__VA_ARGS__ T* r, T* t, int64_t k) {                                               \
    need(#T "_triu", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    into(r, "aten::triu", "", #T "_triu", borrow(t), k);                                           \
  }                                                                                                \
  accreal T##_trace(__VA_ARGS__ T* t) {                                                            \
    need(#T "_trace", {{t, 1, "t", #T "*"}});                                                      \
    return accumulated<accreal>(aten("aten::trace", "", #T "_trace", borrow(t)), #T "_trace");     \
  }                                                                                                \
  int T##_equal(__VA_ARGS__ T* ta, T* tb) {                                                        \
    need(#T "_equal", {{ta, 1, "ta", #T "*"}, {tb, 2, "tb", #T "*"}});                             \
    std::vector<StableIValue> stack = {torch::stable::detail::from(borrow(ta)),                    \
                                       torch::stable::detail::from(borrow(tb))};                   \
    check(torch_call_dispatcher("aten::equal", "", stack.data(), TORCH_ABI_VERSION), #T "_equal"); \
    return torch::stable::detail::to<bool>(stack[0]) ? 1 : 0;                                      \
  }                                                                                                \
  void T##_cat(__VA_ARGS__ T* r, T* ta, T* tb, int dimension) {                                    \
    need(#T "_cat", {{r, 1, "r", #T "*"}, {ta, 2, "ta", #T "*"}, {tb, 3, "tb", #T "*"}});          \
    const void* inputs[] = {ta, tb};                                                               \
    joined(r, inputs, 2, dimension, #T "_cat");                                                    \
  }                                                                                                \
  void T##_catArray(__VA_ARGS__ T* r, T** inputs, int n, int dimension) {                          \
    need(#T "_catArray", {{r, 1, "r", #T "*"}});                                                   \
    joined(r, reinterpret_cast<const void* const*>(inputs), n, dimension, #T "_catArray");         \
  }                                                                                                \
  void T##_range(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step) {                     \
    need(#T "_range", {{r, 1, "r", #T "*"}});                                                      \
    range_into(r, xmin, xmax, step, true, #T "_range");                                            \
  }                                                                                                \
  void T##_arange(__VA_ARGS__ T* r, accreal xmin, accreal xmax, accreal step) {                    \
    need(#T "_arange", {{r, 1, "r", #T "*"}});                                                     \
    range_into(r, xmin, xmax, step, false, #T "_arange");                                          \
  }                                                                                                \
  void T##_cpow(__VA_ARGS__ T* r, T* t, T* src) {                                                  \
    need(#T "_cpow", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});         \
    into(r, "aten::pow", "Tensor_Tensor", #T "_cpow", borrow(t), borrow(src));                     \
  }                                                                                                \
  void T##_addcmul(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2) {                         \
    need(#T "_addcmul", {{r, 1, "r", #T "*"},                                                      \
                         {t, 2, "t", #T "*"},                                                      \
                         {src1, 4, "src1", #T "*"},                                                \
                         {src2, 5, "src2", #T "*"}});                                              \
    addc_into<real>(r, t, value, src1, src2, false, #T "_addcmul");                                \
  }                                                                                                \
  void T##_addcdiv(__VA_ARGS__ T* r, T* t, real value, T* src1, T* src2) {                         \
    need(#T "_addcdiv", {{r, 1, "r", #T "*"},                                                      \
                         {t, 2, "t", #T "*"},                                                      \
                         {src1, 4, "src1", #T "*"},                                                \
                         {src2, 5, "src2", #T "*"}});                                              \
    addc_into<real>(r, t, value, src1, src2, true, #T "_addcdiv");                                 \
  }                                                                                                \
  real T##_maxall(__VA_ARGS__ T* t) {                                                              \
    need(#T "_maxall", {{t, 1, "t", #T "*"}});                                                     \
    return reduce_all<real>("aten::max", t, #T "_maxall");                                         \
  }                                                                                                \
  real T##_minall(__VA_ARGS__ T* t) {                                                              \
    need(#T "_minall", {{t, 1, "t", #T "*"}});                                                     \
    return reduce_all<real>("aten::min", t, #T "_minall");                                         \
  }

// and of the floating types only (TH_TENSOR_FLOAT_MATH_API)
#define KFL_DEFINE_FLOAT_MATH_API(T, real, ...)                                                    \
  void T##_exp(__VA_ARGS__ T* r, T* t) {                                                           \
    need(#T "_exp", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    out_op("aten::exp", r, {borrow(t)}, #T "_exp");                                                \
  }                                                                                                \
  void T##_sqrt(__VA_ARGS__ T* r, T* t) {                                                          \
    need(#T "_sqrt", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    out_op("aten::sqrt", r, {borrow(t)}, #T "_sqrt");                                              \
  }                                                                                                \
  double T##_dot(__VA_ARGS__ T* t, T* src) {                                                       \
    need(#T "_dot", {{t, 1, "t", #T "*"}, {src, 2, "src", #T "*"}});                               \
    return item(                                                                                   \
        call("aten::dot", "",                                                                      \
             {torch::stable::detail::from(borrow(t)), torch::stable::detail::from(borrow(src))},   \
             #T "_dot"),                                                                           \
        #T "_dot");                                                                                \
  }                                                                                                \
  void T##_addmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat1, T* mat2) {                \
    need(#T "_addmm", {{r, 1, "r", #T "*"},                                                        \
                       {t, 3, "t", #T "*"},                                                        \
                       {mat1, 5, "mat1", #T "*"},                                                  \
                       {mat2, 6, "mat2", #T "*"}});                                                \
    if (r != t) assign(r, borrow(t), #T "_addmm");                                                 \
    addmm_into(r, borrow(mat1), borrow(mat2), as_double(beta), as_double(alpha), #T "_addmm");     \
  }                                                                                                \
  void T##_addmv(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* mat, T* vec) {                  \
    need(#T "_addmv", {{r, 1, "r", #T "*"},                                                        \
                       {t, 3, "t", #T "*"},                                                        \
                       {mat, 5, "mat", #T "*"},                                                    \
                       {vec, 6, "vec", #T "*"}});                                                  \
    assign(r,                                                                                      \
           addmv_of(borrow(t), borrow(mat), borrow(vec), as_double(beta), as_double(alpha),        \
                    #T "_addmv"),                                                                  \
           #T "_addmv");                                                                           \
  }                                                                                                \
  TH_FLOAT_UNARY_NAMES(KFL_DEFINE_UNARY, T, __VA_ARGS__)                                           \
  void T##_round(__VA_ARGS__ T* r, T* t) {                                                         \
    need(#T "_round", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                 \
    assign(r, round_half_away(borrow(t), #T "_round"), #T "_round");                               \
  }                                                                                                \
  void T##_cinv(__VA_ARGS__ T* r, T* t) {                                                          \
    need(#T "_cinv", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    out_op("aten::reciprocal", r, {borrow(t)}, #T "_cinv");                                        \
  }                                                                                                \
  void T##_atan2(__VA_ARGS__ T* r, T* tx, T* ty) {                                                 \
    need(#T "_atan2", {{r, 1, "r", #T "*"}, {tx, 2, "tx", #T "*"}, {ty, 3, "ty", #T "*"}});        \
    out_op("aten::atan2", r, {borrow(tx), borrow(ty)}, #T "_atan2");                               \
  }                                                                                                \
  void T##_pow(__VA_ARGS__ T* r, T* t, real value) {                                               \
    need(#T "_pow", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::pow", "Tensor_Tensor", #T "_pow", self, scalar_like(self, value));              \
  }                                                                                                \
  void T##_tpow(__VA_ARGS__ T* r, real value, T* t) {                                              \
    need(#T "_tpow", {{r, 1, "r", #T "*"}, {t, 3, "t", #T "*"}});                                  \
    const Tensor self = borrow(t);                                                                 \
    into(r, "aten::pow", "Tensor_Tensor", #T "_tpow", scalar_like(self, value), self);             \
  }                                                                                                \
  void T##_lerp(__VA_ARGS__ T* r, T* a, T* b, real weight) {                                       \
    need(#T "_lerp", {{r, 1, "r", #T "*"}, {a, 2, "a", #T "*"}, {b, 3, "b", #T "*"}});             \
    const Tensor self = borrow(a);                                                                 \
    into(r, "aten::lerp", "Tensor", #T "_lerp", self, borrow(b), scalar_like(self, weight));       \
  }                                                                                                \
  void T##_mean(__VA_ARGS__ T* r, T* t, int dimension, int keepdim) {                              \
    need(#T "_mean", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    into(r, "aten::mean", "dim", #T "_mean", borrow(t), dims(dimension), keepdim != 0,             \
         std::nullopt);                                                                            \
  }                                                                                                \
  void T##_std(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim) {                   \
    need(#T "_std", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    into(r, "aten::std", "dim", #T "_std", borrow(t), dims(dimension), biased == 0, keepdim != 0); \
  }                                                                                                \
  void T##_var(__VA_ARGS__ T* r, T* t, int dimension, int biased, int keepdim) {                   \
    need(#T "_var", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    into(r, "aten::var", "dim", #T "_var", borrow(t), dims(dimension), biased == 0, keepdim != 0); \
  }                                                                                                \
  double T##_meanall(__VA_ARGS__ T* t) {                                                           \
    need(#T "_meanall", {{t, 1, "t", #T "*"}});                                                    \
    return item(aten("aten::mean", "", #T "_meanall", borrow(t), std::nullopt), #T "_meanall");    \
  }                                                                                                \
  double T##_varall(__VA_ARGS__ T* t, int biased) {                                                \
    need(#T "_varall", {{t, 1, "t", #T "*"}});                                                     \
    return item(aten("aten::var", "", #T "_varall", borrow(t), biased == 0), #T "_varall");        \
  }                                                                                                \
  double T##_stdall(__VA_ARGS__ T* t, int biased) {                                                \
    need(#T "_stdall", {{t, 1, "t", #T "*"}});                                                     \
    return item(aten("aten::std", "", #T "_stdall", borrow(t), biased == 0), #T "_stdall");        \
  }                                                                                                \
  void T##_addr(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* vec1, T* vec2) {                 \
    need(#T "_addr", {{r, 1, "r", #T "*"},                                                         \
                      {t, 3, "t", #T "*"},                                                         \
                      {vec1, 5, "vec1", #T "*"},                                                   \
                      {vec2, 6, "vec2", #T "*"}});                                                 \
    const char* fn = #T "_addr";                                                                   \
    const Tensor outer = aten("aten::outer", "", fn, borrow(vec1), borrow(vec2));                  \
    assign(r, scaled_sum(borrow(t), as_double(beta), outer, as_double(alpha), fn), fn);            \
  }                                                                                                \
  void T##_addbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2) {           \
    need(#T "_addbmm", {{r, 1, "r", #T "*"},                                                       \
                        {t, 3, "t", #T "*"},                                                       \
                        {batch1, 5, "batch1", #T "*"},                                             \
                        {batch2, 6, "batch2", #T "*"}});                                           \
    const char* fn = #T "_addbmm";                                                                 \
    const Tensor products = aten("aten::bmm", "", fn, borrow(batch1), borrow(batch2));             \
    const Tensor sum =                                                                             \
        aten("aten::sum", "dim_IntList", fn, products, dims(0), false, std::nullopt);              \
    assign(r, scaled_sum(borrow(t), as_double(beta), sum, as_double(alpha), fn), fn);              \
  }                                                                                                \
  void T##_baddbmm(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* batch1, T* batch2) {          \
    need(#T "_baddbmm", {{r, 1, "r", #T "*"},                                                      \
                         {t, 3, "t", #T "*"},                                                      \
                         {batch1, 5, "batch1", #T "*"},                                            \
                         {batch2, 6, "batch2", #T "*"}});                                          \
    const char* fn = #T "_baddbmm";                                                                \
    if (r != t) assign(r, borrow(t), fn);                                                          \
    baddbmm_into(borrow(r), borrow(batch1), borrow(batch2), as_double(beta), as_double(alpha),     \
                 fn);                                                                              \
  }                                                                                                \
  void T##_norm(__VA_ARGS__ T* r, T* t, real value, int dimension, int keepdim) {                  \
    need(#T "_norm", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                  \
    const char* fn = #T "_norm";                                                                   \
    assign(r, p_norm(borrow(t), as_double(value), {dimension}, keepdim != 0, fn), fn);             \
  }                                                                                                \
  double T##_normall(__VA_ARGS__ T* t, real value) {                                               \
    need(#T "_normall", {{t, 1, "t", #T "*"}});                                                    \
    const char* fn = #T "_normall";                                                                \
    return item(p_norm(borrow(t), as_double(value), {}, false, fn), fn);                           \
  }                                                                                                \
  void T##_renorm(__VA_ARGS__ T* r, T* t, real value, int dimension, real maxnorm) {               \
    need(#T "_renorm", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                \
    const char* fn = #T "_renorm";                                                                 \
    assign(r, renormed(borrow(t), as_double(value), dimension, as_double(maxnorm), fn), fn);       \
  }                                                                                                \
  double T##_dist(__VA_ARGS__ T* a, T* b, real value) {                                            \
    need(#T "_dist", {{a, 1, "a", #T "*"}, {b, 2, "b", #T "*"}});                                  \
    return distance(a, b, as_double(value), #T "_dist");                                           \
  }                                                                                                \
  void T##_linspace(__VA_ARGS__ T* r, real a, real b, int64_t n) {                                 \
    need(#T "_linspace", {{r, 1, "r", #T "*"}});                                                   \
    spaced_into(r, as_double(a), as_double(b), n, false, #T "_linspace");                          \
  }                                                                                                \
  void T##_logspace(__VA_ARGS__ T* r, real a, real b, int64_t n) {                                 \
    need(#T "_logspace", {{r, 1, "r", #T "*"}});                                                   \
    spaced_into(r, as_double(a), as_double(b), n, true, #T "_logspace");                           \
  }                                                                                                \
  void T##_histc(__VA_ARGS__ T* hist, T* tensor, int64_t nbins, real minvalue, real maxvalue) {    \
    need(#T "_histc", {{hist, 1, "hist", #T "*"}, {tensor, 2, "tensor", #T "*"}});                 \
    histc_into(hist, tensor, nbins, as_double(minvalue), as_double(maxvalue), #T "_histc");        \
  }
#define KFL_DEFINE_UNARY(name, T, ...)                              \
  void T##_##name(__VA_ARGS__ T* r, T* t) {                         \
    need(#T "_" #name, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}}); \
    out_op("aten::" #name, r, {borrow(t)}, #T "_" #name);           \
  }

// of every type (TH_TENSOR_INDEX_API)
#define KFL_DEFINE_INDEX_API(T, L, B, real, ...)                                                   \
  void T##_max(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {              \
    need(#T "_max",                                                                                \
         {{values, 1, "values", #T "*"}, {indices, 2, "indices", #L "*"}, {t, 3, "t", #T "*"}});   \
    pair_into(values, indices, "aten::max", "dim", #T "_max", borrow(t),                           \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_min(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {              \
    need(#T "_min",                                                                                \
         {{values, 1, "values", #T "*"}, {indices, 2, "indices", #L "*"}, {t, 3, "t", #T "*"}});   \
    pair_into(values, indices, "aten::min", "dim", #T "_min", borrow(t),                           \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_indexSelect(__VA_ARGS__ T* r, T* src, int dim, L* index) {                              \
    need(#T "_indexSelect",                                                                        \
         {{r, 1, "r", #T "*"}, {src, 2, "src", #T "*"}, {index, 4, "index", #L "*"}});             \
    index_select_into(r, borrow(src), dim, borrow(index), #T "_indexSelect");                      \
  }                                                                                                \
  void T##_indexCopy(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                \
    need(#T "_indexCopy",                                                                          \
         {{t, 1, "t", #T "*"}, {index, 3, "index", #L "*"}, {src, 4, "src", #T "*"}});             \
    index_copy(borrow(t), dim, borrow(index), borrow(src), #T "_indexCopy");                       \
  }                                                                                                \
  void T##_indexAdd(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                 \
    need(#T "_indexAdd",                                                                           \
         {{t, 1, "t", #T "*"}, {index, 3, "index", #L "*"}, {src, 4, "src", #T "*"}});             \
    index_add(borrow(t), dim, borrow(index), borrow(src), #T "_indexAdd");                         \
  }                                                                                                \
  void T##_indexFill(__VA_ARGS__ T* t, int dim, L* index, real value) {                            \
    need(#T "_indexFill", {{t, 1, "t", #T "*"}, {index, 3, "index", #L "*"}});                     \
    index_fill(borrow(t), dim, borrow(index), value, #T "_indexFill");                             \
  }                                                                                                \
  void T##_gather(__VA_ARGS__ T* r, T* src, int dim, L* index) {                                   \
    need(#T "_gather",                                                                             \
         {{r, 1, "r", #T "*"}, {src, 2, "src", #T "*"}, {index, 4, "index", #L "*"}});             \
    const Tensor from = borrow(src), at = borrow(index);                                           \
    check_index_values(at, from, dim, #T "_gather");                                               \
    into(r, "aten::gather", "", #T "_gather", from, static_cast<int64_t>(dim), at, false);         \
  }                                                                                                \
  void T##_scatter(__VA_ARGS__ T* t, int dim, L* index, T* src) {                                  \
    need(#T "_scatter",                                                                            \
         {{t, 1, "t", #T "*"}, {index, 3, "index", #L "*"}, {src, 4, "src", #T "*"}});             \
    const Tensor self = borrow(t), at = borrow(index);                                             \
    check_index_values(at, self, dim, #T "_scatter");                                              \
    aten("aten::scatter_", "src", #T "_scatter", self, static_cast<int64_t>(dim), at,              \
         borrow(src));                                                                             \
  }                                                                                                \
  void T##_scatterAdd(__VA_ARGS__ T* t, int dim, L* index, T* src) {                               \
    need(#T "_scatterAdd",                                                                         \
         {{t, 1, "t", #T "*"}, {index, 3, "index", #L "*"}, {src, 4, "src", #T "*"}});             \
    const Tensor self = borrow(t), at = borrow(index);                                             \
    check_index_values(at, self, dim, #T "_scatterAdd");                                           \
    aten("aten::scatter_add_", "", #T "_scatterAdd", self, static_cast<int64_t>(dim), at,          \
         borrow(src));                                                                             \
  }                                                                                                \
  void T##_scatterFill(__VA_ARGS__ T* t, int dim, L* index, real value) {                          \
    need(#T "_scatterFill", {{t, 1, "t", #T "*"}, {index, 3, "index", #L "*"}});                   \
    const Tensor self = borrow(t), at = borrow(index);                                             \
    check_index_values(at, self, dim, #T "_scatterFill");                                          \
    aten("aten::scatter_", "src", #T "_scatterFill", self, static_cast<int64_t>(dim), at,          \
         aten("aten::expand", "", #T "_scatterFill", scalar_like(self, value), sizes(at), false)); \
  }                                                                                                \
  void T##_maskedFill(__VA_ARGS__ T* t, B* mask, real value) {                                     \
    need(#T "_maskedFill", {{t, 1, "t", #T "*"}, {mask, 2, "mask", #B "*"}});                      \
    masked_fill(borrow(t), as_bool(mask), value, #T "_maskedFill");                                \
  }                                                                                                \
  void T##_maskedCopy(__VA_ARGS__ T* t, B* mask, T* src) {                                         \
    need(#T "_maskedCopy",                                                                         \
         {{t, 1, "t", #T "*"}, {mask, 2, "mask", #B "*"}, {src, 3, "src", #T "*"}});               \
    masked_copy(borrow(t), as_bool(mask), borrow(src), #T "_maskedCopy");                          \
  }                                                                                                \
  void T##_maskedSelect(__VA_ARGS__ T* r, T* src, B* mask) {                                       \
    need(#T "_maskedSelect",                                                                       \
         {{r, 1, "r", #T "*"}, {src, 2, "src", #T "*"}, {mask, 3, "mask", #B "*"}});               \
    masked_select_into(r, borrow(src), as_bool(mask), #T "_maskedSelect");                         \
  }                                                                                                \
  void T##_nonzero(__VA_ARGS__ L* subscript, T* t) {                                               \
    need(#T "_nonzero", {{subscript, 1, "subscript", #L "*"}, {t, 2, "t", #T "*"}});               \
    into(subscript, "aten::nonzero", "", #T "_nonzero", borrow(t));                                \
  }                                                                                                \
  void T##_sort(__VA_ARGS__ T* rt, L* ri, T* t, int dimension, int descendingOrder) {              \
    need(#T "_sort", {{rt, 1, "rt", #T "*"}, {ri, 2, "ri", #L "*"}, {t, 3, "t", #T "*"}});         \
    pair_into(rt, ri, "aten::sort", "", #T "_sort", borrow(t), static_cast<int64_t>(dimension),    \
              descendingOrder != 0);                                                               \
  }                                                                                                \
  void T##_topk(__VA_ARGS__ T* rt, L* ri, T* t, int64_t k, int dim, int dir, int sorted) {         \
    need(#T "_topk", {{rt, 1, "rt", #T "*"}, {ri, 2, "ri", #L "*"}, {t, 3, "t", #T "*"}});         \
    pair_into(rt, ri, "aten::topk", "", #T "_topk", borrow(t), k, static_cast<int64_t>(dim),       \
              dir != 0, sorted != 0);                                                              \
  }                                                                                                \
  void T##_kthvalue(__VA_ARGS__ T* values, L* indices, T* t, int64_t k, int dimension,             \
                    int keepdim) {                                                                 \
    need(#T "_kthvalue",                                                                           \
         {{values, 1, "values", #T "*"}, {indices, 2, "indices", #L "*"}, {t, 3, "t", #T "*"}});   \
    pair_into(values, indices, "aten::kthvalue", "", #T "_kthvalue", borrow(t), k,                 \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_median(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {           \
    need(#T "_median",                                                                             \
         {{values, 1, "values", #T "*"}, {indices, 2, "indices", #L "*"}, {t, 3, "t", #T "*"}});   \
    pair_into(values, indices, "aten::median", "dim", #T "_median", borrow(t),                     \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  void T##_mode(__VA_ARGS__ T* values, L* indices, T* t, int dimension, int keepdim) {             \
    need(#T "_mode",                                                                               \
         {{values, 1, "values", #T "*"}, {indices, 2, "indices", #L "*"}, {t, 3, "t", #T "*"}});   \
    pair_into(values, indices, "aten::mode", "", #T "_mode", borrow(t),                            \
              static_cast<int64_t>(dimension), keepdim != 0);                                      \
  }                                                                                                \
  real T##_medianall(__VA_ARGS__ T* t) {                                                           \
    need(#T "_medianall", {{t, 1, "t", #T "*"}});                                                  \
    return reduce_all<real>("aten::median", t, #T "_medianall");                                   \
  }                                                                                                \
  TH_COMPARISON_NAMES(KFL_DEFINE_COMPARISON, T, B, real, __VA_ARGS__)
#define KFL_DEFINE_COMPARISON(op, T, B, real, ...)                                              \
  void T##_##op##Value(__VA_ARGS__ B* r, T* t, real value) {                                    \
    need(#T "_" #op "Value", {{r, 1, "r", #B "*"}, {t, 2, "t", #T "*"}});                       \
    const Tensor self = borrow(t);                                                              \
    into(r, "aten::" #op, "Tensor", #T "_" #op "Value", self, scalar_like(self, value));        \
  }                                                                                             \
  void T##_##op##Tensor(__VA_ARGS__ B* r, T* a, T* b) {                                         \
    need(#T "_" #op "Tensor", {{r, 1, "r", #B "*"}, {a, 2, "a", #T "*"}, {b, 3, "b", #T "*"}}); \
    into(r, "aten::" #op, "Tensor", #T "_" #op "Tensor", borrow(a), borrow(b));                 \
  }

// TH's comparisons into T itself, bitwise operations, shifts and cross, of every type
#define KFL_DEFINE_LOGICAL_API(T, real, ...)                                            \
  TH_COMPARISON_NAMES(KFL_DEFINE_COMPARISON_T, T, real, __VA_ARGS__)                    \
  KFL_DEFINE_BITWISE(bitand, bitwise_and, T, real, __VA_ARGS__)                         \
  KFL_DEFINE_BITWISE(bitor, bitwise_or, T, real, __VA_ARGS__)                           \
  KFL_DEFINE_BITWISE(bitxor, bitwise_xor, T, real, __VA_ARGS__)                         \
  KFL_DEFINE_SHIFT(lshift, true, T, real, __VA_ARGS__)                                  \
  KFL_DEFINE_SHIFT(rshift, false, T, real, __VA_ARGS__)                                 \
  void T##_cross(__VA_ARGS__ T* r, T* a, T* b, int dimension) {                         \
    need(#T "_cross", {{r, 1, "r", #T "*"}, {a, 2, "a", #T "*"}, {b, 3, "b", #T "*"}}); \
    cross_into(r, a, b, dimension, #T "_cross");                                        \
  }
#define KFL_DEFINE_COMPARISON_T(op, T, real, ...)                                                \
  void T##_##op##ValueT(__VA_ARGS__ T* r, T* t, real value) {                                    \
    need(#T "_" #op "ValueT", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                       \
    const Tensor self = borrow(t);                                                               \
    into(r, "aten::" #op, "Tensor", #T "_" #op "ValueT", self, scalar_like(self, value));        \
  }                                                                                              \
  void T##_##op##TensorT(__VA_ARGS__ T* r, T* a, T* b) {                                         \
    need(#T "_" #op "TensorT", {{r, 1, "r", #T "*"}, {a, 2, "a", #T "*"}, {b, 3, "b", #T "*"}}); \
    into(r, "aten::" #op, "Tensor", #T "_" #op "TensorT", borrow(a), borrow(b));                 \
  }
#define KFL_DEFINE_BITWISE(name, aten_name, T, real, ...)                                         \
  void T##_##name(__VA_ARGS__ T* r, T* t, real value) {                                           \
    need(#T "_" #name, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                               \
    const Tensor self = borrow(t);                                                                \
    bitwise_into<real>(r, "aten::" #aten_name, #name, self, scalar_like(self, value),             \
                       #T "_" #name);                                                             \
  }                                                                                               \
  void T##_c##name(__VA_ARGS__ T* r, T* t, T* src) {                                              \
    need(#T "_c" #name, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}});     \
    bitwise_into<real>(r, "aten::" #aten_name, "c" #name, borrow(t), borrow(src), #T "_c" #name); \
  }
#define KFL_DEFINE_SHIFT(name, left, T, real, ...)                                            \
  void T##_##name(__VA_ARGS__ T* r, T* t, real value) {                                       \
    need(#T "_" #name, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                           \
    const Tensor self = borrow(t);                                                            \
    shift_into<real>(r, left, self, scalar_like(self, value), #T "_" #name);                  \
  }                                                                                           \
  void T##_c##name(__VA_ARGS__ T* r, T* t, T* src) {                                          \
    need(#T "_c" #name, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {src, 3, "src", #T "*"}}); \
    shift_into<real>(r, left, borrow(t), borrow(src), #T "_c" #name);                         \
  }

#define KFL_DEFINE_CPU_INT_MATH(T, S, real, dtype) KFL_DEFINE_ARITH_API(T, real, int64_t, )
TH_FORALL_CPU_INT_TENSORS(KFL_DEFINE_CPU_INT_MATH)
#define KFL_DEFINE_CPU_FLOAT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, double, )            \
  KFL_DEFINE_FLOAT_MATH_API(T, real, )
TH_FORALL_CPU_FLOAT_TENSORS(KFL_DEFINE_CPU_FLOAT_MATH)
#define KFL_DEFINE_CPU_INDEX(T, S, real, dtype)               \
  KFL_DEFINE_INDEX_API(T, THLongTensor, THByteTensor, real, ) \
  KFL_DEFINE_LOGICAL_API(T, real, )
TH_FORALL_CPU_TENSORS(KFL_DEFINE_CPU_INDEX)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
// THC's mean, meanall and dist of its integer types (TH had none): the sum
// in int64 divided by the count with C's truncation, an integer, as THC's;
// the p-distance computed in double and truncated to THC's integer accreal
#define KFL_DEFINE_CUDA_INT_MATH(T, S, real, dtype)                            \
  KFL_DEFINE_ARITH_API(T, real, int64_t, THCState*, )                          \
  void T##_mean(THCState*, T* r, T* t, int dimension, int keepdim) {           \
    need(#T "_mean", {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});              \
    integer_mean_into(r, borrow(t), dimension, keepdim != 0, #T "_mean");      \
  }                                                                            \
  int64_t T##_meanall(THCState* s, T* t) {                                     \
    need(#T "_meanall", {{t, 1, "t", #T "*"}});                                \
    if (numel(t) == 0) throw std::runtime_error(#T "_meanall: empty Tensor");  \
    return T##_sumall(s, t) / numel(t);                                        \
  }                                                                            \
  int64_t T##_dist(THCState*, T* a, T* b, real value) {                        \
    need(#T "_dist", {{a, 1, "a", #T "*"}, {b, 2, "b", #T "*"}});              \
    return static_cast<int64_t>(distance(a, b, as_double(value), #T "_dist")); \
  }
TH_FORALL_CUDA_INT_TENSORS(KFL_DEFINE_CUDA_INT_MATH)
#define KFL_DEFINE_CUDA_FLOAT_MATH(T, S, real, dtype) \
  KFL_DEFINE_ARITH_API(T, real, double, THCState*, )  \
  KFL_DEFINE_FLOAT_MATH_API(T, real, THCState*, )
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_FLOAT_MATH)
#define KFL_DEFINE_CUDA_INDEX(T, S, real, dtype)                                 \
  KFL_DEFINE_INDEX_API(T, THCudaLongTensor, THCudaByteTensor, real, THCState*, ) \
  KFL_DEFINE_LOGICAL_API(T, real, THCState*, )                                   \
  KFL_DEFINE_HOST_INDEX_API(T, real)
// THC's forms with the index a THLongTensor or the mask a THByteTensor, on the CPU
#define KFL_DEFINE_HOST_INDEX_API(T, real)                                                        \
  void T##_indexSelect_long(THCState*, T* r, T* src, int dim, THLongTensor* index) {              \
    const char* fn = #T "_indexSelect_long";                                                      \
    need(fn,                                                                                      \
         {{r, 1, "r", #T "*"}, {src, 2, "src", #T "*"}, {index, 4, "index", "THLongTensor*"}});   \
    const Tensor from = borrow(src);                                                              \
    index_select_into(r, from, dim, on_device_of(borrow(index), from, fn), fn);                   \
  }                                                                                               \
  void T##_indexCopy_long(THCState*, T* t, int dim, THLongTensor* index, T* src) {                \
    const char* fn = #T "_indexCopy_long";                                                        \
    need(fn,                                                                                      \
         {{t, 1, "t", #T "*"}, {index, 3, "index", "THLongTensor*"}, {src, 4, "src", #T "*"}});   \
    const Tensor self = borrow(t);                                                                \
    index_copy(self, dim, on_device_of(borrow(index), self, fn), borrow(src), fn);                \
  }                                                                                               \
  void T##_indexAdd_long(THCState*, T* t, int dim, THLongTensor* index, T* src) {                 \
    const char* fn = #T "_indexAdd_long";                                                         \
    need(fn,                                                                                      \
         {{t, 1, "t", #T "*"}, {index, 3, "index", "THLongTensor*"}, {src, 4, "src", #T "*"}});   \
    const Tensor self = borrow(t);                                                                \
    index_add(self, dim, on_device_of(borrow(index), self, fn), borrow(src), fn);                 \
  }                                                                                               \
  void T##_indexFill_long(THCState*, T* t, int dim, THLongTensor* index, real value) {            \
    const char* fn = #T "_indexFill_long";                                                        \
    need(fn, {{t, 1, "t", #T "*"}, {index, 3, "index", "THLongTensor*"}});                        \
    const Tensor self = borrow(t);                                                                \
    index_fill(self, dim, on_device_of(borrow(index), self, fn), value, fn);                      \
  }                                                                                               \
  void T##_maskedFillByte(THCState*, T* t, THByteTensor* mask, real value) {                      \
    const char* fn = #T "_maskedFillByte";                                                        \
    need(fn, {{t, 1, "t", #T "*"}, {mask, 2, "mask", "THByteTensor*"}});                          \
    const Tensor self = borrow(t);                                                                \
    masked_fill(self, on_device_of(as_bool(mask), self, fn), value, fn);                          \
  }                                                                                               \
  void T##_maskedCopyByte(THCState*, T* t, THByteTensor* mask, T* src) {                          \
    const char* fn = #T "_maskedCopyByte";                                                        \
    need(fn, {{t, 1, "t", #T "*"}, {mask, 2, "mask", "THByteTensor*"}, {src, 3, "src", #T "*"}}); \
    const Tensor self = borrow(t);                                                                \
    masked_copy(self, on_device_of(as_bool(mask), self, fn), borrow(src), fn);                    \
  }                                                                                               \
  void T##_maskedSelectByte(THCState*, T* r, T* src, THByteTensor* mask) {                        \
    const char* fn = #T "_maskedSelectByte";                                                      \
    need(fn, {{r, 1, "r", #T "*"}, {src, 2, "src", #T "*"}, {mask, 3, "mask", "THByteTensor*"}}); \
    const Tensor from = borrow(src);                                                              \
    masked_select_into(r, from, on_device_of(as_bool(mask), from, fn), fn);                       \
  }                                                                                               \
  void T##_sortKeyValueInplace(THCState*, T* key, THCudaLongTensor* value, int dim, bool dir) {   \
    const char* fn = #T "_sortKeyValueInplace";                                                   \
    need(fn, {{key, 1, "key", #T "*"}, {value, 2, "value", "THCudaLongTensor*"}});                \
    sort_key_value(borrow(key), borrow(value), dim, dir, fn);                                     \
  }                                                                                               \
  void T##_calculateAdvancedIndexingOffsets(THCState*, THCudaLongTensor* output, T* indexed,      \
                                            ptrdiff_t baseOffset, THCudaLongTensor** indexers) {  \
    const char* fn = #T "_calculateAdvancedIndexingOffsets";                                      \
    need(fn, {{output, 1, "output", "THCudaLongTensor*"}, {indexed, 2, "indexed", #T "*"}});      \
    advanced_offsets(output, indexed, baseOffset, reinterpret_cast<const void* const*>(indexers), \
                     fn);                                                                         \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_INDEX)
#endif

}  // extern "C"

// TH's randperm, reshape, match and bhistc, and the byte tensors' logicalall
// and logicalany
namespace {

// r := a random permutation of 0 .. n - 1: from gen by TH's swaps (each a
// 32-bit number), or (gen NULL) torch's randperm with torch's generator
void randperm_into(const void* r, THGenerator* gen, int64_t n, const char* fn) {
  if (n <= 0)
    throw std::runtime_error(std::string(fn) +
                             ": must be strictly positive, got n = " + std::to_string(n));
  if (gen == nullptr) {
    assign(
        r,
        aten("aten::randperm", "", fn, n, std::nullopt, std::nullopt, std::nullopt, std::nullopt),
        fn);
    return;
  }
  Tensor perm = empty({n}, aoti_torch_dtype_int64(), false, fn);
  auto* p = static_cast<int64_t*>(perm.data_ptr());
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  for (int64_t i = 0; i < n - 1; ++i)
    std::swap(p[i], p[i + static_cast<int64_t>(gen->engine() % static_cast<uint64_t>(n - i))]);
  assign(r, perm, fn);
}

// r [N1, N2] := gain * the squared distance of each row of m1 to each of m2
void match_into(const void* r, const Tensor& m1, const Tensor& m2, double gain, const char* fn) {
  const std::vector<int64_t> a = sizes(m1), b = sizes(m2);
  if (a.size() != 2 || b.size() != 2 || a[1] != b[1])
    throw std::runtime_error(std::string(fn) +
                             ": m1 and m2 must be matrices of one row length, "
                             "got " +
                             describe(a).str + " and " + describe(b).str);
  const Tensor x = on_host(m1, fn), y = on_host(m2, fn);
  const double *px = static_cast<const double*>(x.data_ptr()),
               *py = static_cast<const double*>(y.data_ptr());
  Tensor out = empty({a[0], b[0]}, aoti_torch_dtype_float64(), false, fn);
  auto* o = static_cast<double*>(out.data_ptr());
  for (int64_t i = 0; i < a[0]; ++i)
    for (int64_t j = 0; j < b[0]; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < a[1]; ++k) {
        const double d = px[i * a[1] + k] - py[j * a[1] + k];
        sum += d * d;
      }
      o[i * b[0] + j] = gain * sum;
    }
  assign(r, like(out, m1, fn), fn);
}

// hist [rows, nbins] := histc of each row of the 2-D t over one range:
// [lo, hi], or t's [min, max] where the two are equal (widened by 1 each
// way when those are equal too)
void bhistc_into(const void* hist, const Tensor& t, int64_t nbins, double lo, double hi,
                 const char* fn) {
  if (nbins <= 0)
    throw std::runtime_error(std::string(fn) + ": nbins must be positive, got " +
                             std::to_string(nbins));
  const std::vector<int64_t> shape = sizes(t);
  if (shape.size() != 2)
    throw std::runtime_error(std::string(fn) + ": tensor must be 2-D, got " + describe(shape).str);
  const Tensor x = on_host(t, fn);
  const double* p = static_cast<const double*>(x.data_ptr());
  const int64_t n = shape[0] * shape[1];
  if (lo == hi && n > 0) {
    lo = *std::min_element(p, p + n);
    hi = *std::max_element(p, p + n);
  }
  if (lo == hi) lo -= 1, hi += 1;
  Tensor out = empty({shape[0], nbins}, aoti_torch_dtype_float64(), false, fn);
  auto* o = static_cast<double*>(out.data_ptr());
  std::fill(o, o + shape[0] * nbins, 0.0);
  for (int64_t r = 0; r < shape[0]; ++r)
    for (int64_t c = 0; c < shape[1]; ++c) {
      const double v = p[r * shape[1] + c];
      if (v < lo || v > hi) continue;
      const int64_t bin = static_cast<int64_t>((v - lo) / (hi - lo) * nbins);
      o[r * nbins + std::min(bin, nbins - 1)] += 1;
    }
  assign(hist, like(out, t, fn), fn);
}

// r := a copy of t's elements in the shape size (TH's and THC's reshape)
void reshape_into(const void* r, const void* t, const THLongStorage* size, const char* fn) {
  const Tensor shaped = aten("aten::reshape", "", fn, borrow(t), longs_of(size, fn));
  assign(r, aten("aten::clone", "", fn, shaped, std::nullopt), fn);
}

// whether all (aten::all) or any (aten::any) element of a byte tensor is nonzero
int logical(const void* self, const char* how, const char* type, const char* fn) {
  need(fn, {{self, 1, "self", type}});
  return item(aten(how, "", fn, borrow(self)), fn) != 0;
}

}  // namespace

extern "C" {

#define KFL_DEFINE_SHAPE_API(T, real)                                              \
  void T##_randperm(T* r, THGenerator* gen, int64_t n) {                           \
    need(#T "_randperm", {{r, 1, "r", #T "*"}});                                   \
    randperm_into(r, gen, n, #T "_randperm");                                      \
  }                                                                                \
  void T##_reshape(T* r, T* t, THLongStorage* size) {                              \
    const char* fn = #T "_reshape";                                                \
    reshape_into(r, t, size, fn);                                                  \
  }                                                                                \
  void T##_match(T* r, T* m1, T* m2, real gain) {                                  \
    const char* fn = #T "_match";                                                  \
    need(fn, {{r, 1, "r", #T "*"}, {m1, 2, "m1", #T "*"}, {m2, 3, "m2", #T "*"}}); \
    match_into(r, borrow(m1), borrow(m2), as_double(gain), fn);                    \
  }
#define KFL_DEFINE_CPU_SHAPE(T, S, real, dtype) KFL_DEFINE_SHAPE_API(T, real)
TH_FORALL_CPU_INT_TENSORS(KFL_DEFINE_CPU_SHAPE)
KFL_DEFINE_SHAPE_API(THFloatTensor, float)
KFL_DEFINE_SHAPE_API(THDoubleTensor, double)
#define KFL_DEFINE_BHISTC(T, real)                                                   \
  void T##_bhistc(T* hist, T* tensor, int64_t nbins, real minvalue, real maxvalue) { \
    const char* fn = #T "_bhistc";                                                   \
    need(fn, {{hist, 1, "hist", #T "*"}, {tensor, 2, "tensor", #T "*"}});            \
    bhistc_into(hist, borrow(tensor), nbins, minvalue, maxvalue, fn);                \
  }
KFL_DEFINE_BHISTC(THFloatTensor, float)
KFL_DEFINE_BHISTC(THDoubleTensor, double)

int THByteTensor_logicalall(THByteTensor* self) {
  return logical(self, "aten::all", "THByteTensor*", "THByteTensor_logicalall");
}
int THByteTensor_logicalany(THByteTensor* self) {
  return logical(self, "aten::any", "THByteTensor*", "THByteTensor_logicalany");
}
#ifdef KERNFORGE_LEGACY_WITH_CUDA
int THCudaByteTensor_logicalall(THCState*, THCudaByteTensor* self) {
  return logical(self, "aten::all", "THCudaByteTensor*", "THCudaByteTensor_logicalall");
}
int THCudaByteTensor_logicalany(THCState*, THCudaByteTensor* self) {
  return logical(self, "aten::any", "THCudaByteTensor*", "THCudaByteTensor_logicalany");
}
#define KFL_DEFINE_CUDA_RESHAPE(T, S, real, dtype)                                             \
  void T##_reshape(THCState*, T* r, T* t, THLongStorage* size) {                               \
    const char* fn = #T "_reshape";                                                            \
    need(fn, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}, {size, 3, "size", "THLongStorage*"}}); \
    reshape_into(r, t, size, fn);                                                              \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_RESHAPE)
#endif

}  // extern "C"

// The integer types' BLAS-like products, dot and cinv, as TH's loops
// computed them: in the type's own arithmetic (int64_t here, wrapping when
// stored back to a narrower type, as C's did)
namespace {

enum class Product { mm, mv, r, bmm_sum, bmm };

Tensor as_int64(const void* h, const char* fn) {
  Tensor x = empty(sizes(h), aoti_torch_dtype_int64(), false, fn);
  torch::stable::copy_(x, borrow(h));
  return x;
}

// out [n, p] (+)= a [n, k] b [k, p], contiguous
void int_mm(const int64_t* a, const int64_t* b, int64_t* out, int64_t n, int64_t k, int64_t p) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < p; ++j) out[i * p + j] += a[i * k + l] * b[l * p + j];
}

// r := beta t + alpha (a x b), x the product `how`; t of the product's shape
void int_product(const void* r, int64_t beta, const void* t, int64_t alpha, const void* a,
                 const void* b, Product how, const char* fn) {
  const std::vector<int64_t> sa = sizes(a), sb = sizes(b);
  const auto bad = [&](const char* want) {
    throw std::runtime_error(std::string(fn) + ": " + want + ", got " + describe(sa).str + " and " +
                             describe(sb).str);
  };
  int64_t B = 1, n, k, p;
  std::vector<int64_t> shape;
  switch (how) {
    case Product::mm:
      if (sa.size() != 2 || sb.size() != 2 || sa[1] != sb[0])
        bad("matrices [n, k] and [k, p] expected");
      n = sa[0], k = sa[1], p = sb[1], shape = {n, p};
      break;
    case Product::mv:
      if (sa.size() != 2 || sb.size() != 1 || sa[1] != sb[0])
        bad("a matrix [n, k] and a vector [k] expected");
      n = sa[0], k = sa[1], p = 1, shape = {n};
      break;
    case Product::r:
      if (sa.size() != 1 || sb.size() != 1) bad("vectors expected");
      n = sa[0], k = 1, p = sb[0], shape = {n, p};
      break;
    default:
      if (sa.size() != 3 || sb.size() != 3 || sa[0] != sb[0] || sa[2] != sb[1])
        bad("batches [B, n, k] and [B, k, p] expected");
      B = sa[0], n = sa[1], k = sa[2], p = sb[2];
      shape = how == Product::bmm ? std::vector<int64_t>{B, n, p} : std::vector<int64_t>{n, p};
  }
  if (sizes(t) != shape)
    throw std::runtime_error(std::string(fn) + ": t must be " + describe(shape).str + ", got " +
                             describe(sizes(t)).str);
  const Tensor x = as_int64(a, fn), y = as_int64(b, fn), base = as_int64(t, fn);
  Tensor out = empty(shape, aoti_torch_dtype_int64(), false, fn);
  auto* o = static_cast<int64_t*>(out.data_ptr());
  const int64_t plane = n * p;
  std::vector<int64_t> prod(static_cast<size_t>(B * plane), 0);
  for (int64_t i = 0; i < B; ++i)
    int_mm(static_cast<const int64_t*>(x.data_ptr()) + i * n * k,
           static_cast<const int64_t*>(y.data_ptr()) + i * k * p, prod.data() + i * plane, n, k, p);
  const auto* tv = static_cast<const int64_t*>(base.data_ptr());
  const int64_t total = how == Product::bmm ? B * plane : plane;
  for (int64_t e = 0; e < total; ++e) {
    int64_t v = how == Product::bmm_sum ? 0 : prod[e];
    if (how == Product::bmm_sum)
      for (int64_t i = 0; i < B; ++i) v += prod[i * plane + e];
    o[e] = (beta == 0 ? 0 : beta * tv[e]) + alpha * v;
  }
  assign(r, out, fn);
}

}  // namespace

extern "C" {

#define KFL_DEFINE_INT_PRODUCT(T, real, name, how, A, B, ...)                                     \
  void T##_##name(__VA_ARGS__ T* r, real beta, T* t, real alpha, T* A, T* B) {                    \
    const char* fn = #T "_" #name;                                                                \
    need(fn, {{r, 1, "r", #T "*"}, {t, 3, "t", #T "*"}, {A, 5, #A, #T "*"}, {B, 6, #B, #T "*"}}); \
    int_product(r, beta, t, alpha, A, B, how, fn);                                                \
  }
// addmm, ..., baddbmm and dot (THC's too, computed here on the host, where
// THC raised "unimplemented data type")
#define KFL_DEFINE_INT_PRODUCTS(T, real, ...)                                                     \
  KFL_DEFINE_INT_PRODUCT(T, real, addmm, Product::mm, mat1, mat2, __VA_ARGS__)                    \
  KFL_DEFINE_INT_PRODUCT(T, real, addmv, Product::mv, mat, vec, __VA_ARGS__)                      \
  KFL_DEFINE_INT_PRODUCT(T, real, addr, Product::r, vec1, vec2, __VA_ARGS__)                      \
  KFL_DEFINE_INT_PRODUCT(T, real, addbmm, Product::bmm_sum, batch1, batch2, __VA_ARGS__)          \
  KFL_DEFINE_INT_PRODUCT(T, real, baddbmm, Product::bmm, batch1, batch2, __VA_ARGS__)             \
  int64_t T##_dot(__VA_ARGS__ T* t, T* src) {                                                     \
    const char* fn = #T "_dot";                                                                   \
    need(fn, {{t, 1, "t", #T "*"}, {src, 2, "src", #T "*"}});                                     \
    if (numel(t) != numel(src))                                                                   \
      throw std::runtime_error(std::string(fn) + ": t and src have " + std::to_string(numel(t)) + \
                               " and " + std::to_string(numel(src)) + " elements");               \
    const Tensor a = as_int64(t, fn), b = as_int64(src, fn);                                      \
    int64_t sum = 0;                                                                              \
    for (int64_t e = 0; e < numel(t); ++e)                                                        \
      sum += static_cast<const int64_t*>(a.data_ptr())[e] *                                       \
             static_cast<const int64_t*>(b.data_ptr())[e];                                        \
    return sum;                                                                                   \
  }
#define KFL_DEFINE_INT_BLAS_MATH(T, S, real, dtype)                                         \
  KFL_DEFINE_INT_PRODUCTS(T, real, )                                                        \
  void T##_cinv(T* r, T* t) {                                                               \
    const char* fn = #T "_cinv";                                                            \
    need(fn, {{r, 1, "r", #T "*"}, {t, 2, "t", #T "*"}});                                   \
    Tensor x = as_int64(t, fn);                                                             \
    auto* v = static_cast<int64_t*>(x.data_ptr());                                          \
    for (int64_t e = 0; e < numel(t); ++e) {                                                \
      if (v[e] == 0) throw std::runtime_error(std::string(fn) + ": integer division by 0"); \
      v[e] = 1 / v[e];                                                                      \
    }                                                                                       \
    assign(r, x, fn);                                                                       \
  }
TH_FORALL_CPU_INT_TENSORS(KFL_DEFINE_INT_BLAS_MATH)
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#define KFL_DEFINE_CUDA_INT_BLAS_MATH(T, S, real, dtype) \
  KFL_DEFINE_INT_PRODUCTS(T, real, THCState*, )
TH_FORALL_CUDA_INT_TENSORS(KFL_DEFINE_CUDA_INT_BLAS_MATH)
#endif

}  // extern "C"
