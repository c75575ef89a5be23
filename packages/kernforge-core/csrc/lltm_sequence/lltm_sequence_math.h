// The LLTM cell run over a whole sequence (lltm_sequence_forward /
// lltm_sequence_backward): the backend-generic driver around the backend's
// GEMMs and per-step gate passes. With W = [W_h, W_x] (columns S and F):
//   P = x W_x^T                                one GEMM over all T steps
//   pre_t = P_t + h_{t-1} W_h^T                per step, an addmm into P_t
//   gates_t, c_t, h_t = cell(pre_t + b, c_{t-1})     per step, one gate pass
// and in reverse for the backward:
//   d_gates_t, d_c = cell'(g_t, d_c; gates_t, c_t)   per step, one gate pass
//   g_{t-1} = grad_output_{t-1} + d_gates_t W_h      per step, a GEMM into dh
//                                                    (the gate pass adds grad_output)
//   d_x = d_gates W_x, d_W = d_gates^T [h_{t-1}, x_t], d_b = 1^T d_gates
// the last three GEMMs over all T * B rows. h0 and c0 may be absent: zeros.
// Half and bfloat16 sequences keep their cell state in float (`cells`).
// A packed sequence (the batch_sizes of a PackedSequence) is the same with
// step t on its first B_t rows only: x [N, F] holds the steps' rows one
// after the other, and every row has its h_{t-1} at the same row of the step
// before (B_t <= B_{t-1}); c_n is each row's cell at its own last step.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/ops.h>

#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "common/alloc.h"
#include "common/checks.h"
#include "common/dispatch.h"
#include "lltm/lltm_math.h"

namespace kernforge {

// One forward step's gate pass, all rows contiguous: pre [B, 3S] (x W_x^T +
// h W_h^T, without the bias), bias [3S], c_prev [B, S] (null: zeros) ->
// gates [B, 3S] (activated), c [B, S], h [B, S]. c_prev and c are of the
// cell type.
struct SeqStep {
  const void *pre, *bias, *c_prev;
  void *gates, *c, *h;
  int64_t batch, state;
  ScalarType dtype;
  int32_t device;
};

// One backward step's gate pass: the gradient of h, grad_h [B, S] plus
// grad_out (a step of grad_output, of any strides: rows ld apart, elements
// inc apart), and grad_c [B, S], gates and c of the step -> d_gates [B, 3S]
// and d_c [B, S] (a buffer other than grad_c). grad_h and grad_c are
// contiguous; any of the three may be null (zero). grad_c, c and d_c are of
// the cell type.
struct SeqStepBackward {
  const void *grad_h, *grad_c, *grad_out;
  int64_t ld_grad_out, inc_grad_out;
  const void *gates, *c;
  void *d_gates, *d_c;
  int64_t batch, state;
  ScalarType dtype;
  int32_t device;
};

// The whole recurrence in one call, where the backend has a kernel for the
// shape (it returns false otherwise and the driver steps as above). Forward:
// P [T, B, 3S] = x W_x^T (unless projects_input: then x [T, B, F] is read
// instead and P left unwritten), bias, W [3S, ldw] (W_h its first S columns), h0,
// c0 (cell type; either null: zeros) -> gates, cells, output. Backward: grad_output [T, B, S]
// (of any strides, in elements: autograd's gradient of output.sum() is one
// value expanded), grad_hn [B, S] (joining grad_output at each row's last
// step) and grad_cn [B, S] (each may be null: zero), gates,
// cells, W -> d_gates [T, B, 3S] and, unless null, d_c0 (cell type), d_h0
// and d_b [3S] (which the backend may leave to the driver: SeqRan). The
// forward also writes c_n [B, S] in the input dtype, and h_n [B, S] where
// not null (each row's h at its last step). All else contiguous.
// Packed: `offsets` (T + 1 int64 on the device) gives step t's rows
// [offsets[t], offsets[t + 1]) of every [N, ...] tensor, B = B_0 rows the
// most, and grad_output's row stride is its second stride (the first is 0);
// the forward's `host_offsets` are the same on the host (its plan's).
struct SeqRecurrence {
  const void *P, *x, *bias, *W, *h0, *c0;
  void *gates, *cells, *output, *c_n, *h_n;
  const int64_t* offsets;  // null: fixed length, step t's rows from t * B
  int64_t ldw, features, steps, batch, state;
  ScalarType dtype;
  int32_t device;
  const int64_t* host_offsets = nullptr;
};

// A recurrence's buffers in its dtype, for the passes of a generated token
// (the CPU's TokenUnits, the CUDA TokenArgs): x [B, F]; W [3S, ldw], W_h its
// first S columns and W_x the next F; h0 and c0 [B, S] (null: zeros);
// output, c_n and h_n [B, S] (h_n may be null); gates [B, 3S] (i, o, z) and
// cells [B, S], both null in inference. c0 and cells of the cell type.
template <class scalar_t>
struct TokenBuffers {
  using cell_t = opmath_t<scalar_t>;
  const scalar_t *x, *bias, *W, *h0;
  const cell_t* c0;
  scalar_t *output, *c_n, *h_n, *gates;
  cell_t* cells;

