// TH's random numbers (THRandom.h, THTensorRandom.h) and THC's.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "THRuntime.h"

namespace {

// prob (1-D: one distribution; 2-D: one a row) as [rows, categories] float64
// on the host, each row checked as TH checked it
Tensor distributions(const Tensor& prob, int n_sample, bool replacement, const char* fn) {
  const std::vector<int64_t> shape = sizes(prob);
  if (shape.size() != 1 && shape.size() != 2)
    throw std::runtime_error(std::string(fn) + ": prob_dist must be 1 or 2 dim, got " +
                             describe(shape).str);
  const int64_t rows = shape.size() == 2 ? shape[0] : 1, k = shape.back();
  if (n_sample <= 0)
    throw std::runtime_error(std::string(fn) + ": cannot sample n_sample <= 0 samples, got " +
                             std::to_string(n_sample));
  if (!replacement && n_sample > k)
    throw std::runtime_error(std::string(fn) + ": cannot sample n_sample > prob_dist size(" +
                             std::to_string(shape.size() - 1) + ") = " + std::to_string(k) +
                             " samples without replacement, got " + std::to_string(n_sample));
  Tensor host = empty({rows, k}, aoti_torch_dtype_float64(), false, fn);
  torch::stable::copy_(host, torch::stable::reshape(prob, {rows, k}));
  const double* p = static_cast<const double*>(host.data_ptr());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < k; ++c) {
      const double v = p[r * k + c];
      if (!(v >= 0) || std::isinf(v))
        throw std::runtime_error(std::string(fn) +
                                 ": invalid multinomial distribution (encountering probability "
                                 "entry < 0, inf or nan) in row " +
                                 std::to_string(r));
      sum += v;
    }
    if (!(sum > 0))
      throw std::runtime_error(std::string(fn) +
                               ": invalid multinomial distribution (sum of probabilities <= 0) "
                               "in row " +
                               std::to_string(r));
  }
  return host;
}

// TH's multinomial: n_sample category indices (0-based) a distribution, into
// self [rows, n_sample] ([n_sample] for a 1-D prob). From gen: each draw one
// uniform number, found in the row's cumulative distribution (without
// replacement: of the categories not drawn yet); gen NULL: torch's
// multinomial, with torch's generator of prob's device.
void multinomial_into(const void* self, THGenerator* gen, const Tensor& prob, int n_sample,
                      bool replacement, const char* fn) {
  const Tensor host = distributions(prob, n_sample, replacement, fn);
  const bool one = prob.dim() == 1;
  if (gen == nullptr) {
    assign(self,
           aten("aten::multinomial", "", fn, prob, int64_t{n_sample}, replacement, std::nullopt),
           fn);
    return;
  }
  const int64_t rows = sizes(host)[0], k = sizes(host)[1];
  Tensor out = empty({rows, n_sample}, aoti_torch_dtype_int64(), false, fn);
  auto* o = static_cast<int64_t*>(out.data_ptr());
  const double* p = static_cast<const double*>(host.data_ptr());
  std::vector<double> weight(k), cum(k);
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(p + r * k, p + (r + 1) * k, weight.begin());
    for (int s = 0; s < n_sample; ++s) {
      double total = 0;
      for (int64_t c = 0; c < k; ++c) cum[c] = total += weight[c];
      const double u = uniform01(gen) * total;
      // the first category whose cumulative weight passes u (one of weight > 0)
      int64_t c = std::upper_bound(cum.begin(), cum.end(), u) - cum.begin();
      if (c == k)  // u rounded up to the total: the last category of weight > 0
        for (c = k - 1; weight[c] == 0;) --c;
      o[r * n_sample + s] = c;
      if (!replacement) weight[c] = 0;
    }
  }
  assign(self, one ? torch::stable::reshape(out, {n_sample}) : out, fn);
}

