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

#ifdef KERNFORGE_LEGACY_WITH_CUDA
// THC's convolutions (THCTensorConv.h), float, on torch's conv2d:
// conv2Dmv / conv2Dmm r = beta r + the sum over input planes of each
// kernel's valid ('v') or full ('f') correlation ('x') or convolution ('c')
// with strides srow, scol; THC's full form correlates the input zero-padded
// to ((H - 1) srow + kh - 1) srow + kh rows (so its strides differ from TH's
// full form); conv2DRevger / conv2DRevgerm TH's Rev form (a strided kernel's
// gradient), summed over the batch for germ; conv2Dmap r += the fanin pairs
// (input plane, kernel) of each output plane, from a table of 1-based pairs.
namespace {

Tensor conv2d(const Tensor& in, const Tensor& w, std::vector<int64_t> stride,
              std::vector<int64_t> dilation, int64_t groups, const char* fn) {
  return aten("aten::conv2d", "", fn, in, w, std::nullopt, std::move(stride),
              std::vector<int64_t>{0, 0}, std::move(dilation), groups);
}

Tensor operand_of(const void* t, int64_t dims, const char* name, const char* fn) {
  const Tensor x = borrow(t);
  if (x.dim() != dims)
    throw std::runtime_error(std::string(fn) + ": " + name + ": " + std::to_string(dims) +
                             "D Tensor expected, got " + describe(sizes(x)).str);
  return x;
}

void check_strides(int64_t srow, int64_t scol, const char* fn) {
  if (srow < 1 || scol < 1)
    throw std::runtime_error(std::string(fn) + ": Stride should be a positive integer, got " +
                             std::to_string(srow) + " and " + std::to_string(scol));
}

// r := beta r + value (r's old values dropped where beta is 0 or its size changes)
void accumulate(const void* r, double beta, const Tensor& value, const char* fn) {
  const bool keep = beta != 0 && numel(r) == value.numel() && numel(r) > 0;
  const Tensor old = keep ? aten("aten::reshape", "", fn, borrow(r), sizes(value)) : Tensor();
  assign(r, keep ? scaled_sum(old, beta, value, 1.0, fn) : value, fn);
}

// conv2Dmv (batched: conv2Dmm): input [(B,) I, H, W], kernel [O, I, kh, kw]
void thc_conv_mv(const void* r, double beta, const void* t, const void* k, int64_t srow,
                 int64_t scol, const char* type, bool batched, const char* fn) {
  const Tensor kernel = operand_of(k, 4, "kernel", fn);
  check_strides(srow, scol, fn);
  if (type == nullptr || (type[0] != 'v' && type[0] != 'f') || (type[1] != 'c' && type[1] != 'x'))
    throw std::runtime_error(std::string(fn) +
                             ": type of convolution can be 'v' or 'f', then 'x' "
                             "or 'c', got \"" +
                             (type ? type : "NULL") + "\"");
  Tensor input = operand_of(t, batched ? 4 : 3, "input", fn);
  if (!batched) input = torch::stable::unsqueeze(input, 0);
  const std::vector<int64_t> is = sizes(input), ks = sizes(kernel);
  const int64_t H = is[2], W = is[3], kh = ks[2], kw = ks[3];
  if (ks[1] != is[1])
    throw std::runtime_error(std::string(fn) + ": invalid number of input planes: the kernel has " +
                             std::to_string(ks[1]) + ", the input " + std::to_string(is[1]));
  if (type[0] == 'v' && (H < kh || W < kw))
    throw std::runtime_error(std::string(fn) + ": Input image is smaller than kernel");
  if (type[0] == 'f') {
    const int64_t oh = (H - 1) * srow + kh, ow = (W - 1) * scol + kw;
    const int64_t ph = (oh - 1) * srow + kh, pw = (ow - 1) * scol + kw;
    // zeros around the input (torch's pads take their value as a Scalar,
    // which the stable calls cannot pass)
    Tensor padded = torch::stable::new_empty(input, {is[0], is[1], ph, pw});
    torch::stable::zero_(padded);
    Tensor inner = narrowed(narrowed(padded, 2, kh - 1, H, fn), 3, kw - 1, W, fn);
    torch::stable::copy_(inner, input);
    input = padded;
  }
  const Tensor w =
      type[1] == 'c' ? aten("aten::flip", "", fn, kernel, std::vector<int64_t>{2, 3}) : kernel;
  Tensor out = conv2d(input, w, {srow, scol}, {1, 1}, 1, fn);
  if (!batched) out = aten("aten::squeeze", "dim", fn, out, int64_t{0});
  accumulate(r, beta, out, fn);
}

// conv2DRevger (batched: conv2DRevgerm): input [(B,) I, H, W], kernel [(B,) K, kh, kw]
void thc_conv_rev(const void* r, double beta, double alpha, const void* t, const void* k,
                  int64_t srow, int64_t scol, bool batched, const char* fn) {
  Tensor input = operand_of(t, batched ? 4 : 3, "input", fn);
  Tensor kernel = operand_of(k, batched ? 4 : 3, "kernel", fn);
  check_strides(srow, scol, fn);
  if (!batched) {
    input = torch::stable::unsqueeze(input, 0);
    kernel = torch::stable::unsqueeze(kernel, 0);
  }
  const std::vector<int64_t> is = sizes(input), ks = sizes(kernel);
  if (is[0] != ks[0])
    throw std::runtime_error(std::string(fn) + ": input and kernel have batches of " +
                             std::to_string(is[0]) + " and " + std::to_string(ks[0]));
  if (is[2] < ks[2] || is[3] < ks[3])
    throw std::runtime_error(std::string(fn) + ": Input image is smaller than kernel");
  // [I, B, H, W] by [K, B, kh, kw], dilated by the strides: [I, K, ...], summed over B
  const Tensor out = conv2d(torch::stable::transpose(input, 0, 1),
                            torch::stable::transpose(kernel, 0, 1), {1, 1}, {srow, scol}, 1, fn);
  const Tensor ger =
      aten("aten::mul", "Tensor", fn, torch::stable::transpose(out, 0, 1), scalar_like(out, alpha));
  accumulate(r, beta, ger, fn);
}

// conv2Dmap: input [I, H, W], kernel [O * fanin, kh, kw], table [O * fanin, 2]
void thc_conv_map(const void* r, const void* t, const void* k, int64_t stride_x, int64_t stride_y,
                  const void* tab, int64_t fanin, const char* fn) {
  const Tensor kernel = operand_of(k, 3, "kernel", fn);
  const Tensor input = operand_of(t, 3, "input", fn);
  check_strides(stride_y, stride_x, fn);
  const std::vector<int64_t> is = sizes(input), ks = sizes(kernel);
  if (fanin < 1 || ks[0] / fanin < 1)
    throw std::runtime_error(std::string(fn) + ": fanin must be in [1, " + std::to_string(ks[0]) +
                             "] (the kernels), got " + std::to_string(fanin));
  if (is[1] < ks[1] || is[2] < ks[2])
    throw std::runtime_error(std::string(fn) + ": Input image is smaller than kernel");
  const int64_t pairs = ks[0] / fanin * fanin;
  const Tensor table = borrow(tab);
  if (table.numel() < 2 * pairs)
    throw std::runtime_error(std::string(fn) + ": the table has " + std::to_string(table.numel()) +
                             " entries, " + std::to_string(2 * pairs) + " needed");
  // the 1-based float entries as 0-based int64 (in the table's float type
  // first: torch's integer arithmetic takes no floating alpha)
  const Tensor flat = aten("aten::reshape", "", fn, table, std::vector<int64_t>{-1});
  const Tensor entries = aten("aten::narrow", "", fn, flat, int64_t{0}, int64_t{0}, 2 * pairs);
  const Tensor index =
      torch::stable::to(torch::stable::subtract(
                            aten("aten::reshape", "", fn, entries, std::vector<int64_t>{pairs, 2}),
                            scalar_like(entries, 1.0), 1.0),
                        torch::headeronly::ScalarType::Long);
  const Tensor planes = aten("aten::select", "int", fn, index, int64_t{1}, int64_t{0});
  const Tensor kernels = aten("aten::select", "int", fn, index, int64_t{1}, int64_t{1});
  const auto [p_lo, p_hi] = value_range(planes, fn);
  const auto [k_lo, k_hi] = value_range(kernels, fn);
  if (p_lo < 0 || p_hi >= static_cast<double>(is[0]) || k_lo < 0 ||
      k_hi >= static_cast<double>(ks[0]))
    throw std::runtime_error(std::string(fn) + ": the table's 1-based entries must lie in [1, " +
                             std::to_string(is[0]) + "] (input planes) and [1, " +
                             std::to_string(ks[0]) + "] (kernels)");
  const Tensor in =
      torch::stable::unsqueeze(aten("aten::index_select", "", fn, input, int64_t{0}, planes), 0);
  const Tensor w =
      torch::stable::unsqueeze(aten("aten::index_select", "", fn, kernel, int64_t{0}, kernels), 1);
  const Tensor each = aten("aten::squeeze", "dim", fn,
                           conv2d(in, w, {stride_y, stride_x}, {1, 1}, pairs, fn), int64_t{0});
  const std::vector<int64_t> es = sizes(each);
  const Tensor sum = aten(
      "aten::sum", "dim_IntList", fn,
      aten("aten::reshape", "", fn, each, std::vector<int64_t>{pairs / fanin, fanin, es[1], es[2]}),
      dims(1), false, std::nullopt);
  // THC added onto the output's values: kept where its size is the result's
  accumulate(r, 1.0, sum, fn);
}

}  // namespace

