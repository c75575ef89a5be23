// TH's convolutions (THTensorConv.h), CPU, for the seven types TH had them
// for: the raw-memory kernels (valid / full, correlation / convolution, the
// "Rev" form that gives a strided kernel's gradient) and the tensor functions
// over planes built on them (ger, mv, mm, mul, cmul, Revger, Revgerm), 2-D
// and 3-D. Computed in each type's own arithmetic, as TH's loops did.
#include "THRuntime.h"

namespace {

// A volume's extent; 2-D kernels are volumes of depth 1
struct Ext {
  int64_t t, r, c;
  int64_t n() const { return t * r * c; }
};

enum class Kind { valid, full, rev };

// The output extent of kind over input i, kernel k, strides s
Ext out_ext(Kind kind, Ext i, Ext k, Ext s) {
  const auto one = [&](int64_t x, int64_t kx, int64_t sx) {
    return kind == Kind::valid  ? (x - kx) / sx + 1
           : kind == Kind::full ? (x - 1) * sx + kx
                                : x - (kx - 1) * sx;
  };
  return {one(i.t, k.t, s.t), one(i.r, k.r, s.r), one(i.c, k.c, s.c)};
}

// out (extent out_ext(kind, i, k, s), contiguous) += alpha * op(in, kernel):
//   valid: out[z,y,x] += alpha sum_kernel in[z st + a, y sr + b, x sc + c] K[a,b,c]
//   full:  out[z st + a, y sr + b, x sc + c] += alpha in[z,y,x] K[a,b,c]
//   rev:   out[z,y,x] += alpha sum_kernel k[a,b,c] in[a st + z, b sr + y, c sc + x]
// K is the kernel, or the kernel reversed in every dimension where flip.
template <class R>
void planes(R* out, R alpha, const R* in, Ext i, const R* k, Ext ke, Ext s, Kind kind, bool flip) {
  const Ext o = out_ext(kind, i, ke, s);
  const auto K = [&](int64_t a, int64_t b, int64_t c) {
    return flip ? k[((ke.t - 1 - a) * ke.r + (ke.r - 1 - b)) * ke.c + (ke.c - 1 - c)]
                : k[(a * ke.r + b) * ke.c + c];
  };
  const auto at = [](const Ext& e, int64_t z, int64_t y, int64_t x) {
    return (z * e.r + y) * e.c + x;
  };
  if (kind == Kind::full) {
    for (int64_t z = 0; z < i.t; ++z)
      for (int64_t y = 0; y < i.r; ++y)
        for (int64_t x = 0; x < i.c; ++x) {
          const R v = static_cast<R>(in[at(i, z, y, x)] * alpha);
          for (int64_t a = 0; a < ke.t; ++a)
            for (int64_t b = 0; b < ke.r; ++b)
              for (int64_t c = 0; c < ke.c; ++c) {
                R& dst = out[at(o, z * s.t + a, y * s.r + b, x * s.c + c)];
                dst = static_cast<R>(dst + v * K(a, b, c));
              }
        }
    return;
  }
  for (int64_t z = 0; z < o.t; ++z)
    for (int64_t y = 0; y < o.r; ++y)
      for (int64_t x = 0; x < o.c; ++x) {
        R sum = 0;
        for (int64_t a = 0; a < ke.t; ++a)
          for (int64_t b = 0; b < ke.r; ++b)
            for (int64_t c = 0; c < ke.c; ++c)
              sum = static_cast<R>(
                  sum +
                  (kind == Kind::valid
                       ? in[at(i, z * s.t + a, y * s.r + b, x * s.c + c)] * K(a, b, c)
                       : k[at(ke, a, b, c)] * in[at(i, a * s.t + z, b * s.r + y, c * s.c + x)]));
        R& dst = out[at(o, z, y, x)];
        dst = static_cast<R>(dst + alpha * sum);
      }
}

// The checks of a raw-memory call: pointers, positive sizes and strides, the
// kernel inside the input where the kind needs it
void check_ptr(const void* r, const void* t, const void* k, Ext i, Ext ke, Ext s, Kind kind,
               const char* fn) {
  for (int64_t v : {i.t, i.r, i.c, ke.t, ke.r, ke.c})
    if (v < 1)
      throw std::runtime_error(std::string(fn) + ": sizes must be positive, got input " +
                               describe({i.t, i.r, i.c}).str + " and kernel " +
                               describe({ke.t, ke.r, ke.c}).str);
  if (s.t < 1 || s.r < 1 || s.c < 1)
    throw std::runtime_error(std::string(fn) + ": Stride should be a positive integer");
  const Ext o = out_ext(kind, i, ke, s);
  if (o.t < 1 || o.r < 1 || o.c < 1)
    throw std::runtime_error(std::string(fn) + ": Input image is smaller than kernel (input " +
                             describe({i.t, i.r, i.c}).str + ", kernel " +
                             describe({ke.t, ke.r, ke.c}).str + ")");
  if (r == nullptr || t == nullptr || k == nullptr)
    throw std::runtime_error(std::string(fn) + ": r_, t_ or k_ is NULL");
}

// vf ('V' valid, 'F' full) and xc ('X' correlation, 'C' convolution): the
// kind, and whether the kernel is applied reversed (a valid convolution or a
// full correlation, as in TH)
std::pair<Kind, bool> mode(const char* vf, const char* xc, const char* fn) {
  if (vf == nullptr || (*vf != 'V' && *vf != 'F'))
    throw std::runtime_error(std::string(fn) + ": type of convolution can be 'V' or 'F', got " +
                             (vf ? "\"" + std::string(vf) + "\"" : std::string("NULL")));
  if (xc == nullptr || (*xc != 'X' && *xc != 'C'))
    throw std::runtime_error(std::string(fn) + ": type of convolution can be 'X' or 'C', got " +
                             (xc ? "\"" + std::string(xc) + "\"" : std::string("NULL")));
  const Kind kind = *vf == 'V' ? Kind::valid : Kind::full;
  return {kind, (kind == Kind::valid) == (*xc == 'C')};
}

// A tensor function's operand: its contiguous copy, checked to have `dims` dimensions
Tensor operand(const void* t, int dims, const char* name, int arg, const char* fn) {
  if (dim_of(t) != dims)
    throw std::runtime_error(std::string(fn) + ": invalid argument " + std::to_string(arg) + ": " +
                             name + ": " + std::to_string(dims) + "D Tensor expected, got " +
                             describe(sizes(t)).str);
  return torch::stable::contiguous(borrow(t));
}

// r resized to shape, as a contiguous buffer that starts as TH's did: zeros
// where r had another number of elements (or beta is 0), else r's elements
// in order times beta; written back to r by finish()
template <class R>
Tensor start(const void* r, const std::vector<int64_t>& shape, R beta, const char* fn) {
  int64_t n = 1;
  for (int64_t v : shape) n *= v;
  Tensor out = empty(shape, dtype_of(borrow(r)), false, fn);
  if (numel(r) != n || beta == 0) {
    torch::stable::zero_(out);
    return out;
  }
  torch::stable::copy_(out, torch::stable::reshape(torch::stable::contiguous(borrow(r)), shape));
  if (beta != 1) {
    R* p = static_cast<R*>(out.data_ptr());
    for (int64_t e = 0; e < n; ++e) p[e] = static_cast<R>(p[e] * beta);
  }
  return out;
}

template <class R>
R* data(const Tensor& t) {
  return static_cast<R*>(t.data_ptr());
}

// The extent of a plane (d = 2) or volume (d = 3) whose sizes start at s[first]
Ext ext_of(const std::vector<int64_t>& s, size_t first, int d) {
  return d == 2 ? Ext{1, s[first], s[first + 1]} : Ext{s[first], s[first + 1], s[first + 2]};
}

// The output planes' extent, checked, and r's shape: `lead` then the extent
Ext planned(const Tensor& in, const Tensor& ke, Ext ie, Ext kx, Ext s, Kind kind, int d,
            std::vector<int64_t>& shape, const char* fn) {
  check_ptr(in.data_ptr(), in.data_ptr(), ke.data_ptr(), ie, kx, s, kind, fn);
  const Ext o = out_ext(kind, ie, kx, s);
  if (d == 3) shape.push_back(o.t);
  shape.push_back(o.r);
  shape.push_back(o.c);
  return o;
}

// ger: r[k, i] = conv(t[i], kernel[k]) over planes of input [I, ...] and kernel [K, ...]
// (Rev: the strided kernel-gradient form; germ: summed over a batch, input [B, I, ...]
// and kernel [B, K, ...])
template <class R>
void ger(const void* r, R beta, R alpha, const void* t, const void* k, Ext s, Kind kind, bool flip,
         int d, bool batched, const char* fn) {
  const int extra = batched ? 1 : 0;
  const Tensor in = operand(t, d + 1 + extra, "input", 3, fn),
               ke = operand(k, d + 1 + extra, "kernel", 4, fn);
  const std::vector<int64_t> is = sizes(in), ks = sizes(ke);
  const int64_t B = batched ? is[0] : 1, I = is[extra], K = ks[extra];
  if (batched && ks[0] != B)
    throw std::runtime_error(std::string(fn) + ": Input batch and kernel batch is not same size");
  const Ext ie = ext_of(is, extra + 1, d), kx = ext_of(ks, extra + 1, d);
  std::vector<int64_t> shape = {K, I};
  const Ext o = planned(in, ke, ie, kx, s, kind, d, shape, fn);
  Tensor out = start<R>(r, shape, beta, fn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t kk = 0; kk < K; ++kk)
      for (int64_t ii = 0; ii < I; ++ii)
        planes<R>(data<R>(out) + (kk * I + ii) * o.n(), alpha, data<R>(in) + (b * I + ii) * ie.n(),
                  ie, data<R>(ke) + (b * K + kk) * kx.n(), kx, s, kind, flip);
  assign(r, out, fn);
}

// mv: r[o] = sum_i conv(t[i], kernel[o, i]), input [I, ...], kernel [O, I, ...];
// mm: the same for each of a batch, input [B, I, ...] -> r [B, O, ...]
template <class R>
void mv(const void* r, R beta, R alpha, const void* t, const void* k, Ext s, Kind kind, bool flip,
        int d, bool batched, const char* fn) {
  const int extra = batched ? 1 : 0;
  const Tensor in = operand(t, d + 1 + extra, "input", 3, fn),
               ke = operand(k, d + 2, "kernel", 4, fn);
  const std::vector<int64_t> is = sizes(in), ks = sizes(ke);
  const int64_t B = batched ? is[0] : 1, I = is[extra], O = ks[0];
  if (ks[1] != I)
    throw std::runtime_error(std::string(fn) + ": invalid number of input planes: the kernel has " +
                             std::to_string(ks[1]) + ", the input " + std::to_string(I));
  const Ext ie = ext_of(is, extra + 1, d), kx = ext_of(ks, 2, d);
  std::vector<int64_t> shape;
  if (batched) shape.push_back(B);
  shape.push_back(O);
  const Ext o = planned(in, ke, ie, kx, s, kind, d, shape, fn);
  Tensor out = start<R>(r, shape, beta, fn);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t oo = 0; oo < O; ++oo)
      for (int64_t ii = 0; ii < I; ++ii)
        planes<R>(data<R>(out) + (b * O + oo) * o.n(), alpha, data<R>(in) + (b * I + ii) * ie.n(),
                  ie, data<R>(ke) + (oo * I + ii) * kx.n(), kx, s, kind, flip);
  assign(r, out, fn);
}