// Walker's alias table of the distribution probs (K categories): q[k] the
// chance that a draw of slot k keeps k, J[k] (0-based) the category it takes
// otherwise; q of probs' type and device, J int64.
void alias_setup(const Tensor& probs, const void* J, const void* q, const char* fn) {
  const Tensor host = distributions(torch::stable::reshape(probs, {-1}), 1, true, fn);
  const int64_t k = sizes(host)[1];
  const double* p = static_cast<const double*>(host.data_ptr());
  double sum = 0;
  for (int64_t c = 0; c < k; ++c) sum += p[c];
  Tensor qt = empty({k}, aoti_torch_dtype_float64(), false, fn);
  Tensor jt = empty({k}, aoti_torch_dtype_int64(), false, fn);
  auto* qv = static_cast<double*>(qt.data_ptr());
  auto* jv = static_cast<int64_t*>(jt.data_ptr());
  std::vector<int64_t> small, large;
  for (int64_t c = 0; c < k; ++c) {
    qv[c] = p[c] * k / sum;
    jv[c] = c;
    (qv[c] < 1 ? small : large).push_back(c);
  }
  while (!small.empty() && !large.empty()) {
    const int64_t s = small.back(), l = large.back();
    small.pop_back();
    jv[s] = l;  // slot s: s with chance q[s], else l
    qv[l] -= 1 - qv[s];
    if (qv[l] < 1) {
      large.pop_back();
      small.push_back(l);
    }
  }
  for (int64_t c : small) qv[c] = 1;  // what rounding left
  for (int64_t c : large) qv[c] = 1;
  Tensor q_out = empty({k}, dtype_of(probs), is_cuda(probs), fn);
  torch::stable::copy_(q_out, qt);
  Tensor j_out = empty({k}, aoti_torch_dtype_int64(), is_cuda(probs), fn);
  torch::stable::copy_(j_out, jt);
  assign(q, q_out, fn);
  assign(J, j_out, fn);
}

// self's elements drawn from the alias table (J, q): slot k uniform, kept
// with chance q[k], else J[k]. From gen: two uniform numbers a draw; gen
// NULL: torch's multinomial over the table's distribution, with torch's
// generator of q's device.
void alias_draw(const void* self, THGenerator* gen, const Tensor& J, const Tensor& q,
                const char* fn) {
  if (J.dim() != 1 || q.dim() != 1 || sizes(J)[0] != sizes(q)[0] || sizes(q)[0] == 0)
    throw std::runtime_error(std::string(fn) +
                             ": J and q must be one alias table (1-D, of one "
                             "nonzero size), got J " +
                             describe(sizes(J)).str + " and q " + describe(sizes(q)).str);
  const int64_t k = sizes(q)[0];
  Tensor qh = empty({k}, aoti_torch_dtype_float64(), false, fn);
  torch::stable::copy_(qh, q);
  Tensor jh = empty({k}, aoti_torch_dtype_int64(), false, fn);
  torch::stable::copy_(jh, J);
  const double* qv = static_cast<const double*>(qh.data_ptr());
  const int64_t* jv = static_cast<const int64_t*>(jh.data_ptr());
  for (int64_t c = 0; c < k; ++c)
    if (jv[c] < 0 || jv[c] >= k || !(qv[c] >= 0 && qv[c] <= 1))
      throw std::runtime_error(std::string(fn) + ": J and q are not an alias table (slot " +
                               std::to_string(c) + ": J " + std::to_string(jv[c]) + ", q " +
                               std::to_string(qv[c]) + ")");
  const int64_t n = numel(self);
  if (gen != nullptr) {
    fill_drawn(self, [&] {
      const int64_t slot = std::min<int64_t>(static_cast<int64_t>(uniform01(gen) * k), k - 1);
      return static_cast<double>(uniform01(gen) < qv[slot] ? slot : jv[slot]);
    });
    return;
  }
  // the table's distribution: slot c gives c with chance q[c] / K, J[c] with (1 - q[c]) / K
  Tensor p = empty({k}, aoti_torch_dtype_float64(), false, fn);
  auto* pv = static_cast<double*>(p.data_ptr());
  std::fill(pv, pv + k, 0.0);
  for (int64_t c = 0; c < k; ++c) {
    pv[c] += qv[c] / k;
    pv[jv[c]] += (1 - qv[c]) / k;
  }
  if (n == 0) return;
  Tensor on_device = empty({k}, aoti_torch_dtype_float64(), is_cuda(q), fn);
  torch::stable::copy_(on_device, p);
  const Tensor drawn = aten("aten::multinomial", "", fn, on_device, n, true, std::nullopt);
  Tensor out = borrow(self);
  torch::stable::copy_(out, torch::stable::reshape(drawn, sizes(self)));
}

}  // namespace