  static TokenBuffers of(const SeqRecurrence& r) {
    return {static_cast<const scalar_t*>(r.x), static_cast<const scalar_t*>(r.bias),
            static_cast<const scalar_t*>(r.W), static_cast<const scalar_t*>(r.h0),
            static_cast<const cell_t*>(r.c0),  static_cast<scalar_t*>(r.output),
            static_cast<scalar_t*>(r.c_n),     static_cast<scalar_t*>(r.h_n),
            static_cast<scalar_t*>(r.gates),   static_cast<cell_t*>(r.cells)};
  }
};

struct SeqRecurrenceBackward {
  const void *grad_output, *grad_hn, *grad_cn, *gates, *cells, *W;
  std::array<int64_t, 3> grad_output_strides;
  void *d_gates, *d_h0, *d_c0, *d_b;
  const int64_t* offsets;  // as the forward's
  int64_t ldw, steps, batch, state;
  ScalarType dtype;
  int32_t device;
};

// What a backward recurrence did: the whole recurrence (else the driver
// steps), and d_b too (else the driver computes it).
struct SeqRan {
  bool whole = false, bias = false;
};

// The backward's sums over all N = T * B rows (packed: N rows) in one
// backend call, where the backend has a kernel for the size (else it
// returns false and the driver makes the GEMMs): d_W [3S, S + F] = d_gates^T
// [h_{t-1} | x_t], d_b [3S] = d_gates^T 1, d_x [N, F] = d_gates W_x. Each
// output may be null (not asked for); h0 null is zeros. All contiguous:
// d_gates [N, 3S], h0 [B, S], previous [N - B, S] the h_{t-1} of rows B..N-1
// (fixed length: output's first rows), x [N, F], W [3S, ldw].
struct SeqGrads {
  const void *d_gates, *h0, *previous, *x, *W;
  void *d_W, *d_b, *d_x;
  int64_t ldw, rows, batch, features, state;
  ScalarType dtype;
  int32_t device;
};

// The cell state's dtype: float for half and bfloat16, else the dtype.
inline ScalarType cell_dtype(ScalarType t) {
  return t == ScalarType::Half || t == ScalarType::BFloat16 ? ScalarType::Float : t;
}

// Bytes of one element of a floating dtype (the kernels' pointer arithmetic).
inline int64_t element_size(ScalarType t) {
  return t == ScalarType::Double ? 8 : (t == ScalarType::Float ? 4 : 2);
}

// The rows each step runs on: fixed length, T steps of B rows (step t's
// from row t B), or packed (a PackedSequence's batch_sizes): step t's B_t
// rows from offsets[t], B = B_0 >= B_1 >= ... >= B_{T-1} >= 1, N in all.
struct SeqSteps {
  int64_t steps = 0, batch = 0, total = 0;
  std::vector<int64_t> offsets;  // T + 1 where packed, else empty
  bool packed() const { return !offsets.empty(); }
  int64_t rows(int64_t t) const { return packed() ? offsets[t + 1] - offsets[t] : batch; }
  int64_t offset(int64_t t) const { return packed() ? offsets[t] : t * batch; }
};

namespace seq {

// A view of `base` (no dispatcher call): sizes and strides in elements,
// starting `offset` elements past where base starts (the shim adds the
// offset to base's own).
inline Tensor view(const Tensor& base, int64_t offset, std::array<int64_t, 2> sizes,
                   std::array<int64_t, 2> strides) {
  AtenTensorHandle out = nullptr;
  if (aoti_torch__reinterpret_tensor(base.get(), 2, sizes.data(), strides.data(), offset, &out) !=
      AOTI_TORCH_SUCCESS)
    throw std::runtime_error("kernforge::lltm_sequence: could not make a view");
  return Tensor(out);
}

// Elements [start, start + n) of a contiguous 1-D tensor.
inline Tensor view1(const Tensor& base, int64_t start, int64_t n) {
  const int64_t stride = 1;
  AtenTensorHandle out = nullptr;
  if (aoti_torch__reinterpret_tensor(base.get(), 1, &n, &stride, start, &out) != AOTI_TORCH_SUCCESS)
    throw std::runtime_error("kernforge::lltm_sequence: could not make a view");
  return Tensor(out);
}

// Rows [r0, r0 + rows) of a contiguous [R, C] tensor (or of any contiguous
// tensor read as rows of C).
inline Tensor rows(const Tensor& t, int64_t r0, int64_t rows, int64_t cols) {
  return view(t, r0 * cols, {rows, cols}, {cols, 1});
}

// The transpose of columns [c0, c0 + n) of the 2-D `t`: [n, rows].
inline Tensor columns_t(const Tensor& t, int64_t c0, int64_t n) {
  return view(t, c0 * t.stride(1), {n, t.size(0)}, {t.stride(1), t.stride(0)});
}

// A contiguous tensor for the cell state: float where x is half or bfloat16.
inline Tensor empty_cells(const Tensor& x, std::initializer_list<int64_t> shape) {
  const ScalarType dtype = x.scalar_type();
  return dtype == cell_dtype(dtype) ? empty(x, shape) : empty(x, shape, aoti_torch_dtype_float32());
}

inline Tensor as_dtype(const Tensor& t, ScalarType dtype) {
  return t.scalar_type() == dtype ? t : torch::stable::to(t, dtype);
}

[[noreturn]] inline void fail_steps(const char* op, const std::string& what) {
  throw std::runtime_error(std::string("kernforge::") + op + ": " + what);
}

// The steps of x: [T, B, F] without batch_sizes; with them, x [N, F] packed
// as a PackedSequence's data, batch_sizes its (each at least 1, none above
// the one before, summing to N).
inline SeqSteps steps_of(const char* op, const Tensor& x,
                         const std::optional<std::vector<int64_t>>& batch_sizes) {
  SeqSteps st;
  if (!batch_sizes) {
    if (x.dim() != 3) fail(op, "x must be 3-D", {{"x", &x}});
    st.steps = x.size(0);
    st.batch = x.size(1);
    st.total = st.steps * st.batch;
    return st;
  }
  if (x.dim() != 2)
    fail(op, "x must be 2-D [sum(batch_sizes), input_size] with batch_sizes", {{"x", &x}});
  const std::vector<int64_t>& sizes = *batch_sizes;
  if (sizes.empty()) fail_steps(op, "batch_sizes must have at least one step, got []");
  st.offsets.reserve(sizes.size() + 1);
  st.offsets.push_back(0);
  for (size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] < 1 || (t > 0 && sizes[t] > sizes[t - 1]))
      fail_steps(op, "batch_sizes must be positive and non-increasing (a PackedSequence's), got " +
                         std::to_string(sizes[t]) + " at step " + std::to_string(t) +
                         (t > 0 ? " after " + std::to_string(sizes[t - 1]) : std::string()));
    st.offsets.push_back(st.offsets.back() + sizes[t]);
  }
  st.steps = static_cast<int64_t>(sizes.size());
  st.batch = sizes[0];
  st.total = st.offsets.back();
  if (st.total != x.size(0))
    fail(op,
         "batch_sizes sum to " + std::to_string(st.total) + " rows, but x has " +
             std::to_string(x.size(0)),
         {{"x", &x}});
  return st;
}