// mul: r = conv(t, kernel) of one plane; cmul: plane by plane, input and
// kernel [N, ...] -> r [N, ...]
template <class R>
void mul(const void* r, R beta, R alpha, const void* t, const void* k, Ext s, Kind kind, bool flip,
         int d, bool planewise, const char* fn) {
  const int extra = planewise ? 1 : 0;
  const Tensor in = operand(t, d + extra, "input", 3, fn),
               ke = operand(k, d + extra, "kernel", 4, fn);
  const std::vector<int64_t> is = sizes(in), ks = sizes(ke);
  const int64_t N = planewise ? is[0] : 1;
  if (planewise && ks[0] != N)
    throw std::runtime_error(std::string(fn) +
                             ": kernel and input must have the same number of planes, got " +
                             std::to_string(ks[0]) + " and " + std::to_string(N));
  const Ext ie = ext_of(is, extra, d), kx = ext_of(ks, extra, d);
  std::vector<int64_t> shape;
  if (planewise) shape.push_back(N);
  const Ext o = planned(in, ke, ie, kx, s, kind, d, shape, fn);
  Tensor out = start<R>(r, shape, beta, fn);
  for (int64_t p = 0; p < N; ++p)
    planes<R>(data<R>(out) + p * o.n(), alpha, data<R>(in) + p * ie.n(), ie,
              data<R>(ke) + p * kx.n(), kx, s, kind, flip);
  assign(r, out, fn);
}

}  // namespace

