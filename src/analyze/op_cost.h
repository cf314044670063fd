// What an op of a torch.profiler trace moved and computed, from the shapes and dtypes record_shapes
// wrote: the memory side of the roofline (tach's own ops declare the same; docs/formats.md "Op
// costs"). Each tensor input is read once and the output written once, at its dtype: the least
// traffic the op can have, so a verdict of memory-bound is one the op cannot escape by caching.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tach::analyze {

struct OpCost {
  int64_t flops = 0;  // tach's cost model (below); torch's own where it gives one may differ
  int64_t bytes = 0;  // read + written
};

// shapes: torch's input_shapes text as the trace keeps it, "[[8, 32, 64], [256, 64], [256]]"
// ([] for a scalar or a list); types: "Input type" as kept, "[float, float, float]".
// nullopt for ops outside the model or shapes that do not fit it. The model:
//   mm(a [m, k], b [k, n]), addmm(bias, a, b):    2·m·k·n;       a, b, bias read, [m, n] written
//   bmm(a [B, m, k], b [B, k, n]), baddbmm:       2·B·m·k·n;     likewise
//   linear(x [.., k], w [n, k], bias [n]?):       2·M·k·n (+ M·n with a bias), M = rows of x
//   scaled_dot_product_attention and its flash, efficient and CPU forms
//     (q [B, H, T, D], k [B, H, S, D], v [B, H, S, Dv]): 2·B·H·T·S·(D + Dv); q, k, v read, [B, H, T, Dv] written
//   elementwise (add, sub, mul, div, masked_fill and their in-place forms; relu, gelu, silu, sigmoid,
//     tanh, exp, neg): one FLOP per output element (of the broadcast shape); each tensor input read,
//     the output written (in place: into the first input); clone and copy_: 0 FLOPs, a read and a write
//   softmax, _softmax, log_softmax: 5 per element; layer_norm, native_layer_norm: 8 per element
//     (plus the weight and bias read)
std::optional<OpCost> op_cost(const std::string& op, const std::string& shapes, const std::string& types);

// Whether op_cost takes this op at all (whatever its shapes).
bool has_cost_model(const std::string& op);

// Bytes per element of a dtype as torch's "Input type" names it ("float", "c10::BFloat16",
// "c10::Half", "long int", ...); 0 for what is not a tensor dtype ("Scalar", "", "TensorList").
int element_bytes(const std::string& type);

// "[[8, 32], [], [64]]" → {{8, 32}, {}, {64}}; nullopt when it is not such a list.
std::optional<std::vector<std::vector<int64_t>>> parse_shapes(const std::string& text);
// "[float, c10::BFloat16, Scalar]" → {"float", "c10::BFloat16", "Scalar"}.
std::vector<std::string> parse_types(const std::string& text);

// The roofline's verdict for an op at an intensity (FLOP per byte) against a compute peak and a
// memory bandwidth: below the ridge point (peak / bandwidth) the memory side bounds it.
struct Bound {
  double intensity = 0;  // FLOP/byte
  double ridge = 0;      // FLOP/byte where the two ceilings meet
  bool memory_bound = false;
  double attainable_flops = 0;  // min(peak, bandwidth × intensity)
};
Bound roofline_bound(int64_t flops, int64_t bytes, double peak_flops, double bytes_per_s);

}  // namespace tach::analyze