// x [T, B, F] (packed: [N, F]) with T >= 1, W [3S, S+F], b [3S], h0 and c0
// [B, S] (either may be absent: zeros): one floating dtype, one device.
inline std::pair<ScalarType, SeqSteps> check(const Tensor& x, const Tensor& W, const Tensor& b,
                                             const Tensor* h0, const Tensor* c0,
                                             const std::optional<std::vector<int64_t>>& sizes) {
  const char* op = "lltm_sequence";
  for (const NamedTensor& a : {NamedTensor{"weight", &W}, NamedTensor{"bias", &b},
                               NamedTensor{"h0", h0}, NamedTensor{"c0", c0}}) {
    const int64_t want = a.second == &b ? 1 : 2;
    if (a.second && a.second->dim() != want)
      fail(op, std::string(a.first) + " must be " + std::to_string(want) + "-D", {a});
  }
  SeqSteps st = steps_of(op, x, sizes);
  const ScalarType dtype =
      check_compatible(op, Dtypes::Floating, {{"x", &x}, {"weight", &W}, {"bias", &b}});
  for (const NamedTensor& a : {NamedTensor{"h0", h0}, NamedTensor{"c0", c0}})
    if (a.second) check_compatible(op, Dtypes::Floating, {{"x", &x}, a});
  if (st.steps == 0) fail(op, "x must have at least one step", {{"x", &x}});
  const int64_t batch = st.batch, features = x.size(x.dim() - 1);
  const int64_t state = h0 ? h0->size(1) : W.size(0) / 3;
  for (const NamedTensor& a : {NamedTensor{"h0", h0}, NamedTensor{"c0", c0}})
    if (a.second && (a.second->size(0) != batch || a.second->size(1) != state))
      fail(op,
           std::string(st.packed() ? "h0 and c0 must be [batch_sizes[0], hidden_size] = ["
                                   : "h0 and c0 must be [batch, hidden_size] = [") +
               std::to_string(batch) + ", " + std::to_string(state) + "]",
           {{"x", &x}, a});
  if (W.size(0) != 3 * state || W.size(1) != state + features)
    fail(op,
         "weight must be [3 * hidden_size, hidden_size + input_size] = [" +
             std::to_string(3 * state) + ", " + std::to_string(state + features) + "]",
         {{"weight", &W}, {"x", &x}});
  if (b.size(0) != 3 * state)
    fail(op, "bias must be [3 * hidden_size] = [" + std::to_string(3 * state) + "]",
         {{"bias", &b}, {"weight", &W}});
  return {dtype, std::move(st)};
}

// `values` as an int64 tensor on `like`'s device: on CUDA one copy from
// pinned memory, ordered on the stream with no wait for the device (a copy
// from pageable memory would synchronize, and the host could no longer run
// ahead of the kernels).
inline Tensor device_ints(const Tensor& like, const std::vector<int64_t>& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  const bool cpu = like.is_cpu();
  Tensor host =
      cpu ? empty(like, {n}, aoti_torch_dtype_int64())
          : torch::stable::empty({n}, ScalarType::Long, std::nullopt,
                                 torch::stable::Device(torch::headeronly::DeviceType::CPU), true);
  std::copy(values.begin(), values.end(), static_cast<int64_t*>(host.data_ptr()));
  if (cpu) return host;
  Tensor on_device = empty(like, {n}, aoti_torch_dtype_int64());
  torch::stable::copy_(on_device, host, true);
  return on_device;
}

// Rows `index` (int64, 1-D) of the 2-D `src`, through the backend's index op
// (aoti_torch_<device>_index_Tensor).
template <class Fn>
Tensor index_rows(Fn index_op, const Tensor& src, const Tensor& index) {
  AtenTensorHandle handle = index.get(), out = nullptr;
  const AtenTensorHandle* indices[] = {&handle};
  if (index_op(src.get(), indices, 1, &out) != AOTI_TORCH_SUCCESS)
    throw std::runtime_error("kernforge::lltm_sequence: could not gather rows");
  return Tensor(out);
}

// Each packed row's last step, the last t with B_t > b: rows [B_{t+1}, B_t) end at t.
inline std::vector<int64_t> last_steps(const SeqSteps& st) {
  std::vector<int64_t> last(st.batch);
  for (int64_t t = 0; t < st.steps; ++t)
    for (int64_t b = t + 1 < st.steps ? st.rows(t + 1) : 0; b < st.rows(t); ++b) last[b] = t;
  return last;
}

// Packed: the index tensor the kernels and gathers read, on x's device:
// the T + 1 offsets, then `rows` (each row's last step in the forward, its
// h_{t-1}'s row in the backward); else undefined.
inline Tensor packed_index(const Tensor& x, const SeqSteps& st, bool backward) {
  if (!st.packed()) return Tensor();
  std::vector<int64_t> v(st.offsets);
  if (!backward) {
    const std::vector<int64_t> last = last_steps(st);
    for (int64_t b = 0; b < st.batch; ++b) v.push_back(st.offset(last[b]) + b);
  } else {
    for (int64_t t = 1; t < st.steps; ++t)
      for (int64_t b = 0; b < st.rows(t); ++b) v.push_back(st.offset(t - 1) + b);
  }
  return device_ints(x, v);
}

// The rows part of packed_index's tensor.
inline Tensor packed_rows(const Tensor& index, const SeqSteps& st) {
  const int64_t n = index.size(0) - (st.steps + 1);
  return view1(index, st.steps + 1, n);
}