extern "C" {

THGenerator* THGenerator_new(void) {
  return new THGenerator();
}
THGenerator* THGenerator_copy(THGenerator* self, THGenerator* from) {
  need("THGenerator_copy", {{self, 1, "self", "THGenerator*"}, {from, 2, "from", "THGenerator*"}});
  *self = *from;
  return self;
}
void THGenerator_free(THGenerator* gen) {
  delete gen;
}
int THGenerator_isValid(THGenerator* gen) {
  return gen != nullptr;
}
void THRandom_manualSeed(THGenerator* gen, uint64_t seed) {
  need("THRandom_manualSeed", {{gen, 1, "gen", "THGenerator*"}});
  gen->engine.seed(static_cast<std::mt19937::result_type>(seed & 0xffffffffu));
  gen->initial_seed = seed;
  gen->has_normal = false;
}
uint64_t THRandom_seed(THGenerator* gen) {
  need("THRandom_seed", {{gen, 1, "gen", "THGenerator*"}});
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) | device();
  THRandom_manualSeed(gen, seed);
  return seed;
}
uint64_t THRandom_initialSeed(THGenerator* gen) {
  need("THRandom_initialSeed", {{gen, 1, "gen", "THGenerator*"}});
  return gen->initial_seed;
}
uint64_t THRandom_random(THGenerator* gen) {
  need("THRandom_random", {{gen, 1, "gen", "THGenerator*"}});
  return gen->engine();
}
double THRandom_uniform(THGenerator* gen, double a, double b) {
  need("THRandom_uniform", {{gen, 1, "gen", "THGenerator*"}});
  return uniform01(gen) * (b - a) + a;
}
double THRandom_normal(THGenerator* gen, double mean, double stdv) {
  need("THRandom_normal", {{gen, 1, "gen", "THGenerator*"}});
  check_stdv(stdv, "THRandom_normal");
  if (gen->has_normal) {
    gen->has_normal = false;
    return gen->normal * stdv + mean;
  }
  const double x = uniform01(gen), y = uniform01(gen);
  const double rho = std::sqrt(-2 * std::log(1.0 - y)), angle = 2 * M_PI * x;
  gen->normal = rho * std::sin(angle);
  gen->has_normal = true;
  return rho * std::cos(angle) * stdv + mean;
}
double THRandom_exponential(THGenerator* gen, double lambda) {
  need("THRandom_exponential", {{gen, 1, "gen", "THGenerator*"}});
  return -1.0 / lambda * std::log(1 - uniform01(gen));
}
double THRandom_cauchy(THGenerator* gen, double median, double sigma) {
  need("THRandom_cauchy", {{gen, 1, "gen", "THGenerator*"}});
  return median + sigma * std::tan(M_PI * (uniform01(gen) - 0.5));
}
double THRandom_logNormal(THGenerator* gen, double mean, double stdv) {
  need("THRandom_logNormal", {{gen, 1, "gen", "THGenerator*"}});
  const auto [mu, sigma] = log_normal_of(mean, stdv, "THRandom_logNormal");
  return std::exp(THRandom_normal(gen, mu, sigma));
}
int THRandom_geometric(THGenerator* gen, double p) {
  need("THRandom_geometric", {{gen, 1, "gen", "THGenerator*"}});
  if (!(p > 0 && p < 1)) throw std::runtime_error("THRandom_geometric: p must be in (0, 1)");
  return static_cast<int>(std::log(1 - uniform01(gen)) / std::log(p)) + 1;
}
int THRandom_bernoulli(THGenerator* gen, double p) {
  need("THRandom_bernoulli", {{gen, 1, "gen", "THGenerator*"}});
  if (!(p >= 0 && p <= 1)) throw std::runtime_error("THRandom_bernoulli: p must be in [0, 1]");
  return uniform01(gen) <= p;
}

