// The LLTM sequence on the CPU: the driver of lltm_sequence_math.h with
// torch's CPU GEMMs (addmm into views, through the C shim) and the cell's row
// passes (lltm/lltm_cpu_rows.h).
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h>
#include <torch/csrc/stable/library.h>

#include <vector>

#include "lltm/lltm_cpu_rows.h"
#include "lltm_sequence/lltm_sequence_math.h"

namespace kernforge {
namespace {

struct CpuSequence {
  using Guard = cpu::Launcher::Guard;
  // The row pass takes pre and gates as __restrict: they must not overlap.
  static constexpr bool kGatesOverPre = false;

  static void addmm(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    double beta) {
    if (aoti_torch_cpu_addmm_out(out.get(), self.get(), a.get(), b.get(), beta, 1.0) !=
        AOTI_TORCH_SUCCESS)
      throw std::runtime_error("kernforge::lltm_sequence: addmm failed");
  }

  static Tensor index_rows(const Tensor& src, const Tensor& index) {
    return seq::index_rows(aoti_torch_cpu_index_Tensor, src, index);
  }

  static void step(const SeqStep& p) {
    dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      using cell_t = opmath_t<scalar_t>;
      const cpu::ForwardRows<scalar_t, cell_t> r{static_cast<const scalar_t*>(p.pre),
                                                 static_cast<const scalar_t*>(p.bias),
                                                 static_cast<const cell_t*>(p.c_prev),
                                                 static_cast<scalar_t*>(p.gates),
                                                 static_cast<cell_t*>(p.c),
                                                 static_cast<scalar_t*>(p.h),
                                                 p.state};
      cpu::run_rows(cpu::Chunks(p.batch, p.state), r);
    });
  }

  // The CPU steps: per step, the GEMM and the row pass use both cores.
  static bool projects_input(const SeqRecurrence&) { return false; }
  static bool recurrence(const SeqRecurrence&) { return false; }
  static bool token(const SeqRecurrence*, int64_t) { return false; }
  static SeqRan recurrence(const SeqRecurrenceBackward&) { return {}; }
  static bool sums(const SeqGrads&) { return false; }

  // The row pass adds each chunk's d_gates into column sums; the sequence
  // takes d_b from one product over all steps instead, so these are scratch.
  static void step_backward(const SeqStepBackward& p) {
    dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      using cell_t = opmath_t<scalar_t>;
      const cpu::Chunks ch(p.batch, p.state);
      std::vector<opmath_t<scalar_t>> sums(static_cast<size_t>(ch.count * 3 * p.state));
      const cpu::BackwardRows<scalar_t, cell_t> r{static_cast<const scalar_t*>(p.grad_h),
                                                  static_cast<const cell_t*>(p.grad_c),
                                                  static_cast<const scalar_t*>(p.gates),
                                                  static_cast<const cell_t*>(p.c),
                                                  static_cast<scalar_t*>(p.d_gates),
                                                  static_cast<cell_t*>(p.d_c),
                                                  sums.data(),
                                                  p.state,
                                                  1,
                                                  p.state,
                                                  1,
                                                  p.state,
                                                  static_cast<const scalar_t*>(p.grad_out),
                                                  p.ld_grad_out,
                                                  p.inc_grad_out};
      cpu::run_rows(ch, r);
    });
  }
};

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CPU, m) {
  m.impl("lltm_sequence_forward",
         TORCH_BOX(&kernforge::lltm_sequence_forward<kernforge::CpuSequence>));
  m.impl("lltm_sequence_inference",
         TORCH_BOX(&kernforge::lltm_sequence_inference<kernforge::CpuSequence>));
  m.impl("lltm_sequence_backward",
         TORCH_BOX(&kernforge::lltm_sequence_backward<kernforge::CpuSequence>));
  m.impl("lltm_sequence_layers_inference",
         TORCH_BOX(&kernforge::lltm_sequence_layers_inference<kernforge::CpuSequence>));
  m.impl("packed_reversed_rows", TORCH_BOX(&kernforge::packed_reversed_rows));
}