// The backward's saved tensors and incoming gradients, as the forward made
// them (the op's schema is public: a clear error for what it did not make).
inline SeqSteps check_backward(const Tensor* grad_output, const Tensor* grad_hn,
                               const Tensor* grad_cn, const Tensor& x, const Tensor& W,
                               const Tensor* h0, const Tensor& output, const Tensor& cells,
                               const Tensor& gates, const std::vector<bool>& mask,
                               const std::optional<std::vector<int64_t>>& sizes) {
  const char* op = "lltm_sequence_backward";
  if (mask.size() != 5)
    throw std::runtime_error(std::string("kernforge::") + op +
                             ": output_mask must have 5 entries (x, weight, bias, h0, c0), got " +
                             std::to_string(mask.size()));
  const ScalarType dtype = check_compatible(
      op, Dtypes::Floating, {{"x", &x}, {"weight", &W}, {"output", &output}, {"gates", &gates}});
  if (h0) check_compatible(op, Dtypes::Floating, {{"x", &x}, {"h0", h0}});
  const SeqSteps st = steps_of(op, x, sizes);
  if (W.dim() != 2 || st.steps == 0 || W.size(0) % 3 != 0)
    fail(op, "expected x [T >= 1, B, F] (packed: [N, F]) and weight [3S, S + F]",
         {{"x", &x}, {"weight", &W}});
  const int64_t B = st.batch, F = x.size(x.dim() - 1), S = W.size(0) / 3;
  if (W.size(1) != S + F) fail(op, "weight does not match x", {{"x", &x}, {"weight", &W}});
  if (h0 && (h0->dim() != 2 || h0->size(0) != B || h0->size(1) != S))
    fail(op, "h0 must be [B, S] or None", {{"x", &x}, {"weight", &W}, {"h0", h0}});
  const auto shape_is = [](const Tensor& t, std::initializer_list<int64_t> want) {
    if (t.dim() != static_cast<int64_t>(want.size())) return false;
    int64_t d = 0;
    for (int64_t w : want)
      if (t.size(d++) != w) return false;
    return true;
  };
  // Each step's rows of C columns: [T, B, C], or [N, C] packed.
  const auto rows_of = [&](const Tensor& t, int64_t C) {
    return st.packed() ? shape_is(t, {st.total, C}) : shape_is(t, {st.steps, B, C});
  };
  if (!rows_of(output, S) || !rows_of(gates, 3 * S) || !rows_of(cells, S) ||
      !Meta(cells).same_device(Meta(x)) || cells.scalar_type() != cell_dtype(dtype))
    fail(op,
         "output, cells and gates must be the forward's ([T, B, S], [T, B, S], [T, B, 3S]; "
         "packed [N, S], [N, S], [N, 3S])",
         {{"output", &output}, {"cells", &cells}, {"gates", &gates}});
  if (grad_output) {
    check_compatible(op, Dtypes::Floating, {{"x", &x}, {"grad_output", grad_output}});
    if (!rows_of(*grad_output, S))
      fail(op, "grad_output must be [T, B, S] (packed: [N, S])", {{"grad_output", grad_output}});
  }
  if (grad_hn) {
    check_compatible(op, Dtypes::Floating, {{"x", &x}, {"grad_hn", grad_hn}});
    if (!shape_is(*grad_hn, {B, S})) fail(op, "grad_hn must be [B, S]", {{"grad_hn", grad_hn}});
  }
  if (grad_cn) {
    check_compatible(op, Dtypes::Floating, {{"x", &x}, {"grad_cn", grad_cn}});
    if (!shape_is(*grad_cn, {B, S})) fail(op, "grad_cn must be [B, S]", {{"grad_cn", grad_cn}});
  }
  return st;
}

// The forward: (output [T, B, S] every step's h, c_n [B, S], gates
// [T, B, 3S] activated, cells [T, B, S] every step's c in the cell type;
// packed: [N, ...] for [T, B, ...]); with keep false, gates and cells are
// not made (undefined): the backend's whole recurrence writes none, and a
// stepping driver keeps one step's gates (gates over P's rows where the
// backend allows) and, at fixed length, two steps' cells as scratch.
// Backend: Guard, kGatesOverPre, addmm(out, self, a, b, beta) (out = beta * self + a b),
// index_rows(src, index), step(const SeqStep&), step_backward(const SeqStepBackward&),
// projects_input(const SeqRecurrence&), recurrence(const SeqRecurrence&),
// token(const SeqRecurrence* layers, count) (a token's layers, each projecting its input),
// recurrence(const SeqRecurrenceBackward&), sums(const SeqGrads&).
// Where a forward writes what the caller has storage for (contiguous, of
// the output's, c_n's and h_n's shapes; P: scratch of N * 3S elements or
// more for an inference's input projection); each undefined one is made,
// h_n only with make_h_n (h_n [B, S]: each row's h at its own last step,
// written by the recurrence).
struct SeqInto {
  Tensor output, c_n, h_n, P;
  bool make_h_n = false;
};

// What a forward made: h_n where asked for (SeqInto), gates and cells where kept.
struct SeqOut {
  Tensor output, h_n, c_n, gates, cells;
};

