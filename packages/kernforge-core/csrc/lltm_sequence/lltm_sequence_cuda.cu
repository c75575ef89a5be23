// The LLTM sequence on CUDA: the driver of lltm_sequence_math.h. At small
// batch (float, half, bfloat16) the whole recurrence is one persistent kernel
// per direction: one thread-block cluster for the smallest sequences
// (lltm_sequence_cluster.cuh; a larger batch: a cluster for each share of
// its rows, in waves where more than run at once), else a cooperative grid
// (lltm_sequence_persistent.cuh); a single step of a few rows (a generated
// token) is one matrix-vector kernel (lltm_sequence_token.cuh), of any
// floating dtype, and of up to 128 rows one GEMM-tile kernel; otherwise
// cuBLAS GEMMs (half and bfloat16 straight through cuBLAS,
// common/cuda_blas.cuh; float and double by torch's addmm into views,
// through the C shim) and, per step, one forward gate kernel (below) or the
// cell's backward gate kernel (lltm/lltm_cuda_gates.cuh). The backward's
// sums over all steps (d_W, d_b, d_x) are one kernel of
// lltm_sequence_grads.cuh at small sizes, else cuBLAS.
#include <torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h>
#include <torch/csrc/stable/library.h>

#include <algorithm>

#include "common/cuda_blas.cuh"
#include "common/cuda_utils.cuh"
#include "common/dispatch.h"
#include "common/elementwise_cuda.cuh"
#include "lltm/lltm_cuda_gates.cuh"
#include "lltm_sequence/lltm_sequence_cluster.cuh"
#include "lltm_sequence/lltm_sequence_grads.cuh"
#include "lltm_sequence/lltm_sequence_math.h"
#include "lltm_sequence/lltm_sequence_token.cuh"

namespace kernforge {
namespace {

using cuda_lltm::kThreads;

// One step's gates from pre [B, 3S] in rows (the step's slice of the input
// projection plus its recurrent GEMM), which gates may overwrite (each thread
// reads its element's three values before it writes them), and c_prev (null:
// zeros): thread (s, b) over a grid of (ceil(S / kThreads), rows); reads and
// writes are coalesced along s.
template <class scalar_t, class cell_t>
__global__ void __launch_bounds__(kThreads)
    step_forward_kernel(const scalar_t* pre, const scalar_t* __restrict__ bias,
                        const cell_t* __restrict__ c_prev, scalar_t* gates, cell_t* __restrict__ c,
                        scalar_t* __restrict__ h, int64_t batch, int64_t S) {
  using acc_t = opmath_t<scalar_t>;
  const int64_t s = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= S) return;
  const acc_t b0 = static_cast<acc_t>(bias[s]), b1 = static_cast<acc_t>(bias[S + s]),
              b2 = static_cast<acc_t>(bias[2 * S + s]);
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const scalar_t* p = pre + b * 3 * S;
    acc_t i, o, z, cn, hn;
    lltm_cell_forward<acc_t>(static_cast<acc_t>(p[s]) + b0, static_cast<acc_t>(p[S + s]) + b1,
                             static_cast<acc_t>(p[2 * S + s]) + b2,
                             c_prev ? static_cast<acc_t>(c_prev[b * S + s]) : acc_t(0), i, o, z, cn,
                             hn);
    scalar_t* g = gates + b * 3 * S;
    g[s] = static_cast<scalar_t>(i);
    g[S + s] = static_cast<scalar_t>(o);
    g[2 * S + s] = static_cast<scalar_t>(z);
    c[b * S + s] = static_cast<cell_t>(cn);
    h[b * S + s] = static_cast<scalar_t>(hn);
  }
}

struct CudaSequence {
  using Guard = cuda::Launcher::Guard;
  // step_forward_kernel and the persistent kernels read an element's pre
  // before they write its gates, in the same thread.
  static constexpr bool kGatesOverPre = true;

