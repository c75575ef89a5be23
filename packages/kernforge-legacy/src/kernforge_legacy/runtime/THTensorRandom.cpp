// TH's random numbers (THRandom.h, THTensorRandom.h) and THC's.
#include "THRuntime.h"

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
  if (!(stdv > 0))
    throw std::runtime_error("THRandom_normal: standard deviation must be strictly positive");
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
    if (gen == nullptr) {                                                                        \
      const auto [mu, sigma] = log_normal_of(mean, stdv, #T "_logNormal");                       \
      return torch_drawn(self, "aten::log_normal_", "", #T "_logNormal", mu, sigma);             \
    }                                                                                            \
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
#endif

}  // extern "C"