extern "C" {

// The raw-memory kernels: NAME(r, alpha, t, sizes..., k, sizes..., strides...)
#define KFL_DEFINE_CONV_PTR(T, real, name2, name3, kind, flip)                                \
  void T##_##name2(real* r, real alpha, real* t, int64_t ir, int64_t ic, real* k, int64_t kr, \
                   int64_t kc, int64_t sr, int64_t sc) {                                      \
    const char* fn = #T "_" #name2;                                                           \
    const Ext i{1, ir, ic}, ke{1, kr, kc}, s{1, sr, sc};                                      \
    check_ptr(r, t, k, i, ke, s, kind, fn);                                                   \
    planes<real>(r, alpha, t, i, k, ke, s, kind, flip);                                       \
  }                                                                                           \
  void T##_##name3(real* r, real alpha, real* t, int64_t it, int64_t ir, int64_t ic, real* k, \
                   int64_t kt, int64_t kr, int64_t kc, int64_t st, int64_t sr, int64_t sc) {  \
    const char* fn = #T "_" #name3;                                                           \
    const Ext i{it, ir, ic}, ke{kt, kr, kc}, s{st, sr, sc};                                   \
    check_ptr(r, t, k, i, ke, s, kind, fn);                                                   \
    planes<real>(r, alpha, t, i, k, ke, s, kind, flip);                                       \
  }