  // out = beta * self + a b, where out is self (as every caller has it): in
  // half and bfloat16 by cuBLAS itself (common/cuda_blas.cuh), else (and
  // where that cannot take it) by torch's addmm through the C shim.
  static void addmm(const Tensor& out, const Tensor& self, const Tensor& a, const Tensor& b,
                    double beta) {
    const ScalarType dtype = out.scalar_type();
    if ((dtype == ScalarType::Half || dtype == ScalarType::BFloat16) &&
        out.data_ptr() == self.data_ptr() && out.stride(0) == self.stride(0) &&
        out.stride(1) == self.stride(1)) {
      const int32_t device = out.get_device_index();
      if (cuda::gemm_16bit(dtype == ScalarType::Half ? CUDA_R_16F : CUDA_R_16BF, out.size(0),
                           out.size(1), a.size(1), a.data_ptr(), a.stride(0), a.stride(1),
                           b.data_ptr(), b.stride(0), b.stride(1), out.data_ptr(), out.stride(0),
                           out.stride(1), static_cast<float>(beta), device,
                           cuda::current_stream(device)))
        return;
    }
    if (aoti_torch_cuda_addmm_out(out.get(), self.get(), a.get(), b.get(), beta, 1.0) !=
        AOTI_TORCH_SUCCESS)
      throw std::runtime_error("kernforge::lltm_sequence: addmm failed");
  }

  static Tensor index_rows(const Tensor& src, const Tensor& index) {
    return seq::index_rows(aoti_torch_cuda_index_Tensor, src, index);
  }

  static void step(const SeqStep& p) {
    dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      using cell_t = opmath_t<scalar_t>;
      constexpr auto kernel = step_forward_kernel<scalar_t, cell_t>;
      kernel<<<cuda_lltm::pointwise_grid<kernel>(p.batch, p.state, p.device), kThreads, 0,
               cuda::current_stream(p.device)>>>(
          static_cast<const scalar_t*>(p.pre), static_cast<const scalar_t*>(p.bias),
          static_cast<const cell_t*>(p.c_prev), static_cast<scalar_t*>(p.gates),
          static_cast<cell_t*>(p.c), static_cast<scalar_t*>(p.h), p.batch, p.state);
      STD_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }

  enum class Ran { none, cluster, clusters, grid };

  // One cluster where the sequence is small enough (lltm_sequence_cluster.cuh),
  // else, with `split`, clusters of the batch's rows (cluster_split_plan),
  // else the grid of lltm_sequence_persistent.cuh, else none: stepping. With
  // `split_first`, the clusters of rows come before one cluster where they
  // run faster: the forward's where cuda_seq::split_pays, the backward's
  // wherever they fit (cluster_split_plan).
  // make(plan, cluster) gives the kernel's arguments; the cluster forward
  // multiplies x itself where `features` is not 0 and it fits, the grid
  // where `grid_features` is not 0 and it fits. With `mma` (W's element
  // size) the grid multiplies on tensor cores where cuda_seq::plan says so.
  // HeldKernel: the cluster kernel for a plan that holds W_h in registers
  // (plan.held), where its clusters are as large as ClusterKernel's.
  // `wave_budget` and `steps`: the split's (cuda_seq::wave_budget, SplitSteps).
  template <auto ClusterKernel, auto GridKernel, auto HeldKernel = ClusterKernel, class Make>
  static Ran run(const Make& make, int64_t batch, int64_t state, bool backward, int32_t device,
                 int64_t features = 0, int64_t grid_features = 0, bool split = false,
                 bool split_first = false, int mma = 0, int64_t wave_budget = 0,
                 const cuda_seq::SplitSteps& steps = {}) {
    const cuda_seq::ClusterFit fit = cuda_seq::cluster_fit<ClusterKernel>(device);
    const auto launch = [&](const cuda_seq::Plan& p) {
      if (p.held && cuda_seq::max_cluster<HeldKernel>(device) == fit.blocks)
        cuda_seq::launch_cluster<HeldKernel>(make(p, true), device);
      else
        cuda_seq::launch_cluster<ClusterKernel>(make(p, true), device);
    };
    const cuda_seq::Plan plan =
        cuda_seq::cluster_plan(batch, state, backward, fit.blocks, device, features);
    if (plan.blocks > 0 && !(split_first && (backward || cuda_seq::split_pays(plan)))) {
      launch(plan);
      return Ran::cluster;
    }
    const cuda_seq::Plan grid = cuda_seq::plan(batch, state, backward, device, grid_features, mma);
    if (split) {
      const cuda_seq::Plan clusters = cuda_seq::cluster_split_plan(
          batch, state, backward, fit, cuda::sm_count(device), grid, device, wave_budget, steps);
      if (clusters.blocks > 0) {
        launch(clusters);
        return Ran::clusters;
      }
    }
    if (plan.blocks > 0) {  // (split_first, where the split does not fit)
      launch(plan);
      return Ran::cluster;
    }
    if (grid.blocks == 0) return Ran::none;
    cuda_seq::launch<GridKernel>(make(grid, false), device);
    return Ran::grid;
  }

