// Every kernforge op schema, once. Implementations register themselves at the
// bottom of csrc/<op>/<op>_cpu.cpp and <op>_cuda.cu; autograd and fake kernels
// are registered in Python (kernforge_core/ops.py).
#include <Python.h>
#include <torch/csrc/stable/library.h>

STABLE_TORCH_LIBRARY(kernforge, m) {
  m.def("mul(Tensor a, Tensor b) -> Tensor");
  m.def("add(Tensor a, Tensor b, float alpha=1) -> Tensor");
  m.def("add_backward(Tensor grad, float alpha) -> Tensor");
  m.def("fused_relu_add(Tensor x, Tensor y, Tensor? bias=None, float bias_scalar=0) -> Tensor");
  m.def("fused_relu_add_backward(Tensor grad, Tensor x, bool bias_grad) -> (Tensor, Tensor)");
  // lltm_forward returns (h', c', gates), gates the activated [i, o, z] kept
  // for the backward. lltm_backward computes what output_mask asks for, in the
  // forward's order (x, W, b, h), and d_c always: (d_X, d_W, d_b, d_c), d_X
  // the requested column blocks of [d_h, d_x] from one GEMM ([B, 0] for
  // neither; outputs may not share storage), d_W and d_b [0] when not asked.
  m.def(
      "lltm_forward(Tensor x, Tensor W, Tensor b, Tensor h, Tensor c) -> (Tensor, Tensor, Tensor)");
  m.def(
      "lltm_backward(Tensor grad_h, Tensor grad_c, Tensor x, Tensor W, Tensor h, Tensor c_new, "
      "Tensor gates, bool[4] output_mask) -> (Tensor, Tensor, Tensor, Tensor)");
  // The cell over a sequence x [T, B, F]: lltm_sequence_forward returns
  // (output [T, B, S] every step's h, h_n, c_n, gates [T, B, 3S], cells
  // [T, B, S] every step's c, float for half / bfloat16), gates and cells
  // kept for the backward; h_n [B, S] is output's last step in storage of its
  // own, as nn.LSTM's; h0 or c0 None is zeros. With batch_sizes (a
  // PackedSequence's), x is packed [N, F], step t runs on its first
  // batch_sizes[t] rows, the per-step outputs are [N, ...] and h_n and c_n
  // are each row's at its own last step. lltm_sequence_backward computes
  // what output_mask asks for (x, W, b, h0, c0), each else [0]: (d_x, d_W,
  // d_b, d_h0, d_c0), from the gradients of output, c_n and h_n (each
  // None: zero). grad_hn comes last, with a default: a new argument at the
  // end keeps calls made to the older schema working, as torch's own
  // schemas evolve (graphs that torch.compile cached on disk hold them).
  m.def(
      "lltm_sequence_forward(Tensor x, Tensor W, Tensor b, Tensor? h0, Tensor? c0, "
      "int[]? batch_sizes=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // lltm_sequence_inference: the forward with no backward to come, (output,
  // h_n, c_n), keeping neither gates nor cells; h_n [B, S] is each row's h
  // at its own last step.
  m.def(
      "lltm_sequence_inference(Tensor x, Tensor W, Tensor b, Tensor? h0, Tensor? c0, "
      "int[]? batch_sizes=None) -> (Tensor, Tensor, Tensor)");
  // lltm_sequence_layers_inference: layers upon layers in one call, for
  // inference and generation: (output of the last layer [T, B, S], h_n
  // [L, B, S], c_n [L, B, S]) from weights and biases one per layer, h0
  // and c0 [L, B, S] or None (zeros).
  m.def(
      "lltm_sequence_layers_inference(Tensor x, Tensor[] weights, Tensor[] biases, Tensor? h0, "
      "Tensor? c0) -> (Tensor, Tensor, Tensor)");
  m.def(
      "lltm_sequence_backward(Tensor? grad_output, Tensor? grad_cn, Tensor x, Tensor W, "
      "Tensor? h0, Tensor output, Tensor cells, Tensor gates, bool[5] output_mask, "
      "int[]? batch_sizes=None, Tensor? grad_hn=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)");
  // packed_reversed_rows: the row order (int64 [N], on x's device) that
  // reverses each sequence of packed x [N, F] within its own length.
  m.def("packed_reversed_rows(Tensor x, int[] batch_sizes) -> Tensor");
}

// `import kernforge_core._C` loads this library, which registers the ops above;
// the module itself is empty. Built against CPython's limited API (abi3).
PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {
      PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr, nullptr, nullptr, nullptr, nullptr};
  return PyModule_Create(&module);
}