template <class Backend>
SeqOut forward(const Tensor& x, const Tensor& W, const Tensor& b, const std::optional<Tensor>& h0,
               const std::optional<Tensor>& c0,
               const std::optional<std::vector<int64_t>>& batch_sizes, bool keep,
               const SeqInto& into = {}) {
  const auto checked = check(x, W, b, h0 ? &*h0 : nullptr, c0 ? &*c0 : nullptr, batch_sizes);
  const ScalarType dtype = checked.first;
  const SeqSteps& st = checked.second;
  typename Backend::Guard guard(x);
  const int64_t T = st.steps, B = st.batch, N = st.total, F = x.size(x.dim() - 1),
                S = W.size(0) / 3;
  const bool packed = st.packed();
  const ScalarType cell = cell_dtype(dtype);
  // Every tensor made here comes through the C shim (no dispatcher call):
  // at small sizes the forward is bound by the host.
  const auto shape = [&](int64_t C) -> std::vector<int64_t> {
    return packed ? std::vector<int64_t>{N, C} : std::vector<int64_t>{T, B, C};
  };
  const auto make = [&](int64_t C, bool cells_of) {
    const std::vector<int64_t> s = shape(C);
    return empty(x, s.data(), static_cast<int64_t>(s.size()),
                 cells_of && cell != dtype ? aoti_torch_dtype_float32() : -1);
  };
  // c_n, and h_n where asked for: the caller's storage, else made [B, S].
  const auto final_state = [&](const Tensor& given, bool wanted) {
    return given.defined() || !wanted ? given : empty(x, {B, S});
  };
  Tensor gates = keep ? make(3 * S, false) : Tensor();
  if (B * S == 0) {
    const Tensor output = into.output.defined() ? into.output : make(S, false);
    return {output, final_state(into.h_n, into.make_h_n), final_state(into.c_n, true), gates,
            keep ? make(S, true) : Tensor()};
  }
  // An absent h0 or c0 is zeros: no tensor, no step-0 recurrent GEMM.
  const Tensor xc = detail::contiguous(x), bc = detail::contiguous(b);
  const Tensor h0c = h0 ? detail::contiguous(*h0) : Tensor();
  const Tensor c0c = c0 ? detail::contiguous(as_dtype(*c0, cell)) : Tensor();
  const void* h0_ptr = h0c.defined() ? h0c.data_ptr() : nullptr;
  const void* c0_ptr = c0c.defined() ? c0c.data_ptr() : nullptr;
  const Tensor Wc = detail::contiguous(W);
  // cells, output, c_n, h_n and the packed offsets are set after P's GEMM is queued.
  SeqRecurrence recurrence{nullptr,
                           xc.data_ptr(),
                           bc.data_ptr(),
                           Wc.data_ptr(),
                           h0_ptr,
                           c0_ptr,
                           keep ? gates.data_ptr() : nullptr,
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr,
                           nullptr,
                           S + F,
                           F,
                           T,
                           B,
                           S,
                           dtype,
                           x.get_device_index()};
  // The recurrence may multiply x by W_x itself: then no GEMM makes P.
  const bool projected = Backend::projects_input(recurrence);
  // P [N, 3S]; pre_t is P_t after its addmm. F = 0: P is zeros. Where the
  // backend's gate passes read an element's three values of pre_t before
  // they write its gates (Backend::kGatesOverPre), P is gates' storage. Its
  // GEMM is queued first: the device runs it while the host makes the rest.
  Tensor P;
  if (!projected) {
    P = keep && Backend::kGatesOverPre ? rows(gates, 0, N, 3 * S)
        : !keep && into.P.defined()    ? rows(into.P, 0, N, 3 * S)
                                       : empty(x, {N, 3 * S});
    if (F > 0)
      Backend::addmm(P, P, rows(xc, 0, N, F), columns_t(W, S, F), 0.0);
    else
      torch::stable::zero_(P);
    recurrence.P = P.data_ptr();
  }
  const Tensor output = into.output.defined() ? into.output : make(S, false);
  Tensor cells = keep ? make(S, true) : Tensor();
  Tensor c_n = final_state(into.c_n, true), h_n = final_state(into.h_n, into.make_h_n);
  const Tensor index = packed_index(x, st, false);
  recurrence.cells = keep ? cells.data_ptr() : nullptr;
  recurrence.output = output.data_ptr();
  recurrence.c_n = c_n.data_ptr();
  recurrence.h_n = h_n.defined() ? h_n.data_ptr() : nullptr;
  recurrence.offsets = packed ? static_cast<const int64_t*>(index.data_ptr()) : nullptr;
  recurrence.host_offsets = packed ? st.offsets.data() : nullptr;
  const bool whole = Backend::recurrence(recurrence);
  if (whole) return {output, h_n, c_n, gates, cells};
  if (projected)
    throw std::runtime_error("kernforge::lltm_sequence: the recurrence did not run as planned");
  // Stepping. Without keep, step t's gates go over P_t (kGatesOverPre) or
  // into one step's scratch, and its cell into one of two steps' scratch
  // (packed: every step's, so that each row's last one stays).
  const int64_t size = element_size(dtype), cell_size = element_size(cell);
  if (!keep) {
    gates = Backend::kGatesOverPre ? P : empty(x, {B, 3 * S});
    cells = packed ? make(S, true) : empty_cells(x, {2, B, S});
  }
  const bool gates_kept = keep || Backend::kGatesOverPre;
  auto* P_ptr = static_cast<char*>(P.data_ptr());
  auto* gates_ptr = static_cast<char*>(gates.data_ptr());
  auto* cells_ptr = static_cast<char*>(cells.data_ptr());
  auto* out_ptr = static_cast<char*>(output.data_ptr());
  const auto cell_row = [&](int64_t t) { return keep || packed ? st.offset(t) : (t & 1) * B; };
  const Tensor W_hT = columns_t(W, 0, S);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t rows_t = st.rows(t), row = st.offset(t);
    const Tensor P_t = rows(P, row, rows_t, 3 * S);
    if (t > 0 || h0_ptr)
      Backend::addmm(P_t, P_t, t == 0 ? h0c : rows(output, st.offset(t - 1), rows_t, S), W_hT, 1.0);
    Backend::step(SeqStep{P_ptr + row * 3 * S * size, bc.data_ptr(),
                          t == 0 ? c0_ptr : cells_ptr + cell_row(t - 1) * S * cell_size,
                          gates_ptr + (gates_kept ? row * 3 * S * size : 0),
                          cells_ptr + cell_row(t) * S * cell_size, out_ptr + row * S * size, rows_t,
                          S, dtype, x.get_device_index()});
  }
  // c_n (and h_n) of the input dtype, in storage of its own (outputs may
  // not alias): packed, each row's at its own last step.
  if (packed) {
    torch::stable::copy_(c_n, Backend::index_rows(rows(cells, 0, N, S), packed_rows(index, st)));
    if (h_n.defined())
      torch::stable::copy_(h_n, Backend::index_rows(rows(output, 0, N, S), packed_rows(index, st)));
  } else {
    torch::stable::copy_(c_n, rows(cells, cell_row(T - 1), B, S));
    if (h_n.defined()) torch::stable::copy_(h_n, rows(output, st.offset(T - 1), B, S));
  }
  if (!keep) gates = cells = Tensor();
  return {output, h_n, c_n, gates, cells};
}

// A token (T = 1) of layers whose every recurrence multiplies its input by
// W_x itself (Backend::projects_input: the token kernels): each layer
// checked as forward checks it, then run by Backend::token straight from
// pointers into the layers op's outputs (layer k's h into its row of h_n,
// which layer k + 1 reads; on CUDA all layers in one launch), with no views
// and no driver per layer: a generated token is bound by the host. False
// (nothing done) where a layer would need the driver.
template <class Backend>
bool token_layers(const Tensor& x, const std::vector<Tensor>& weights,
                  const std::vector<Tensor>& biases, const std::optional<Tensor>& h0,
                  const std::optional<Tensor>& c0, const Tensor& output, const Tensor& h_n,
                  const Tensor& c_n) {
  const int64_t L = static_cast<int64_t>(weights.size()), T = x.size(0), B = x.size(1),
                S = output.size(2);
  if (T != 1 || B == 0 || S == 0) return false;
  const ScalarType dtype = x.scalar_type(), cell = cell_dtype(dtype);
  const int64_t size = element_size(dtype), cell_size = element_size(cell);
  // Layer k's rows of an [L, B, S] tensor.
  const auto at = [&](const Tensor& t, int64_t k, int64_t bytes) -> void* {
    return t.defined() ? static_cast<char*>(t.data_ptr()) + k * B * S * bytes : nullptr;
  };
  std::vector<Tensor> kept;  // contiguous x, W and b, alive until launched
  kept.reserve(2 * L + 1);
  const void* in = kept.emplace_back(detail::contiguous(x)).data_ptr();
  std::vector<SeqRecurrence> layers;
  layers.reserve(L);
  for (int64_t k = 0; k < L; ++k) {
    // Layer k > 0 reads layer k - 1's h: output's shape, dtype and device.
    check(k == 0 ? x : output, weights[k], biases[k], nullptr, nullptr, std::nullopt);
    const int64_t F = k == 0 ? x.size(2) : S;
    const bool last = k == L - 1;
    const void* W = kept.emplace_back(detail::contiguous(weights[k])).data_ptr();
    const void* b = kept.emplace_back(detail::contiguous(biases[k])).data_ptr();
    layers.push_back(SeqRecurrence{nullptr, in, b, W, nullptr, nullptr, nullptr, nullptr,
                                   last ? output.data_ptr() : at(h_n, k, size), at(c_n, k, size),
                                   last ? at(h_n, k, size) : nullptr, nullptr, S + F, F, 1, B, S,
                                   dtype, x.get_device_index()});
    if (!Backend::projects_input(layers.back())) return false;
    in = layers.back().output;
  }
  typename Backend::Guard guard(x);
  const Tensor h0c = h0 ? detail::contiguous(*h0) : Tensor();
  const Tensor c0c = c0 ? detail::contiguous(as_dtype(*c0, cell)) : Tensor();
  for (int64_t k = 0; k < L; ++k) {
    layers[k].h0 = at(h0c, k, size);
    layers[k].c0 = at(c0c, k, cell_size);
  }
  if (!Backend::token(layers.data(), L))
    throw std::runtime_error("kernforge::lltm_sequence: the recurrence did not run as planned");
  return true;
}

}  // namespace seq

