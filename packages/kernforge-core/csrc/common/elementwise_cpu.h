// CPU side of the elementwise launcher: torch's intra-op thread pool over
// chunks of the flat index; contiguous chunks run as plain loops over
// __restrict pointers, which the compiler vectorizes. The contiguous loops
// are compiled twice, for baseline x86-64 and for AVX2, and the CPU picks at
// run time (a wheel cannot assume AVX2; with it mul at 2^24 fp32 goes from
// 4-7% behind eager to level on this project's 2-core machines).
#pragma once

#include <torch/csrc/stable/ops.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "elementwise.h"
#include "elementwise_op.h"

namespace kernforge::cpu {

constexpr int64_t kGrain = 32768;

#define KF_ALWAYS_INLINE inline __attribute__((always_inline))
// Loops compiled once more for AVX2 and AVX-512 with target attributes.
#if defined(__x86_64__) && defined(__GNUC__)
#define KF_X86_CLONES 1
#endif

// The instruction sets the loops are compiled for: baseline x86-64, AVX2
// with FMA (KF_AVX2; without fma the compiler multiplies and adds apart, two
// instructions a product), and AVX-512.
enum class Isa { kBaseline, kAvx2, kAvx512 };
#define KF_AVX2 "avx2,fma"

// The widest of them that this CPU has, capped as torch caps its own kernels
// by ATEN_CPU_CAPABILITY ("default", "avx2") where that is set; so each
// clone can be run and tested on any machine that has it.
inline Isa cpu_isa() {
  static const Isa isa = [] {
    Isa has = Isa::kBaseline;
#ifdef KF_X86_CLONES
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) has = Isa::kAvx2;
    if (has == Isa::kAvx2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw"))
      has = Isa::kAvx512;
#endif
    const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
    if (cap && std::strcmp(cap, "default") == 0) return Isa::kBaseline;
    if (cap && std::strcmp(cap, "avx2") == 0 && has == Isa::kAvx512) return Isa::kAvx2;
    return has;
  }();
  return isa;
}

namespace detail {

template <class scalar_t, class F, class... In>
KF_ALWAYS_INLINE void flat_run(int64_t n, const F& f, scalar_t* __restrict out,
                               const In* __restrict... in) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<scalar_t>(f(static_cast<acc_t>(in[i])...));
}

template <class scalar_t, class F, class... In>
KF_ALWAYS_INLINE void flat_row_run(int64_t n, const F& f, const scalar_t* __restrict row,
                                   int64_t row_stride, scalar_t* __restrict out,
                                   const In* __restrict... in) {
  using acc_t = opmath_t<scalar_t>;
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<scalar_t>(
        f(static_cast<acc_t>(in[i])..., static_cast<acc_t>(row[i * row_stride])));
}

template <class scalar_t, class Plan, class F, size_t... K>
KF_ALWAYS_INLINE void flat_chunk(const Plan& p, const F& f, int64_t begin, int64_t end,
                                 std::index_sequence<K...>) {
  auto* out = static_cast<scalar_t*>(p.data[0]) + begin;
  if constexpr (Plan::kRow) {
    // Walk the chunk one row segment at a time so the bias index stays linear.
    const auto* row = static_cast<const scalar_t*>(p.data[Plan::kArgs - 1]);
    int64_t col = begin % p.row_size;
    for (int64_t i = begin; i < end;) {
      const int64_t len = std::min(p.row_size - col, end - i);
      flat_row_run<scalar_t>(len, f, row + col * p.row_stride, p.row_stride,
                             static_cast<scalar_t*>(p.data[0]) + i,
                             (static_cast<const scalar_t*>(p.data[K + 1]) + i)...);
      i += len;
      col = 0;
    }
  } else {
    flat_run<scalar_t>(end - begin, f, out,
                       (static_cast<const scalar_t*>(p.data[K + 1]) + begin)...);
  }
}

// The same loops, instantiated for the baseline target and for AVX2.
template <class scalar_t, class Plan, class F, class Seq>
void flat_chunk_baseline(const Plan& p, const F& f, int64_t begin, int64_t end, Seq seq) {
  flat_chunk<scalar_t>(p, f, begin, end, seq);
}

#ifdef KF_X86_CLONES
template <class scalar_t, class Plan, class F, class Seq>
__attribute__((target(KF_AVX2))) void flat_chunk_avx2(const Plan& p, const F& f, int64_t begin,
                                                      int64_t end, Seq seq) {
  flat_chunk<scalar_t>(p, f, begin, end, seq);
}
#endif

template <class scalar_t, class Plan, class F, size_t... K>
void strided_chunk(const Plan& p, const F& f, int64_t begin, int64_t end,
                   std::index_sequence<K...>) {
  using acc_t = opmath_t<scalar_t>;
  constexpr int A = Plan::kArgs;
  const auto& s = p.strided;
  const int inner = s.ndim - 1;
  int64_t off[A];
  s.at(begin, off);
  int64_t inner_idx = begin % s.sizes[inner];
  char* base[A];
  for (int k = 0; k < A; ++k)
    base[k] = static_cast<char*>(p.data[k]) + off[k] * static_cast<int64_t>(sizeof(scalar_t));
  for (int64_t i = begin; i < end;) {
    const int64_t len = std::min(s.sizes[inner] - inner_idx, end - i);
    auto* o = reinterpret_cast<scalar_t*>(base[0]);
    for (int64_t j = 0; j < len; ++j)
      o[j * s.strides[inner][0]] = static_cast<scalar_t>(f(static_cast<acc_t>(
          reinterpret_cast<const scalar_t*>(base[K + 1])[j * s.strides[inner][K + 1]])...));
    i += len;
    if (i < end) {  // next run of the innermost dimension
      s.at(i, off);
      for (int k = 0; k < A; ++k)
        base[k] = static_cast<char*>(p.data[k]) + off[k] * static_cast<int64_t>(sizeof(scalar_t));
      inner_idx = 0;
    }
  }
}

}  // namespace detail

// Runs out = f(in...) over the plan; f takes and returns opmath_t<scalar_t>.
template <class scalar_t, class Plan, class F>
void elementwise(const Plan& p, const F& f) {
  if (p.numel == 0) return;
  constexpr int NIN = Plan::kArgs - 1;
  if (p.path == Path::Strided) {
    torch::stable::parallel_for(0, p.numel, kGrain, [&](int64_t b, int64_t e) {
      detail::strided_chunk<scalar_t>(p, f, b, e, std::make_index_sequence<NIN>{});
    });
  } else {
    constexpr int kFull = Plan::kRow ? NIN - 1 : NIN;
    using Seq = std::make_index_sequence<kFull>;
#ifdef KF_X86_CLONES
    if (cpu_isa() >= Isa::kAvx2) {
      torch::stable::parallel_for(0, p.numel, kGrain, [&](int64_t b, int64_t e) {
        detail::flat_chunk_avx2<scalar_t>(p, f, b, e, Seq{});
      });
      return;
    }
#endif
    torch::stable::parallel_for(0, p.numel, kGrain, [&](int64_t b, int64_t e) {
      detail::flat_chunk_baseline<scalar_t>(p, f, b, e, Seq{});
    });
  }
}

struct Launcher {
  struct Guard {
    explicit Guard(const Tensor&) {}
  };
  template <class scalar_t, class Plan, class F>
  static void elementwise(const Plan& p, const Tensor&, const F& f) {
    cpu::elementwise<scalar_t>(p, f);
  }
};

}  // namespace kernforge::cpu