  // The F that the cluster forward may multiply by W_x itself (float x, F a
  // multiple of 4, 16-byte aligned), else 0: up to kFusedFeatures, where a
  // thread's share of x_t's product costs less than the GEMM's call (on an
  // H200, (16, 32, 128), T = 64, inference: 103.4 us of kernels against
  // 94.9 with the GEMM, whose call left the host 1.6 times as long); any F
  // (that fits the shared memory) for up to kFusedSteps steps, where the
  // GEMM's launch would cost more than the product (a generated token: T = 1).
  static constexpr int64_t kFusedFeatures = 64;
  static constexpr int64_t kFusedSteps = 4;
  static int64_t fusable(const SeqRecurrence& r) {
    const bool fits = r.dtype == ScalarType::Float && r.features > 0 && r.features % 4 == 0 &&
                      (r.features <= kFusedFeatures || r.steps <= kFusedSteps) &&
                      reinterpret_cast<uintptr_t>(r.x) % 16 == 0;
    return fits ? r.features : 0;
  }

  // The F the grid forward may multiply by W_x itself: fusable's, for up to
  // kFusedSteps steps (each step's x is staged from memory, on the step's path).
  static int64_t grid_fusable(const SeqRecurrence& r) {
    return r.steps <= kFusedSteps ? fusable(r) : 0;
  }

  // Whether the forward may split the batch over clusters (cluster_split_plan):
  // past kFusedSteps steps, where the grid would not multiply x itself.
  static bool splits(const SeqRecurrence& r) { return r.steps > kFusedSteps; }

  // Whether it splits a batch that one cluster takes where that runs faster
  // (cuda_seq::split_pays): in inference (no gates kept).
  static bool splits_first(const SeqRecurrence& r) { return splits(r) && r.gates == nullptr; }

  // Whether a step (T = 1) runs as cuBLAS GEMMs and one gate kernel, not in
  // a kernel of ours: in half and bfloat16 past kTokenCapturedBatch rows,
  // while the stream captures a CUDA graph. At replay only the device's time
  // counts, and the tensor cores' GEMMs take less of it than the token and
  // persistent kernels there (on an H200, S = 640, bfloat16, a replayed step
  // of 12 to 128 rows: 13.4 to 15.2 us against 15.5 to 29.9); run eagerly,
  // the host's time for their five launches would outweigh that.
  static constexpr int64_t kTokenCapturedBatch = 8;
  static bool steps_captured(const SeqRecurrence& r) {
    if (r.steps != 1 || r.batch <= kTokenCapturedBatch || element_size(r.dtype) != 2) return false;
    const cudaStream_t stream = cuda::current_stream(r.device);
    if (cuda::capturing(stream)) return true;
    // Run eagerly (as the warm-up before a capture), the step makes this
    // thread's cuBLAS handle, which its capture could not make.
    cuda::blas_handle(r.device, stream);
    return false;
  }