// The forward, keeping gates and cells for the backward: (output, h_n, c_n,
// gates, cells); the recurrence writes h_n, each row's h at its own last
// step (a tensor of its own, not a view of output: code written for
// nn.LSTM detaches or overwrites h_n in place).
template <class Backend>
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> lltm_sequence_forward(
    const Tensor& x, const Tensor& W, const Tensor& b, const std::optional<Tensor>& h0,
    const std::optional<Tensor>& c0, std::optional<std::vector<int64_t>> batch_sizes) {
  seq::SeqInto into;
  into.make_h_n = true;
  seq::SeqOut out = seq::forward<Backend>(x, W, b, h0, c0, batch_sizes, true, into);
  return {out.output, out.h_n, out.c_n, out.gates, out.cells};
}

// The forward without a backward to come: (output, h_n, c_n), nothing kept;
// the recurrence writes h_n, each row's h at its own last step.
template <class Backend>
std::tuple<Tensor, Tensor, Tensor> lltm_sequence_inference(
    const Tensor& x, const Tensor& W, const Tensor& b, const std::optional<Tensor>& h0,
    const std::optional<Tensor>& c0, std::optional<std::vector<int64_t>> batch_sizes) {
  seq::SeqInto into;
  into.make_h_n = true;
  seq::SeqOut out = seq::forward<Backend>(x, W, b, h0, c0, batch_sizes, false, into);
  return {out.output, out.h_n, out.c_n};
}