// The tensor functions: from gen with TH's formulas, or (gen NULL) from
// torch's default generator with the same distribution (random: uniform
// below TH's modulus and 2^32).
#define KFL_DEFINE_RANDOM_API(T, S, real, dtype)                                                   \
  void T##_random(T* self, THGenerator* gen) {                                                     \
    need(#T "_random", {{self, 1, "self", #T "*"}});                                               \
    if (gen == nullptr) /* TH's values: 32 bits, below the modulus */                              \
      return torch_drawn(                                                                          \
          self, "aten::random_", "from", #T "_random", int64_t{0},                                 \
          std::optional<int64_t>(std::min(random_modulus<real>(), uint64_t{1} << 32)));            \
    const uint64_t modulus = random_modulus<real>();                                               \
    fill_drawn(self, [&] { return static_cast<double>(THRandom_random(gen) % modulus); });         \
  }                                                                                                \
  void T##_geometric(T* self, THGenerator* gen, double p) {                                        \
    need(#T "_geometric", {{self, 1, "self", #T "*"}});                                            \
    if (!(p > 0 && p < 1)) throw std::runtime_error(#T "_geometric: p must be in (0, 1)");         \
    if (gen == nullptr) /* TH's p is the chance of going on; torch's of stopping */                \
      return torch_drawn(self, "aten::geometric_", "", #T "_geometric", 1 - p);                    \
    fill_drawn(self, [&] { return static_cast<double>(THRandom_geometric(gen, p)); });             \
  }                                                                                                \
  void T##_bernoulli(T* self, THGenerator* gen, double p) {                                        \
    need(#T "_bernoulli", {{self, 1, "self", #T "*"}});                                            \
    if (!(p >= 0 && p <= 1)) throw std::runtime_error(#T "_bernoulli: p must be in [0, 1]");       \
    if (gen == nullptr) return torch_drawn(self, "aten::bernoulli_", "float", #T "_bernoulli", p); \
    fill_drawn(self, [&] { return static_cast<double>(THRandom_bernoulli(gen, p)); });             \
  }
#define KFL_DEFINE_FLOAT_RANDOM_API(T, S, real, dtype)                                           \
  void T##_uniform(T* self, THGenerator* gen, double a, double b) {                              \
    need(#T "_uniform", {{self, 1, "self", #T "*"}});                                            \
    if (gen == nullptr) return torch_drawn(self, "aten::uniform_", "", #T "_uniform", a, b);     \
    fill_drawn(self, [&] { return THRandom_uniform(gen, a, b); });                               \
  }                                                                                              \
  void T##_normal(T* self, THGenerator* gen, double mean, double stdv) {                         \
    need(#T "_normal", {{self, 1, "self", #T "*"}});                                             \
    if (gen == nullptr) return torch_drawn(self, "aten::normal_", "", #T "_normal", mean, stdv); \
    check_stdv(stdv, #T "_normal");                                                              \
    fill_drawn(self, [&] { return THRandom_normal(gen, mean, stdv); });                          \
  }                                                                                              \
  void T##_exponential(T* self, THGenerator* gen, double lambda) {                               \
    need(#T "_exponential", {{self, 1, "self", #T "*"}});                                        \
    if (gen == nullptr)                                                                          \
      return torch_drawn(self, "aten::exponential_", "", #T "_exponential", lambda);             \
    fill_drawn(self, [&] { return THRandom_exponential(gen, lambda); });                         \
  }                                                                                              \
  void T##_cauchy(T* self, THGenerator* gen, double median, double sigma) {                      \
    need(#T "_cauchy", {{self, 1, "self", #T "*"}});                                             \
    if (gen == nullptr)                                                                          \
      return torch_drawn(self, "aten::cauchy_", "", #T "_cauchy", median, sigma);                \
    fill_drawn(self, [&] { return THRandom_cauchy(gen, median, sigma); });                       \
  }                                                                                              \
  void T##_logNormal(T* self, THGenerator* gen, double mean, double stdv) {                      \
    need(#T "_logNormal", {{self, 1, "self", #T "*"}});                                          \
    const auto [mu, sigma] = log_normal_of(mean, stdv, #T "_logNormal");                         \
    if (gen == nullptr)                                                                          \
      return torch_drawn(self, "aten::log_normal_", "", #T "_logNormal", mu, sigma);             \
    fill_drawn(self, [&] { return THRandom_logNormal(gen, mean, stdv); });                       \
  }                                                                                              \
  void T##_rand(T* r, THGenerator* gen, THLongStorage* size) {                                   \
    need(#T "_rand", {{r, 1, "r", #T "*"}, {size, 3, "size", "THLongStorage*"}});                \
    resize(r, longs_of(size, #T "_rand"), #T "_rand");                                           \
    T##_uniform(r, gen, 0, 1);                                                                   \
  }                                                                                              \
  void T##_randn(T* r, THGenerator* gen, THLongStorage* size) {                                  \
    need(#T "_randn", {{r, 1, "r", #T "*"}, {size, 3, "size", "THLongStorage*"}});               \
    resize(r, longs_of(size, #T "_randn"), #T "_randn");                                         \
    T##_normal(r, gen, 0, 1);                                                                    \
  }
// per-element probabilities, and integers in a range, of every type
#define KFL_DEFINE_MORE_RANDOM_API(T, S, real, dtype)                                              \
  void T##_bernoulli_FloatTensor(T* self, THGenerator* gen, THFloatTensor* p) {                    \
    need(#T "_bernoulli_FloatTensor", {{self, 1, "self", #T "*"}, {p, 3, "p", "THFloatTensor*"}}); \
    bernoulli_each(self, gen, p, #T "_bernoulli_FloatTensor");                                     \
  }                                                                                                \
  void T##_bernoulli_DoubleTensor(T* self, THGenerator* gen, THDoubleTensor* p) {                  \
    need(#T "_bernoulli_DoubleTensor",                                                             \
         {{self, 1, "self", #T "*"}, {p, 3, "p", "THDoubleTensor*"}});                             \
    bernoulli_each(self, gen, p, #T "_bernoulli_DoubleTensor");                                    \
  }                                                                                                \
  void T##_clampedRandom(T* self, THGenerator* gen, int64_t min, int64_t max) {                    \
    need(#T "_clampedRandom", {{self, 1, "self", #T "*"}});                                        \
    clamped_random(self, gen, min, max, #T "_clampedRandom");                                      \
  }                                                                                                \
  void T##_cappedRandom(T* self, THGenerator* gen, int64_t max) {                                  \
    need(#T "_cappedRandom", {{self, 1, "self", #T "*"}});                                         \
    clamped_random(self, gen, 0, max, #T "_cappedRandom");                                         \
  }
// a mean or a standard deviation per element: with gen, TH's composition of
// normal, cmul and cadd (TH's numbers); without, torch's normal of tensors
#define KFL_DEFINE_NORMAL_EACH_API(T, S, real, dtype)                                              \
  void T##_normal_means(T* self, THGenerator* gen, T* means, double stddev) {                      \
    const char* fn = #T "_normal_means";                                                           \
    need(fn, {{self, 1, "self", #T "*"}, {means, 3, "means", #T "*"}});                            \
    if (gen == nullptr)                                                                            \
      return assign(self,                                                                          \
                    aten("aten::normal", "Tensor_float", fn, borrow(means), stddev, std::nullopt), \
                    fn);                                                                           \
    check_stdv(stddev, fn);                                                                        \
    T##_resizeAs(self, means);                                                                     \
    T##_normal(self, gen, 0, stddev);                                                              \
    T##_cadd(self, self, from_double<real>(1), means);                                             \
  }                                                                                                \
  void T##_normal_stddevs(T* self, THGenerator* gen, double mean, T* stddevs) {                    \
    const char* fn = #T "_normal_stddevs";                                                         \
    need(fn, {{self, 1, "self", #T "*"}, {stddevs, 4, "stddevs", #T "*"}});                        \
    if (gen == nullptr)                                                                            \
      return assign(self,                                                                          \
                    aten("aten::normal", "float_Tensor", fn, mean, borrow(stddevs), std::nullopt), \
                    fn);                                                                           \
    T##_resizeAs(self, stddevs);                                                                   \
    T##_normal(self, gen, 0, 1);                                                                   \
    T##_cmul(self, self, stddevs);                                                                 \
    T##_add(self, self, from_double<real>(mean));                                                  \
  }                                                                                                \
  void T##_normal_means_stddevs(T* self, THGenerator* gen, T* means, T* stddevs) {                 \
    const char* fn = #T "_normal_means_stddevs";                                                   \
    need(fn, {{self, 1, "self", #T "*"},                                                           \
              {means, 3, "means", #T "*"},                                                         \
              {stddevs, 4, "stddevs", #T "*"}});                                                   \
    if (gen == nullptr)                                                                            \
      return assign(                                                                               \
          self,                                                                                    \
          aten("aten::normal", "Tensor_Tensor", fn, borrow(means), borrow(stddevs), std::nullopt), \
          fn);                                                                                     \
    T##_resizeAs(self, means);                                                                     \
    T##_normal(self, gen, 0, 1);                                                                   \
    T##_cmul(self, self, stddevs);                                                                 \
    T##_cadd(self, self, from_double<real>(1), means);                                             \
  }
TH_FORALL_CPU_TENSORS(KFL_DEFINE_RANDOM_API)
TH_FORALL_CPU_TENSORS(KFL_DEFINE_MORE_RANDOM_API)
TH_FORALL_CPU_FLOAT_TENSORS(KFL_DEFINE_NORMAL_EACH_API)
TH_FORALL_CPU_FLOAT_TENSORS(KFL_DEFINE_FLOAT_RANDOM_API)
// TH's multinomial and its alias method, of float and double
#define KFL_DEFINE_MULTINOMIAL_API(T)                                                              \
  void T##_multinomial(THLongTensor* self, THGenerator* gen, T* prob_dist, int n_sample,           \
                       int with_replacement) {                                                     \
    const char* fn = #T "_multinomial";                                                            \
    need(fn, {{self, 1, "self", "THLongTensor*"}, {prob_dist, 3, "prob_dist", #T "*"}});           \
    multinomial_into(self, gen, borrow(prob_dist), n_sample, with_replacement != 0, fn);           \
  }                                                                                                \
  void T##_multinomialAliasSetup(T* probs, THLongTensor* J, T* q) {                                \
    const char* fn = #T "_multinomialAliasSetup";                                                  \
    need(fn, {{probs, 1, "probs", #T "*"}, {J, 2, "J", "THLongTensor*"}, {q, 3, "q", #T "*"}});    \
    alias_setup(borrow(probs), J, q, fn);                                                          \
  }                                                                                                \
  void T##_multinomialAliasDraw(THLongTensor* self, THGenerator* gen, THLongTensor* J, T* q) {     \
    const char* fn = #T "_multinomialAliasDraw";                                                   \
    need(fn,                                                                                       \
         {{self, 1, "self", "THLongTensor*"}, {J, 3, "J", "THLongTensor*"}, {q, 4, "q", #T "*"}}); \
    alias_draw(self, gen, borrow(J), borrow(q), fn);                                               \
  }
KFL_DEFINE_MULTINOMIAL_API(THFloatTensor)
KFL_DEFINE_MULTINOMIAL_API(THDoubleTensor)

// A generator's whole state as bytes (MT19937's words, the seed and the
// Box-Muller value kept), and back: a state from getRNGState only
void THByteTensor_getRNGState(THGenerator* gen, THByteTensor* self) {
  const char* fn = "THByteTensor_getRNGState";
  need(fn, {{gen, 1, "gen", "THGenerator*"}, {self, 2, "self", "THByteTensor*"}});
  std::ostringstream out;
  out << "kfl-rng1 " << gen->engine << ' ' << gen->initial_seed << ' ' << gen->has_normal << ' '
      << std::hexfloat << gen->normal;
  const std::string text = out.str();
  Tensor bytes = empty({static_cast<int64_t>(text.size())}, aoti_torch_dtype_uint8(), false, fn);
  std::memcpy(bytes.data_ptr(), text.data(), text.size());
  assign(self, bytes, fn);
}

void THByteTensor_setRNGState(THGenerator* gen, THByteTensor* self) {
  const char* fn = "THByteTensor_setRNGState";
  need(fn, {{gen, 1, "gen", "THGenerator*"}, {self, 2, "self", "THByteTensor*"}});
  const Tensor bytes = torch::stable::contiguous(borrow(self));
  if (is_cuda(bytes)) throw std::runtime_error(std::string(fn) + ": self must be a CPU tensor");
  const std::string text(static_cast<const char*>(bytes.data_ptr()), numel(self));
  std::istringstream in(text);
  std::string tag;
  THGenerator next;
  in >> tag >> next.engine >> next.initial_seed >> next.has_normal >> std::hexfloat >> next.normal;
  if (!in || tag != "kfl-rng1")
    throw std::runtime_error(std::string(fn) +
                             ": RNG state is invalid (not one THByteTensor_getRNGState made)");
  *gen = next;
}

#ifdef KERNFORGE_LEGACY_WITH_CUDA
// THC's random numbers: torch's CUDA generator, THC's parameters
#define KFL_DEFINE_CUDA_RANDOM(T, S, real, dtype)                       \
  void T##_bernoulli(THCState*, T* self, double p) {                    \
    need(#T "_bernoulli", {{self, 1, "self", #T "*"}});                 \
    torch_drawn(self, "aten::bernoulli_", "float", #T "_bernoulli", p); \
  }                                                                     \
  void T##_geometric(THCState*, T* self, double p) {                    \
    need(#T "_geometric", {{self, 1, "self", #T "*"}});                 \
    torch_drawn(self, "aten::geometric_", "", #T "_geometric", p);      \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_RANDOM)
#define KFL_DEFINE_CUDA_MORE_RANDOM(T, S, real, dtype)                                            \
  void T##_bernoulli_FloatTensor(THCState*, T* self, THCudaTensor* p) {                           \
    need(#T "_bernoulli_FloatTensor", {{self, 1, "self", #T "*"}, {p, 2, "p", "THCudaTensor*"}}); \
    bernoulli_each(self, nullptr, p, #T "_bernoulli_FloatTensor");                                \
  }                                                                                               \
  void T##_bernoulli_DoubleTensor(THCState*, T* self, THCudaDoubleTensor* p) {                    \
    need(#T "_bernoulli_DoubleTensor",                                                            \
         {{self, 1, "self", #T "*"}, {p, 2, "p", "THCudaDoubleTensor*"}});                        \
    bernoulli_each(self, nullptr, p, #T "_bernoulli_DoubleTensor");                               \
  }
TH_FORALL_CUDA_TENSORS(KFL_DEFINE_CUDA_MORE_RANDOM)
#define KFL_DEFINE_CUDA_NORMAL_EACH(T, S, real, dtype)                                           \
  void T##_normal_means(THCState*, T* self, T* means, double stddev) {                           \
    const char* fn = #T "_normal_means";                                                         \
    need(fn, {{self, 1, "self", #T "*"}, {means, 2, "means", #T "*"}});                          \
    assign(self, aten("aten::normal", "Tensor_float", fn, borrow(means), stddev, std::nullopt),  \
           fn);                                                                                  \
  }                                                                                              \
  void T##_normal_stddevs(THCState*, T* self, double mean, T* stddevs) {                         \
    const char* fn = #T "_normal_stddevs";                                                       \
    need(fn, {{self, 1, "self", #T "*"}, {stddevs, 3, "stddevs", #T "*"}});                      \
    assign(self, aten("aten::normal", "float_Tensor", fn, mean, borrow(stddevs), std::nullopt),  \
           fn);                                                                                  \
  }                                                                                              \
  void T##_normal_means_stddevs(THCState*, T* self, T* means, T* stddevs) {                      \
    const char* fn = #T "_normal_means_stddevs";                                                 \
    need(fn, {{self, 1, "self", #T "*"},                                                         \
              {means, 2, "means", #T "*"},                                                       \
              {stddevs, 3, "stddevs", #T "*"}});                                                 \
    assign(                                                                                      \
        self,                                                                                    \
        aten("aten::normal", "Tensor_Tensor", fn, borrow(means), borrow(stddevs), std::nullopt), \
        fn);                                                                                     \
  }
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_NORMAL_EACH)
#define KFL_DEFINE_CUDA_FLOAT_RANDOM(T, S, real, dtype)                            \
  void T##_uniform(THCState*, T* self, double a, double b) {                       \
    need(#T "_uniform", {{self, 1, "self", #T "*"}});                              \
    torch_drawn(self, "aten::uniform_", "", #T "_uniform", a, b);                  \
  }                                                                                \
  void T##_normal(THCState*, T* self, double mean, double stdv) {                  \
    need(#T "_normal", {{self, 1, "self", #T "*"}});                               \
    torch_drawn(self, "aten::normal_", "", #T "_normal", mean, stdv);              \
  }                                                                                \
  void T##_logNormal(THCState*, T* self, double mean, double stdv) {               \
    need(#T "_logNormal", {{self, 1, "self", #T "*"}});                            \
    torch_drawn(self, "aten::log_normal_", "", #T "_logNormal", mean, stdv);       \
  }                                                                                \
  void T##_exponential(THCState*, T* self, double lambda) {                        \
    need(#T "_exponential", {{self, 1, "self", #T "*"}});                          \
    torch_drawn(self, "aten::exponential_", "", #T "_exponential", lambda);        \
  }                                                                                \
  void T##_cauchy(THCState*, T* self, double median, double sigma) {               \
    need(#T "_cauchy", {{self, 1, "self", #T "*"}});                               \
    torch_drawn(self, "aten::cauchy_", "", #T "_cauchy", median, sigma);           \
  }                                                                                \
  void T##_rand(THCState*, T* r, THLongStorage* size) {                            \
    need(#T "_rand", {{r, 1, "r", #T "*"}, {size, 2, "size", "THLongStorage*"}});  \
    resize(r, longs_of(size, #T "_rand"), #T "_rand");                             \
    torch_drawn(r, "aten::uniform_", "", #T "_rand", 0.0, 1.0);                    \
  }                                                                                \
  void T##_randn(THCState*, T* r, THLongStorage* size) {                           \
    need(#T "_randn", {{r, 1, "r", #T "*"}, {size, 2, "size", "THLongStorage*"}}); \
    resize(r, longs_of(size, #T "_randn"), #T "_randn");                           \
    torch_drawn(r, "aten::normal_", "", #T "_randn", 0.0, 1.0);                    \
  }
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_FLOAT_RANDOM)
// THC's multinomial and alias method: torch's CUDA generator
#define KFL_DEFINE_CUDA_MULTINOMIAL(T, S, real, dtype)                                          \
  void T##_multinomial(THCState*, THCudaLongTensor* self, T* prob_dist, int n_sample,           \
                       int with_replacement) {                                                  \
    const char* fn = #T "_multinomial";                                                         \
    need(fn, {{self, 1, "self", "THCudaLongTensor*"}, {prob_dist, 2, "prob_dist", #T "*"}});    \
    multinomial_into(self, nullptr, borrow(prob_dist), n_sample, with_replacement != 0, fn);    \
  }                                                                                             \
  void T##_multinomialAliasSetup(THCState*, T* probs, THCudaLongTensor* J, T* q) {              \
    const char* fn = #T "_multinomialAliasSetup";                                               \
    need(fn,                                                                                    \
         {{probs, 1, "probs", #T "*"}, {J, 2, "J", "THCudaLongTensor*"}, {q, 3, "q", #T "*"}}); \
    alias_setup(borrow(probs), J, q, fn);                                                       \
  }                                                                                             \
  void T##_multinomialAliasDraw(THCState*, THCudaLongTensor* self, THCudaLongTensor* J, T* q) { \
    const char* fn = #T "_multinomialAliasDraw";                                                \
    need(fn, {{self, 1, "self", "THCudaLongTensor*"},                                           \
              {J, 2, "J", "THCudaLongTensor*"},                                                 \
              {q, 3, "q", #T "*"}});                                                            \
    alias_draw(self, nullptr, borrow(J), borrow(q), fn);                                        \
  }
TH_FORALL_CUDA_FLOAT_TENSORS(KFL_DEFINE_CUDA_MULTINOMIAL)
#endif

}  // extern "C"