extern "C" {

// conv2Dmv and conv2Dmm; conv2DRevger and conv2DRevgerm (batched)
#define KFL_DEFINE_THC_CONV_MV(name, batched)                                               \
  void THCudaTensor_##name(THCState*, THCudaTensor* r, float beta, THCudaTensor* t,         \
                           THCudaTensor* k, int64_t srow, int64_t scol, const char* type) { \
    const char* fn = "THCudaTensor_" #name;                                                 \
    need(fn, {{r, 1, "output", "THCudaTensor*"},                                            \
              {t, 3, "input", "THCudaTensor*"},                                             \
              {k, 4, "kernel", "THCudaTensor*"}});                                          \
    thc_conv_mv(r, beta, t, k, srow, scol, type, batched, fn);                              \
  }
#define KFL_DEFINE_THC_CONV_REV(name, batched)                                                   \
  void THCudaTensor_##name(THCState*, THCudaTensor* r, float beta, float alpha, THCudaTensor* t, \
                           THCudaTensor* k, int64_t srow, int64_t scol) {                        \
    const char* fn = "THCudaTensor_" #name;                                                      \
    need(fn, {{r, 1, "output", "THCudaTensor*"},                                                 \
              {t, 4, "input", "THCudaTensor*"},                                                  \
              {k, 5, "kernel", "THCudaTensor*"}});                                               \
    thc_conv_rev(r, beta, alpha, t, k, srow, scol, batched, fn);                                 \
  }
KFL_DEFINE_THC_CONV_MV(conv2Dmv, false)
KFL_DEFINE_THC_CONV_MV(conv2Dmm, true)
KFL_DEFINE_THC_CONV_REV(conv2DRevger, false)
KFL_DEFINE_THC_CONV_REV(conv2DRevgerm, true)
void THCudaTensor_conv2Dmap(THCState*, THCudaTensor* r, THCudaTensor* t, THCudaTensor* k,
                            int64_t stride_x, int64_t stride_y, THCudaTensor* table,
                            int64_t fanin) {
  const char* fn = "THCudaTensor_conv2Dmap";
  need(fn, {{r, 1, "output", "THCudaTensor*"},
            {t, 2, "input", "THCudaTensor*"},
            {k, 3, "kernel", "THCudaTensor*"},
            {table, 6, "table", "THCudaTensor*"}});
  thc_conv_map(r, t, k, stride_x, stride_y, table, fanin, fn);
}

}  // extern "C"
#endif