// Layers of the LLTM over x [T, B, F] without a backward to come (layer
// k > 0 takes layer k - 1's output): weights[k] [3S, S + F_k], biases[k]
// [3S], h0 and c0 [L, B, S] or absent (zeros) -> (output [T, B, S] of the
// last layer, h_n [L, B, S], c_n [L, B, S]). One call for all layers: each
// layer's recurrence writes its own rows of h_n and c_n, the layers between
// take scratch for their outputs.
template <class Backend>
std::tuple<Tensor, Tensor, Tensor> lltm_sequence_layers_inference(const Tensor& x,
                                                                  std::vector<Tensor> weights,
                                                                  std::vector<Tensor> biases,
                                                                  const std::optional<Tensor>& h0,
                                                                  const std::optional<Tensor>& c0) {
  const char* op = "lltm_sequence_layers_inference";
  const int64_t L = static_cast<int64_t>(weights.size());
  if (L == 0 || biases.size() != weights.size())
    seq::fail_steps(op, "weights and biases must be one per layer (at least one), got " +
                            std::to_string(weights.size()) + " and " +
                            std::to_string(biases.size()));
  if (x.dim() != 3) fail(op, "x must be 3-D", {{"x", &x}});
  if (weights[0].dim() != 2 || weights[0].size(0) % 3 != 0)
    fail(op, "weights[0] must be 2-D with 3 * hidden_size rows", {{"weights[0]", &weights[0]}});
  const int64_t T = x.size(0), B = x.size(1), S = weights[0].size(0) / 3;
  // Every layer of weights[0]'s hidden size: each writes S columns of its rows of h_n and c_n.
  for (int64_t k = 1; k < L; ++k)
    if (weights[k].dim() != 2 || weights[k].size(0) != 3 * S) {
      const std::string name = "weights[" + std::to_string(k) + "]";
      fail(op,
           name + " must be 2-D with 3 * hidden_size = " + std::to_string(3 * S) +
               " rows, as weights[0]",
           {{name.c_str(), &weights[k]}, {"weights[0]", &weights[0]}});
    }
  for (const NamedTensor& a :
       {NamedTensor{"h0", h0 ? &*h0 : nullptr}, NamedTensor{"c0", c0 ? &*c0 : nullptr}})
    if (a.second && (a.second->dim() != 3 || a.second->size(0) != L || a.second->size(1) != B ||
                     a.second->size(2) != S))
      fail(op,
           "h0 and c0 must be [num_layers, batch, hidden_size] = [" + std::to_string(L) + ", " +
               std::to_string(B) + ", " + std::to_string(S) + "]",
           {{"x", &x}, a});
  for (const NamedTensor& a :
       {NamedTensor{"h0", h0 ? &*h0 : nullptr}, NamedTensor{"c0", c0 ? &*c0 : nullptr}})
    if (a.second) check_compatible(op, Dtypes::Floating, {{"x", &x}, a});
  if (T == 0) fail(op, "x must have at least one step", {{"x", &x}});
  const Tensor output = empty(x, {T, B, S});
  Tensor h_n = empty(x, {L, B, S}), c_n = empty(x, {L, B, S});
  if (seq::token_layers<Backend>(x, weights, biases, h0, c0, output, h_n, c_n))
    return {output, h_n, c_n};
  // One scratch for the layers between (one or two outputs; at T = 1 each
  // writes its output into its row of h_n instead) and the input
  // projection, each slot 512-byte aligned as a tensor of its own would be
  // (the kernels' vector loads and bulk copies, and CPU GEMMs' paths, see
  // it). None at all for a token whose layers multiply x themselves.
  const int64_t slot = (T * B * S + 127) / 128 * 128, slots = T == 1 ? 0 : L > 2 ? 2 : L - 1;
  const bool projects = Backend::projects_input(SeqRecurrence{
      nullptr, x.data_ptr(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
      nullptr, nullptr, 0, x.size(2), T, B, S, x.scalar_type(), x.get_device_index()});
  const int64_t p_size = projects && (L == 1 || S == x.size(2)) ? 0 : T * B * 3 * S;
  const Tensor scratch = slots + p_size > 0 ? empty(x, {slots * slot + p_size}) : Tensor();
  const Tensor P = p_size > 0 ? seq::view1(scratch, slots * slot, p_size) : Tensor();
  const Tensor h0c = h0 ? detail::contiguous(*h0) : Tensor();
  const Tensor c0c = c0 ? detail::contiguous(*c0) : Tensor();
  const auto layer = [&](const Tensor& t, int64_t k, int64_t rows) {  // rows of [L, rows, S]
    return seq::view(t, k * rows * S, {rows, S}, {S, 1});
  };
  const auto steps = [&](const Tensor& t, int64_t k) {  // [T, B, S] k-th of scratch
    AtenTensorHandle out = nullptr;
    const int64_t sizes[] = {T, B, S}, strides[] = {B * S, S, 1};
    if (aoti_torch__reinterpret_tensor(t.get(), 3, sizes, strides, k * slot, &out) !=
        AOTI_TORCH_SUCCESS)
      throw std::runtime_error("kernforge::lltm_sequence: could not make a view");
    return Tensor(out);
  };
  Tensor in = x;
  for (int64_t k = 0; k < L; ++k) {
    const bool last = k == L - 1;
    const Tensor h_k = layer(h_n, k, B);
    const Tensor out = last ? output : T == 1 ? steps(h_k, 0) : steps(scratch, k & 1);
    const std::optional<Tensor> hk = h0 ? std::optional<Tensor>(layer(h0c, k, B)) : std::nullopt;
    const std::optional<Tensor> ck = c0 ? std::optional<Tensor>(layer(c0c, k, B)) : std::nullopt;
    seq::forward<Backend>(in, weights[k], biases[k], hk, ck, std::nullopt, false,
                          seq::SeqInto{out, layer(c_n, k, B), last || T > 1 ? h_k : Tensor(), P});
    in = out;
  }
  return {output, h_n, c_n};
}

// The backward: what output_mask (x, weight, bias, h0, c0) asks for, each
// else [0]: (d_x [T, B, F] (packed: [N, F]), d_W, d_b, d_h0, d_c0).
// grad_output, grad_cn and grad_hn may be absent (zero).
template <class Backend>
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> lltm_sequence_backward(
    const std::optional<Tensor>& grad_output, const std::optional<Tensor>& grad_cn, const Tensor& x,
    const Tensor& W, const std::optional<Tensor>& h0, const Tensor& output, const Tensor& cells,
    const Tensor& gates, std::vector<bool> output_mask,
    std::optional<std::vector<int64_t>> batch_sizes, const std::optional<Tensor>& grad_hn) {
  const SeqSteps st =
      seq::check_backward(grad_output ? &*grad_output : nullptr, grad_hn ? &*grad_hn : nullptr,
                          grad_cn ? &*grad_cn : nullptr, x, W, h0 ? &*h0 : nullptr, output, cells,
                          gates, output_mask, batch_sizes);
  const bool need_x = output_mask[0], need_W = output_mask[1], need_b = output_mask[2],
             need_h0 = output_mask[3], need_c0 = output_mask[4];
  const ScalarType dtype = x.scalar_type(), cell = cell_dtype(dtype);
  typename Backend::Guard guard(x);
  const int64_t T = st.steps, B = st.batch, N = st.total, F = x.size(x.dim() - 1),
                S = W.size(0) / 3;
  const bool packed = st.packed();
  const Tensor d_gates = empty(x, {N, 3 * S});
  // dh and d_c0 made here only where asked for: the stepping below makes them.
  Tensor dh = need_h0 ? empty(x, {B, S}) : Tensor();
  Tensor d_c0 = need_c0 ? seq::empty_cells(x, {B, S}) : Tensor();
  const Tensor ghn = grad_hn ? detail::contiguous(*grad_hn) : Tensor();
  const Tensor gcn = grad_cn ? detail::contiguous(seq::as_dtype(*grad_cn, cell)) : Tensor();
  const Tensor gatesc = detail::contiguous(gates), cellsc = detail::contiguous(cells);
  // Each output in storage of its own (outputs may not alias), [0] when not
  // asked for; d_x and d_W are made after the recurrence is launched.
  Tensor d_b = empty(x, {need_b ? 3 * S : 0});
  const int64_t size = element_size(dtype), cell_size = element_size(cell);
  const Tensor Wc = detail::contiguous(W);
  const Tensor index = seq::packed_index(x, st, true);
  // grad_output is read in place, of any strides (autograd's gradient of
  // output.sum() is one value expanded): step t's rows from t * stride(0)
  // at fixed length (rows stride(1) apart), from offsets[t] rows packed.
  const auto stride = [&](int d) {
    if (!grad_output) return int64_t{0};
    if (!packed) return grad_output->stride(d);
    return d == 0 ? int64_t{0} : grad_output->stride(d - 1);
  };
  const SeqRan ran = B * S == 0
                         ? SeqRan{}
                         : Backend::recurrence(SeqRecurrenceBackward{
                               grad_output ? grad_output->data_ptr() : nullptr,
                               ghn.defined() ? ghn.data_ptr() : nullptr,
                               gcn.defined() ? gcn.data_ptr() : nullptr,
                               gatesc.data_ptr(),
                               cellsc.data_ptr(),
                               Wc.data_ptr(),
                               {stride(0), stride(1), stride(2)},
                               d_gates.data_ptr(),
                               need_h0 ? dh.data_ptr() : nullptr,
                               need_c0 ? d_c0.data_ptr() : nullptr,
                               need_b ? d_b.data_ptr() : nullptr,
                               packed ? static_cast<const int64_t*>(index.data_ptr()) : nullptr,
                               S + F,
                               T,
                               B,
                               S,
                               dtype,
                               x.get_device_index()});
  const bool whole = ran.whole;
  if (B * S > 0 && !whole) {  // else d_gates has no elements, or is made
    if (!need_h0) dh = empty(x, {B, S});
    if (!need_c0) d_c0 = seq::empty_cells(x, {B, S});
    const std::array<Tensor, 2> dc{d_c0, seq::empty_cells(x, {B, S})};
    if (packed) {
      // A row joins at its own last step, with grad_hn as the gradient of
      // h from the steps after it and grad_cn for its cell: rows past B_t
      // are never written before step t, so they keep what is set here.
      if (ghn.defined())
        torch::stable::copy_(dh, ghn);
      else
        torch::stable::zero_(dh);
      for (const Tensor& d : dc) {
        Tensor to = d;
        if (gcn.defined())
          torch::stable::copy_(to, gcn);
        else
          torch::stable::zero_(to);
      }
    }
    const Tensor W_h = seq::view(W, 0, {3 * S, S}, {W.stride(0), W.stride(1)});
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t rows_t = st.rows(t), row = st.offset(t);
      // The gradient of h_t: grad_output_t, plus grad_hn at the last step,
      // else d_gates_{t+1} W_h; of c_t: grad_cn at the last step, else the
      // step after's.
      const bool first = t == T - 1 && !packed;
      SeqStepBackward p{!first          ? dh.data_ptr()
                        : ghn.defined() ? ghn.data_ptr()
                                        : nullptr,
                        !first          ? dc[(t + 1) & 1].data_ptr()
                        : gcn.defined() ? gcn.data_ptr()
                                        : nullptr,
                        grad_output ? static_cast<const char*>(grad_output->data_ptr()) +
                                          (packed ? row * stride(1) : t * stride(0)) * size
                                    : nullptr,
                        stride(1),
                        stride(2),
                        static_cast<const char*>(gatesc.data_ptr()) + row * 3 * S * size,
                        static_cast<const char*>(cellsc.data_ptr()) + row * S * cell_size,
                        static_cast<char*>(d_gates.data_ptr()) + row * 3 * S * size,
                        dc[t & 1].data_ptr(),
                        rows_t,
                        S,
                        dtype,
                        x.get_device_index()};
      Backend::step_backward(p);
      if (t == 0 && !need_h0) break;
      // d_gates_t W_h: the recurrent part of the gradient of h_{t-1} (at t = 0, d_h0).
      const Tensor dh_t = rows_t == B ? dh : seq::rows(dh, 0, rows_t, S);
      Backend::addmm(dh_t, dh_t, seq::rows(d_gates, row, rows_t, 3 * S), W_h, 0.0);
    }
  }
  // The sums over all N rows: one backend call where it has a kernel for
  // the size, else GEMMs through the C shim into the outputs. Rows B..N-1
  // take their h_{t-1} from `previous`: output's first rows at fixed
  // length, gathered packed.
  const Tensor d_x = need_x ? empty(x, x.sizes().data(), x.dim()) : empty(x, {0});
  const Tensor d_W = need_W ? empty(x, {3 * S, S + F}) : empty(x, {0});
  const bool need_sum_b = need_b && !ran.bias;
  const Tensor xc = detail::contiguous(x), outc = detail::contiguous(output);
  const Tensor h0c = h0 ? detail::contiguous(*h0) : Tensor();
  const Tensor previous =
      !need_W || N == B ? outc
      : packed          ? Backend::index_rows(seq::rows(outc, 0, N, S), seq::packed_rows(index, st))
                        : outc;
  const bool summed =
      (need_x || need_W || need_sum_b) &&
      Backend::sums(SeqGrads{
          d_gates.data_ptr(), h0 ? h0c.data_ptr() : nullptr, previous.data_ptr(), xc.data_ptr(),
          Wc.data_ptr(), need_W ? d_W.data_ptr() : nullptr, need_sum_b ? d_b.data_ptr() : nullptr,
          need_x ? d_x.data_ptr() : nullptr, S + F, N, B, F, S, dtype, x.get_device_index()});
  if (need_x && F > 0 && !summed)
    Backend::addmm(seq::rows(d_x, 0, N, F), seq::rows(d_x, 0, N, F), d_gates,
                   seq::view(W, S * W.stride(1), {3 * S, F}, {W.stride(0), W.stride(1)}), 0.0);
  const auto t_rows = [&](int64_t r0, int64_t n) {  // rows [r0, r0 + n) of d_gates, transposed
    return seq::view(d_gates, r0 * 3 * S, {3 * S, n}, {1, 3 * S});
  };
  if (need_W && !summed) {
    // d_W = d_gates^T [h_{t-1}, x_t], by column block (no [N, S + F] copy
    // of the inputs): the h block from h0 (step 0; none for zeros) and
    // `previous` (rows B..N-1), the x block from x.
    Tensor dW_h = seq::view(d_W, 0, {3 * S, S}, {S + F, 1});
    if (h0) Backend::addmm(dW_h, dW_h, t_rows(0, B), h0c, 0.0);
    if (N > B)
      Backend::addmm(dW_h, dW_h, t_rows(B, N - B), seq::rows(previous, 0, N - B, S),
                     h0 ? 1.0 : 0.0);
    else if (!h0)
      torch::stable::zero_(dW_h);
    if (F > 0) {
      const Tensor dW_x = seq::view(d_W, S, {3 * S, F}, {S + F, 1});
      Backend::addmm(dW_x, dW_x, t_rows(0, N), seq::rows(xc, 0, N, F), 0.0);
    }
  }
  if (need_sum_b && !summed) {
    // A [1, N] x [N, 3S] product: a sum over dim 0 of a CUDA tensor stages
    // its partial results in a buffer (48 MiB at N = 4096, 3S = 1536)
    // larger than the whole saved sequence of a bfloat16 layer.
    Tensor ones = empty(x, {1, N});
    torch::stable::fill_(ones, 1.0);
    const Tensor row = seq::rows(d_b, 0, 1, 3 * S);
    Backend::addmm(row, row, ones, d_gates, 0.0);
  }
  Tensor d_h0 = need_h0 ? (B * S > 0 ? dh : torch::stable::new_zeros(x, {B, S})) : empty(x, {0});
  Tensor d_c0_out = empty(x, {0});
  if (need_c0)
    d_c0_out = B * S > 0 ? seq::as_dtype(d_c0, dtype) : torch::stable::new_zeros(x, {B, S});
  return {d_x, d_W, d_b, d_h0, d_c0_out};
}

// The row order that reverses every sequence of packed x [N, F] within its
// own length, for the reverse direction of a bidirectional layer: row (t, b)
// takes row (L_b - 1 - t, b), L_b the length of sequence b. The reversed
// sequences pack to the same batch_sizes, so the order is its own inverse.
// int64 [N] on x's device, made on the host (on CUDA, copied from pinned
// memory without waiting for the device).
inline Tensor packed_reversed_rows(const Tensor& x, std::vector<int64_t> batch_sizes) {
  const SeqSteps st = seq::steps_of("packed_reversed_rows", x,
                                    std::optional<std::vector<int64_t>>(std::move(batch_sizes)));
  const std::vector<int64_t> last = seq::last_steps(st);
  std::vector<int64_t> order(st.total);
  for (int64_t t = 0; t < st.steps; ++t)
    for (int64_t b = 0; b < st.rows(t); ++b) order[st.offset(t) + b] = st.offset(last[b] - t) + b;
  return seq::device_ints(x, order);
}

}  // namespace kernforge
