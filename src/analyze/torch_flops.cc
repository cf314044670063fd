#include "analyze/torch_flops.h"

namespace tach::analyze {
namespace {

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0) return 0;
    n *= d;
  }
  return n;
}

// 2 × (elements of a) × (last dimension of b): a [.., m, k] times b [.., k, n].
int64_t matmul_flops(const std::vector<int64_t>& a, const std::vector<int64_t>& b, size_t rank) {
  if (a.size() != rank || b.size() != rank || b.back() < 0) return 0;
  return 2 * elements(a) * b.back();
}

}  // namespace

int64_t torch_flops(const std::string& op, const std::vector<std::vector<int64_t>>& dims) {
  if (op == "aten::mm" && dims.size() >= 2) return matmul_flops(dims[0], dims[1], 2);
  if (op == "aten::addmm" && dims.size() >= 3) return matmul_flops(dims[1], dims[2], 2);
  if (op == "aten::bmm" && dims.size() >= 2) return matmul_flops(dims[0], dims[1], 3);
  if (op == "aten::baddbmm" && dims.size() >= 3) return matmul_flops(dims[1], dims[2], 3);
  if ((op == "aten::add" || op == "aten::mul") && !dims.empty()) return elements(dims[0]);
  return 0;
}

}  // namespace tach::analyze
