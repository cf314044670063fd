// FLOPs of an op from its recorded input shapes, by torch.profiler's own formulas (with_flops):
// torch 2.x no longer writes a "flops" argument into the trace, so key_averages()' FLOPs are
// recomputed from "Input Dims" the way torch computes them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::analyze {

// dims: one shape per input ([] for scalars and lists). Returns 0 for ops torch gives no FLOPs
// (everything but mm, addmm, bmm, baddbmm, add and mul) and for shapes that do not fit the op.
//   mm(a: [m, k], b: [k, n]), addmm(bias, a, b): 2·m·k·n
//   bmm(a: [B, m, k], b: [B, k, n]), baddbmm(bias, a, b): 2·B·m·k·n
//   add, mul (not the in-place forms): one per element of the first input
int64_t torch_flops(const std::string& op, const std::vector<std::vector<int64_t>>& dims);

}  // namespace tach::analyze