#define KFL_DEFINE_CONV_API(T, real)                                                            \
  KFL_DEFINE_CONV_PTR(T, real, validXCorr2Dptr, validXCorr3Dptr, Kind::valid, false)            \
  KFL_DEFINE_CONV_PTR(T, real, validConv2Dptr, validConv3Dptr, Kind::valid, true)               \
  KFL_DEFINE_CONV_PTR(T, real, fullXCorr2Dptr, fullXCorr3Dptr, Kind::full, true)                \
  KFL_DEFINE_CONV_PTR(T, real, fullConv2Dptr, fullConv3Dptr, Kind::full, false)                 \
  KFL_DEFINE_CONV_PTR(T, real, validXCorr2DRevptr, validXCorr3DRevptr, Kind::rev, false)        \
  void T##_conv2DRevger(T* r, real beta, real alpha, T* t, T* k, int64_t srow, int64_t scol) {  \
    const char* fn = #T "_conv2DRevger";                                                        \
    need(fn, {{r, 1, "r_", #T "*"}, {t, 4, "t_", #T "*"}, {k, 5, "k_", #T "*"}});               \
    ger<real>(r, beta, alpha, t, k, {1, srow, scol}, Kind::rev, false, 2, false, fn);           \
  }                                                                                             \
  void T##_conv2DRevgerm(T* r, real beta, real alpha, T* t, T* k, int64_t srow, int64_t scol) { \
    const char* fn = #T "_conv2DRevgerm";                                                       \
    need(fn, {{r, 1, "r_", #T "*"}, {t, 4, "t_", #T "*"}, {k, 5, "k_", #T "*"}});               \
    ger<real>(r, beta, alpha, t, k, {1, srow, scol}, Kind::rev, false, 2, true, fn);            \
  }                                                                                             \
  void T##_conv3DRevger(T* r, real beta, real alpha, T* t, T* k, int64_t sdepth, int64_t srow,  \
                        int64_t scol) {                                                         \
    const char* fn = #T "_conv3DRevger";                                                        \
    need(fn, {{r, 1, "r_", #T "*"}, {t, 4, "t_", #T "*"}, {k, 5, "k_", #T "*"}});               \
    ger<real>(r, beta, alpha, t, k, {sdepth, srow, scol}, Kind::rev, false, 3, false, fn);      \
  }                                                                                             \
  KFL_DEFINE_CONV_TENSOR(T, real, 2, ger, conv2Dger, false)                                     \
  KFL_DEFINE_CONV_TENSOR(T, real, 2, mv, conv2Dmv, false)                                       \
  KFL_DEFINE_CONV_TENSOR(T, real, 2, mv, conv2Dmm, true)                                        \
  KFL_DEFINE_CONV_TENSOR(T, real, 2, mul, conv2Dmul, false)                                     \
  KFL_DEFINE_CONV_TENSOR(T, real, 2, mul, conv2Dcmul, true)                                     \
  KFL_DEFINE_CONV_TENSOR(T, real, 3, ger, conv3Dger, false)                                     \
  KFL_DEFINE_CONV_TENSOR(T, real, 3, mv, conv3Dmv, false)                                       \
  KFL_DEFINE_CONV_TENSOR(T, real, 3, mul, conv3Dmul, false)                                     \
  KFL_DEFINE_CONV_TENSOR(T, real, 3, mul, conv3Dcmul, true)
// The tensor functions with vf and xc: 2-D (srow, scol) and 3-D (sdepth too)
#define KFL_CONV_STRIDES_2 int64_t srow, int64_t scol
#define KFL_CONV_STRIDES_3 int64_t sdepth, int64_t srow, int64_t scol
#define KFL_CONV_EXT_2 \
  Ext {                \
    1, srow, scol      \
  }
#define KFL_CONV_EXT_3 \
  Ext {                \
    sdepth, srow, scol \
  }
#define KFL_DEFINE_CONV_TENSOR(T, real, d, how, name, more)                                      \
  void T##_##name(T* r, real beta, real alpha, T* t, T* k, KFL_CONV_STRIDES_##d, const char* vf, \
                  const char* xc) {                                                              \
    const char* fn = #T "_" #name;                                                               \
    need(fn, {{r, 1, "r_", #T "*"}, {t, 4, "t_", #T "*"}, {k, 5, "k_", #T "*"}});                \
    const auto [kind, flip] = mode(vf, xc, fn);                                                  \
    how<real>(r, beta, alpha, t, k, KFL_CONV_EXT_##d, kind, flip, d, more, fn);                  \
  }
#define KFL_DEFINE_CPU_CONV(T, S, real, dtype) KFL_DEFINE_CONV_API(T, real)
TH_FORALL_CPU_INT_TENSORS(KFL_DEFINE_CPU_CONV)
KFL_DEFINE_CONV_API(THFloatTensor, float)
KFL_DEFINE_CONV_API(THDoubleTensor, double)

}  // extern "C"
