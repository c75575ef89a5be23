// ATen for the C++ sources of a legacy extension: torch's own ATen, and the
// bridge from a TH handle to its tensor that ATen had when torch.utils.ffi
// did (torch 0.3 and 0.4): at::getType(at::kCUDA, at::kFloat) and
// Type::unsafeTensorFromTH(handle, retain), which fairseq-py's
// TemporalConvolutionTBC calls on the `void *` its functions take. The
// compatibility headers' folder comes before torch's, so this is the
// ATen/ATen.h such a source includes.
#pragma once

// A source that includes it itself is compiled with the C++ standard the
// installed torch's ATen needs (C++17, or C++20 from torch 2.14 on).
// The TH handles' runtime is built against torch's stable ABI, which the
// extensions' sources get too (TORCH_TARGET_VERSION); ATen is torch's full
// C++ API, so a source that includes it builds against the torch installed.
#undef TORCH_TARGET_VERSION
#include_next <ATen/ATen.h>
#include <TH/TH.h>
#ifdef KERNFORGE_LEGACY_WITH_CUDA
#include <THC/THC.h>
#endif
#include <torch/csrc/inductor/aoti_torch/utils.h>

// 0.3's ATen declared THC's state, which 2017 sources declared as theirs:
// `extern THCState* state;`
typedef struct THCState THCState;

#include <functional>
#include <stdexcept>
#include <string>

namespace at {

// A tensor type of torch 0.3's ATen: a device type and a scalar type
// (getType(at::kCUDA, at::kFloat) is "CUDAFloatType").
class Type {
 public:
  constexpr Type(DeviceType device, ScalarType scalar) : device_(device), scalar_(scalar) {}
  constexpr Type() : Type(kCPU, ScalarType::Undefined) {}

  ScalarType scalarType() const { return scalar_; }
  Backend backend() const { return device_ == kCUDA ? Backend::CUDA : Backend::CPU; }
  bool is_cuda() const { return device_ == kCUDA; }
  std::string toString() const {
    return std::string(device_ == kCUDA ? "CUDA" : "CPU") + c10::toString(scalar_) + "Type";
  }
  TensorOptions options() const { return TensorOptions().dtype(scalar_).device(device_); }

  // The tensor a TH handle (a THFloatTensor*, THCudaTensor*, ... an
  // extension function got) holds: the same tensor, its memory shared.
  // retain=false takes over the handle's reference, as 0.3 did (the handle is
  // released here); retain=true leaves the handle as it was. A handle of
  // another type raises, naming both.
  Tensor unsafeTensorFromTH(void* th, bool retain) const {
    if (th == nullptr) throw std::runtime_error("unsafeTensorFromTH: the TH handle is NULL");
    // every handle type has TH_TENSOR_FIELDS' layout: the torch tensor first
    const auto* box = static_cast<const THFloatTensor*>(th);
    Tensor t = *torch::aot_inductor::tensor_handle_to_tensor_pointer(
        static_cast<AtenTensorHandle>(box->kfl_tensor));
    if (t.scalar_type() != scalar_ || t.device().type() != device_)
      throw std::runtime_error("unsafeTensorFromTH: the handle holds a " +
                               std::string(c10::DeviceTypeName(t.device().type(), true)) +
                               " tensor of " + c10::toString(t.scalar_type()) + ", not a " +
                               toString());
    if (!retain) THFloatTensor_free(static_cast<THFloatTensor*>(th));  // frees a box of any type
    return t;
  }

  // A tensor over memory of the caller's, freed by `deleter` (if given) when
  // the tensor no longer needs it.
  Tensor tensorFromBlob(void* data, IntArrayRef size,
                        const std::function<void(void*)>& deleter = {}) const {
    return deleter ? at::from_blob(data, size, deleter, options())
                   : at::from_blob(data, size, options());
  }
  Tensor tensorFromBlob(void* data, IntArrayRef size, IntArrayRef stride,
                        const std::function<void(void*)>& deleter = {}) const {
    return deleter ? at::from_blob(data, size, stride, deleter, options())
                   : at::from_blob(data, size, stride, options());
  }
  Tensor tensor(IntArrayRef size) const { return at::empty(size, options()); }
  Tensor tensor() const { return at::empty({0}, options()); }
  Tensor zeros(IntArrayRef size) const { return at::zeros(size, options()); }
  Tensor ones(IntArrayRef size) const { return at::ones(size, options()); }

  bool operator==(const Type& o) const { return device_ == o.device_ && scalar_ == o.scalar_; }
  bool operator!=(const Type& o) const { return !(*this == o); }

 private:
  DeviceType device_;
  ScalarType scalar_;
};

// The type of a device type (or backend) and a scalar type; one object each.
inline Type& getType(DeviceType device, ScalarType scalar) {
  if (device != kCPU && device != kCUDA)
    throw std::runtime_error(std::string("getType: no legacy type on ") +
                             c10::DeviceTypeName(device, true));
  constexpr int n = static_cast<int>(ScalarType::NumOptions);
  struct Types {
    Type of[2][n];
    Types() {
      for (int s = 0; s < n; s++) {
        of[0][s] = Type(kCPU, static_cast<ScalarType>(s));
        of[1][s] = Type(kCUDA, static_cast<ScalarType>(s));
      }
    }
  };
  static Types types;
  return types.of[device == kCUDA][static_cast<int>(scalar)];
}
inline Type& getType(Backend backend, ScalarType scalar) {
  return getType(backendToDeviceType(backend), scalar);
}

}  // namespace at