  // Whether the token kernel runs r's step.
  static bool token_fits(const SeqRecurrence& r) {
    return cuda_seq::token_fits(r.steps, r.batch) && !steps_captured(r);
  }

  // Whether the tile kernel runs r's step (float, half and bfloat16, which it
  // sums in float; 4 values a load; in 16-bit, no more work than the
  // tensor-core kernels do faster).
  static bool tile_fits(const SeqRecurrence& r) {
    if (!cuda_seq::tile_fits(r.steps, r.batch) || r.dtype == ScalarType::Double ||
        steps_captured(r))
      return false;
    // K as with h0 given: the plan asks (projects_input) before h0 is bound.
    if (element_size(r.dtype) == 2 &&
        cuda_seq::tile_work(r.batch, r.state, r.state + r.features) > cuda_seq::kTile16MaxWork)
      return false;
    bool fits = false;
    dispatch<Dtypes::Floating>(r.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      fits = cuda_seq::token_vectorizes(token_args<scalar_t>(r));
    });
    return fits;
  }

  // Whether recurrence(r) multiplies x by W_x itself (the driver then makes no P).
  static bool projects_input(const SeqRecurrence& r) {
    if (steps_captured(r)) return false;
    if (token_fits(r) || tile_fits(r)) return true;
    if (fusable(r) == 0) return false;
    const int blocks =
        cuda_seq::max_cluster<cuda_seq::cluster_forward_kernel<float, false>>(r.device);
    const cuda_seq::Plan cluster =
        cuda_seq::cluster_plan(r.batch, r.state, false, blocks, r.device, fusable(r));
    if (cluster.blocks > 0)
      return cluster.features > 0 && !(splits_first(r) && cuda_seq::split_pays(cluster));
    return grid_fusable(r) > 0 &&
           cuda_seq::plan(r.batch, r.state, false, r.device, grid_fusable(r)).features > 0;
  }

  // The kernels' instantiation for packed (offsets) or fixed-length steps.
  template <class F>
  static void by_layout(const int64_t* offsets, const F& f) {
    if (offsets)
      f(std::true_type{});
    else
      f(std::false_type{});
  }

  template <class scalar_t>
  static cuda_seq::TokenArgs<scalar_t> token_args(const SeqRecurrence& r) {
    return {TokenBuffers<scalar_t>::of(r), r.ldw, static_cast<int>(r.batch),
            static_cast<int>(r.state), static_cast<int>(r.features)};
  }

  // A token's layers (each projecting its input, layer k + 1's x layer k's
  // output): of a token kernel's batch, in cooperative launches of up to
  // kTokenMaxLayers layers; else each layer's recurrence.
  static bool token(const SeqRecurrence* layers, int64_t count) {
    bool tokens = true;
    for (int64_t k = 0; k < count; ++k) tokens = tokens && token_fits(layers[k]);
    if (!tokens) {
      for (int64_t k = 0; k < count; ++k)
        if (!recurrence(layers[k])) return false;
      return true;
    }
    dispatch<Dtypes::Floating>(layers[0].dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      for (int64_t k0 = 0; k0 < count; k0 += cuda_seq::kTokenMaxLayers) {
        cuda_seq::TokenLayers<scalar_t> group{};
        group.count = static_cast<int>(std::min<int64_t>(cuda_seq::kTokenMaxLayers, count - k0));
        for (int k = 0; k < group.count; ++k) group.layer[k] = token_args<scalar_t>(layers[k0 + k]);
        cuda_seq::launch_token_layers(group, layers[0].device);
      }
    });
    return true;
  }

  static bool recurrence(const SeqRecurrence& r) {
    if (steps_captured(r)) return false;
    if (token_fits(r)) {
      dispatch<Dtypes::Floating>(r.dtype, [&](auto tag) {
        using scalar_t = typename decltype(tag)::type;
        cuda_seq::launch_token(token_args<scalar_t>(r), r.device);
      });
      return true;
    }
    bool ran = false;
    dispatch<Dtypes::Floating>(r.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<scalar_t, double>) {
        if (tile_fits(r)) {
          cuda_seq::launch_tile(token_args<scalar_t>(r), r.device);
          ran = true;
          return;
        }
        by_layout(r.offsets, [&](auto packed) {
          constexpr bool P = decltype(packed)::value;
          Tensor state;  // the packed grid's cells ([B, S] float), alive until the launch is queued
          const auto make = [&](const cuda_seq::Plan& plan, bool cluster) {
            if (P && !cluster)
              state = torch::stable::empty(
                  {r.batch, r.state}, ScalarType::Float, std::nullopt,
                  torch::stable::Device(torch::headeronly::DeviceType::CUDA,
                                        static_cast<torch::stable::DeviceIndex>(r.device)));
            return cuda_seq::ForwardArgs<scalar_t, P>{
                plan.features > 0 ? nullptr : static_cast<const scalar_t*>(r.P),
                static_cast<const scalar_t*>(r.x),
                static_cast<const scalar_t*>(r.bias),
                static_cast<const scalar_t*>(r.W),
                static_cast<const scalar_t*>(r.h0),
                static_cast<const float*>(r.c0),
                static_cast<scalar_t*>(r.gates),
                static_cast<scalar_t*>(r.output),
                static_cast<scalar_t*>(r.c_n),
                static_cast<scalar_t*>(r.h_n),
                static_cast<float*>(r.cells),
                r.offsets,
                state.defined() ? static_cast<float*>(state.data_ptr()) : nullptr,
                r.ldw,
                static_cast<int>(r.steps),
                static_cast<int>(r.batch),
                static_cast<int>(r.state),
                plan};
          };
          constexpr auto grid = cuda_seq::forward_kernel<scalar_t, P>;
          // Tensor cores where the kernel was built for compute capability
          // 8.0 or up, and the grid would not multiply x itself (float).
          const int64_t grid_features = grid_fusable(r);
          const int mma = cuda::binary_version<grid>(r.device) >= 80 && grid_features == 0
                              ? static_cast<int>(sizeof(scalar_t))
                              : 0;
          // Waves of clusters in place of the grid in float: the 16-bit
          // grid's step, on tensor cores, cost as little as theirs (on an
          // H200, (B, S) = (256, 256), packed, 844 us against 849).
          const cuda_seq::SplitSteps steps{r.steps, r.host_offsets, sizeof(scalar_t) == 4};
          ran = run<cuda_seq::cluster_forward_kernel<scalar_t, P>, grid,
                    cuda_seq::cluster_forward_kernel<scalar_t, P, cuda_seq::kHeld>>(
                    make, r.batch, r.state, false, r.device, fusable(r), grid_features, splits(r),
                    splits_first(r), mma, cuda_seq::wave_budget(false, sizeof(scalar_t) == 2, P),
                    steps) != Ran::none;
        });
      }
    });
    return ran;
  }

  // One cluster also sums d_b; clusters of rows and the grid leave it to the driver.
  static SeqRan recurrence(const SeqRecurrenceBackward& r) {
    SeqRan ran;
    dispatch<Dtypes::Floating>(r.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<scalar_t, double>) {
        by_layout(r.offsets, [&](auto packed) {
          constexpr bool P = decltype(packed)::value;
          const auto make = [&](const cuda_seq::Plan& plan, bool cluster) {
            return cuda_seq::BackwardArgs<scalar_t, P>{
                static_cast<const scalar_t*>(r.grad_output),
                static_cast<const scalar_t*>(r.grad_hn),
                static_cast<const scalar_t*>(r.gates),
                static_cast<const scalar_t*>(r.W),
                r.grad_output_strides[0],
                r.grad_output_strides[1],
                r.grad_output_strides[2],
                static_cast<const float*>(r.grad_cn),
                static_cast<const float*>(r.cells),
                static_cast<scalar_t*>(r.d_gates),
                static_cast<scalar_t*>(r.d_h0),
                static_cast<float*>(r.d_c0),
                cluster && plan.clusters == 1 ? static_cast<scalar_t*>(r.d_b) : nullptr,
                r.offsets,
                r.ldw,
                static_cast<int>(r.steps),
                static_cast<int>(r.batch),
                static_cast<int>(r.state),
                plan};
          };
          // 16-bit: tensor cores where the kernel was built for compute
          // capability 8.0 or up (the grid's plan, where its FMA product's does not fit)
          constexpr auto grid = cuda_seq::backward_kernel<scalar_t, P>;
          const int mma =
              sizeof(scalar_t) == 2 && cuda::binary_version<grid>(r.device) >= 80 ? 2 : 0;
          const cuda_seq::SplitSteps steps{r.steps, nullptr, true};
          const Ran kind = run<cuda_seq::cluster_backward_kernel<scalar_t, P>, grid>(
              make, r.batch, r.state, true, r.device, 0, 0, true, true, mma,
              cuda_seq::wave_budget(true, sizeof(scalar_t) == 2, P), steps);
          ran = SeqRan{kind != Ran::none, kind == Ran::cluster && r.d_b != nullptr};
        });
      }
    });
    return ran;
  }

  // One launch in place of three or four cuBLAS calls, where the products are small.
  static bool sums(const SeqGrads& g) {
    if (!cuda_seq::weight_grads_fit(g.rows, g.state, g.features)) return false;
    dispatch<Dtypes::Floating>(g.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      cuda_seq::launch_weight_grads(
          cuda_seq::GradsArgs<scalar_t>{
              static_cast<const scalar_t*>(g.d_gates), static_cast<const scalar_t*>(g.h0),
              static_cast<const scalar_t*>(g.previous), static_cast<const scalar_t*>(g.x),
              static_cast<const scalar_t*>(g.W), static_cast<scalar_t*>(g.d_W),
              static_cast<scalar_t*>(g.d_b), static_cast<scalar_t*>(g.d_x), g.rows, g.batch,
              g.state, g.features, g.ldw},
          g.device);
    });
    return true;
  }

  static void step_backward(const SeqStepBackward& p) {
    dispatch<Dtypes::Floating>(p.dtype, [&](auto tag) {
      using scalar_t = typename decltype(tag)::type;
      using cell_t = opmath_t<scalar_t>;
      constexpr auto kernel = cuda_lltm::gates_backward_kernel<scalar_t, cell_t>;
      kernel<<<cuda_lltm::pointwise_grid<kernel>(p.batch, p.state, p.device), kThreads, 0,
               cuda::current_stream(p.device)>>>(
          static_cast<const scalar_t*>(p.grad_h), static_cast<const cell_t*>(p.grad_c),
          static_cast<const scalar_t*>(p.grad_out), static_cast<const scalar_t*>(p.gates),
          static_cast<const cell_t*>(p.c), static_cast<scalar_t*>(p.d_gates),
          static_cast<cell_t*>(p.d_c), p.state, 1, p.state, 1, p.ld_grad_out, p.inc_grad_out,
          p.batch, p.state);
      STD_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace
}  // namespace kernforge

STABLE_TORCH_LIBRARY_IMPL(kernforge, CUDA, m) {
  m.impl("lltm_sequence_forward",
         TORCH_BOX(&kernforge::lltm_sequence_forward<kernforge::CudaSequence>));
  m.impl("lltm_sequence_inference",
         TORCH_BOX(&kernforge::lltm_sequence_inference<kernforge::CudaSequence>));
  m.impl("lltm_sequence_backward",
         TORCH_BOX(&kernforge::lltm_sequence_backward<kernforge::CudaSequence>));
  m.impl("lltm_sequence_layers_inference",
         TORCH_BOX(&kernforge::lltm_sequence_layers_inference<kernforge::CudaSequence>));
  m.impl("packed_reversed_rows", TORCH_BOX(&kernforge::packed_reversed_rows));
}
