// Argument checks shared by every kernforge op. Each failure names the op, the
// offending argument with its shape, dtype and device, and fires before any
// kernel runs. kernforge_core/_checks.py mirrors these messages for the fake
// (meta) kernels; tests/core/test_errors.py keeps the two in step.
#pragma once

#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/tensor.h>

#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace kernforge {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// Which dtypes an op accepts; dispatch.h instantiates kernels for the same set.
enum class Dtypes { Floating, FloatingAndInt };

inline const char* dtype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Float: return "float32";
    case ScalarType::Double: return "float64";
    case ScalarType::Half: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Short: return "int16";
    case ScalarType::Char: return "int8";
    case ScalarType::Byte: return "uint8";
    case ScalarType::Bool: return "bool";
    case ScalarType::ComplexFloat: return "complex64";
    case ScalarType::ComplexDouble: return "complex128";
    default: return "unknown";
  }
}

inline bool dtype_allowed(ScalarType t, Dtypes allowed) {
  switch (t) {
    case ScalarType::Float:
    case ScalarType::Double:
    case ScalarType::Half:
    case ScalarType::BFloat16: return true;
    case ScalarType::Int:
    case ScalarType::Long: return allowed == Dtypes::FloatingAndInt;
    default: return false;
  }
}

inline const char* dtypes_text(Dtypes allowed) {
  return allowed == Dtypes::Floating ? "float16, bfloat16, float32 or float64"
                                     : "float16, bfloat16, float32, float64, int32 or int64";
}

inline std::string device_text(const Tensor& t) {
  if (t.is_cpu()) return "cpu";
  if (t.is_cuda()) return "cuda:" + std::to_string(t.get_device_index());
  return "device type " + std::to_string(static_cast<int>(t.device().type()));
}

// No iostreams here: string streams crash inside extensions on some torch
// builds (seen on torch 2.11), so messages are built with std::to_string.
inline std::string shape_text(const Tensor& t) {
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

// "a: [3, 4] float32 cuda:0"
inline std::string describe(const char* name, const Tensor& t) {
  return std::string(name) + ": " + shape_text(t) + " " + dtype_name(t.scalar_type()) + " " +
         device_text(t);
}

using NamedTensor = std::pair<const char*, const Tensor*>;

[[noreturn]] inline void fail(const char* op, const std::string& what,
                              std::initializer_list<NamedTensor> args) {
  std::string msg = std::string("kernforge::") + op + ": " + what + ", got ";
  bool first = true;
  for (const auto& a : args) {
    msg += (first ? "" : ", ") + describe(a.first, *a.second);
    first = false;
  }
  throw std::runtime_error(msg);
}

// A tensor's metadata, read once: every accessor of the stable ABI is a call
// into libtorch (scalar_type() a chain of them), and an op's host path is
// paid on every call.
struct Meta {
  ScalarType dtype;
  int32_t device_type;
  int32_t device_index;
  torch::headeronly::IntHeaderOnlyArrayRef sizes;
  explicit Meta(const Tensor& t) : dtype(t.scalar_type()), sizes(t.sizes()) {
    if (aoti_torch_get_device_type(t.get(), &device_type) != AOTI_TORCH_SUCCESS ||
        aoti_torch_get_device_index(t.get(), &device_index) != AOTI_TORCH_SUCCESS)
      throw std::runtime_error("kernforge: could not read a tensor's device");
  }
  bool same_device(const Meta& o) const {
    return device_type == o.device_type && device_index == o.device_index;
  }
};

// Checks that every tensor (at most 6) is dense, on one CPU or CUDA device,
// of one supported dtype, and, with `same_shape`, of one shape; returns that
// dtype. The first tensor sets the reference.
inline ScalarType check_compatible(const char* op, Dtypes allowed,
                                   std::initializer_list<NamedTensor> args,
                                   bool same_shape = false) {
  static const int32_t kCpu = aoti_torch_device_type_cpu();
  static const int32_t kCuda = aoti_torch_device_type_cuda();
  constexpr size_t kMax = 6;
  if (args.size() > kMax)
    throw std::logic_error("kernforge: check_compatible takes at most 6 tensors");
  std::optional<Meta> meta[kMax];
  size_t i = 0;
  for (const auto& a : args) {
    const Tensor& t = *a.second;
    if (t.layout() != torch::headeronly::Layout::Strided)
      fail(op, "expected dense (strided) tensors", {a});
    const Meta& m = meta[i++].emplace(t);
    if (m.device_type != kCpu && m.device_type != kCuda)
      fail(op, "expected CPU or CUDA tensors", {a});
    if (!dtype_allowed(m.dtype, allowed))
      fail(op, std::string("unsupported dtype: expected ") + dtypes_text(allowed), {a});
  }
  const Meta& ref = *meta[0];
  for (i = 1; i < args.size(); ++i)
    if (!meta[i]->same_device(ref)) fail(op, "expected all tensors on one device", args);
  for (i = 1; i < args.size(); ++i)
    if (meta[i]->dtype != ref.dtype) fail(op, "expected tensors of one dtype", args);
  if (same_shape)
    for (i = 1; i < args.size(); ++i)
      if (!meta[i]->sizes.equals(ref.sizes)) fail(op, "expected tensors of equal shape", args);
  return ref.dtype;
}

// check_compatible, and one shape: the elementwise ops' contract.
inline ScalarType check_same(const char* op, Dtypes allowed,
                             std::initializer_list<NamedTensor> args) {
  return check_compatible(op, allowed, args, true);
}

// A 1-D tensor broadcast over the last dimension of `like` (a bias).
inline void check_row_vector(const char* op, const NamedTensor& row, const NamedTensor& like) {
  const Tensor& r = *row.second;
  const Tensor& x = *like.second;
  if (r.layout() != torch::headeronly::Layout::Strided)
    fail(op, "expected dense (strided) tensors", {row});
  if (r.is_cpu() != x.is_cpu() || r.get_device_index() != x.get_device_index())
    fail(op, "expected all tensors on one device", {like, row});
  if (r.scalar_type() != x.scalar_type()) fail(op, "expected tensors of one dtype", {like, row});
  if (x.dim() == 0)
    fail(op,
         std::string("a tensor ") + row.first + " needs " + like.first +
             " with at least one dimension",
         {like, row});
  const int64_t last = x.size(x.dim() - 1);
  if (r.dim() != 1 || r.size(0) != last)
    fail(op,
         std::string(row.first) + " must be 1-D with " + std::to_string(last) +
             " elements (the size of the last dimension of " + like.first + ")",
         {like, row});
}

}  // namespace kernforge
