#include "analyze/op_cost.h"

#include <algorithm>
#include <cctype>

namespace tach::analyze {
namespace {

int64_t elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

// numpy's broadcast of two shapes; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

bool one_of(const std::string& op, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (op == n) return true;
  return false;
}

bool attention(const std::string& op) {
  return one_of(op, {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                     "aten::_scaled_dot_product_efficient_attention", "aten::_scaled_dot_product_cudnn_attention",
                     "aten::_scaled_dot_product_flash_attention_for_cpu"});
}
bool binary_elementwise(const std::string& op) {
  return one_of(op, {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::add_", "aten::sub_", "aten::mul_",
                     "aten::div_", "aten::masked_fill", "aten::masked_fill_"});
}
bool unary_elementwise(const std::string& op) {
  return one_of(
      op, {"aten::relu", "aten::relu_", "aten::gelu", "aten::gelu_", "aten::silu", "aten::silu_", "aten::sigmoid",
           "aten::tanh", "aten::exp", "aten::neg", "aten::clone", "aten::copy_", "aten::softmax", "aten::_softmax",
           "aten::log_softmax", "aten::_log_softmax", "aten::layer_norm", "aten::native_layer_norm"});
}

// A tensor input: its shape and element size (a scalar or list input has none).
struct Input {
  std::vector<int64_t> shape;
  int64_t element = 0;
  bool tensor() const { return element > 0; }
  int64_t bytes() const { return tensor() ? std::max<int64_t>(0, elements(shape)) * element : 0; }
};

std::optional<OpCost> gemm(const std::vector<Input>& in, size_t a, size_t rank, bool bias) {
  if (in.size() < a + 2 || !in[a].tensor() || !in[a + 1].tensor()) return std::nullopt;
  const auto &x = in[a].shape, &w = in[a + 1].shape;
  if (x.size() != rank || w.size() != rank || x.back() != w[rank - 2]) return std::nullopt;
  std::vector<int64_t> out = x;
  out.back() = w.back();
  OpCost c;
  c.flops = 2 * elements(x) * w.back();
  c.bytes = in[a].bytes() + in[a + 1].bytes() + elements(out) * in[a].element;
  if (bias && in[0].tensor()) c.bytes += in[0].bytes();
  return c;
}

}  // namespace

int element_bytes(const std::string& t) {
  if (t == "double" || t == "long int" || t == "long" || t == "c10::complex<float>" || t == "unsigned long") return 8;
  if (t == "float" || t == "int" || t == "unsigned int") return 4;
  if (t == "c10::BFloat16" || t == "c10::Half" || t == "short int" || t == "short") return 2;
  if (t == "bool" || t == "unsigned char" || t == "signed char" || t.rfind("c10::Float8", 0) == 0) return 1;
  return 0;
}

std::optional<std::vector<std::vector<int64_t>>> parse_shapes(const std::string& text) {
  std::vector<std::vector<int64_t>> out;
  size_t i = 0;
  auto ws = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  ws();
  if (i >= text.size() || text[i] != '[') return std::nullopt;
  ++i;
  ws();
  if (i < text.size() && text[i] == ']') return out;
  while (i < text.size()) {
    ws();
    if (text[i] != '[') return std::nullopt;
    ++i;
    std::vector<int64_t> shape;
    ws();
    while (i < text.size() && text[i] != ']') {
      bool neg = false;
      if (text[i] == '-') neg = true, ++i;
      if (i >= text.size() || !std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
      int64_t v = 0;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        if (v > (INT64_MAX - 9) / 10) return std::nullopt;
        v = v * 10 + (text[i++] - '0');
      }
      shape.push_back(neg ? -v : v);
      ws();
      if (i < text.size() && text[i] == ',') ++i, ws();
    }
    if (i >= text.size()) return std::nullopt;
    ++i;  // ']'
    out.push_back(std::move(shape));
    ws();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == ']') return out;
    return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::string> parse_types(const std::string& text) {
  std::vector<std::string> out;
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return out;
  std::string cur;
  int depth = 0;  // "c10::complex<float>" and "std::optional<...>" hold no comma, but be safe
  for (size_t i = 1; i + 1 < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') ++depth;
    if (c == '>') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    if (!(cur.empty() && c == ' ')) cur += c;
  }
  out.push_back(cur);
  return out;
}

bool has_cost_model(const std::string& op) {
  return one_of(op, {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear"}) || attention(op) ||
         binary_elementwise(op) || unary_elementwise(op);
}

std::optional<OpCost> op_cost(const std::string& op, const std::string& shapes, const std::string& types) {
  if (!has_cost_model(op)) return std::nullopt;
  const auto dims = parse_shapes(shapes);
  if (!dims) return std::nullopt;
  const std::vector<std::string> ts = parse_types(types);
  std::vector<Input> in(dims->size());
  for (size_t i = 0; i < in.size(); ++i) {
    in[i].shape = (*dims)[i];
    // A tensor has a dtype and a shape; a 0-d tensor ([] with a dtype) is one element.
    in[i].element = i < ts.size() ? element_bytes(ts[i]) : 0;
    if (elements(in[i].shape) < 0) return std::nullopt;
  }
  if (op == "aten::mm") return gemm(in, 0, 2, false);
  if (op == "aten::addmm") return gemm(in, 1, 2, true);
  if (op == "aten::bmm") return gemm(in, 0, 3, false);
  if (op == "aten::baddbmm") return gemm(in, 1, 3, true);
  if (op == "aten::linear") {
    if (in.size() < 2 || !in[0].tensor() || !in[1].tensor() || in[0].shape.empty() || in[1].shape.size() != 2 ||
        in[0].shape.back() != in[1].shape[1])
      return std::nullopt;
    const int64_t k = in[1].shape[1], n = in[1].shape[0], rows = k > 0 ? elements(in[0].shape) / k : 0;
    const bool bias = in.size() > 2 && in[2].tensor() && !in[2].shape.empty();
    OpCost c;
    c.flops = 2 * rows * k * n + (bias ? rows * n : 0);
    c.bytes = in[0].bytes() + in[1].bytes() + (bias ? in[2].bytes() : 0) + rows * n * in[0].element;
    return c;
  }
  if (attention(op)) {
    if (in.size() < 3 || !in[0].tensor() || !in[1].tensor() || !in[2].tensor()) return std::nullopt;
    const auto &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
    if (q.size() != 4 || k.size() != 4 || v.size() != 4 || q[3] != k[3]) return std::nullopt;
    const int64_t B = q[0], H = q[1], T = q[2], S = k[2];
    OpCost c;
    c.flops = 2 * B * H * T * S * (q[3] + v[3]);
    c.bytes = in[0].bytes() + in[1].bytes() + in[2].bytes() + B * H * T * v[3] * in[0].element;
    return c;
  }
  const bool binary = binary_elementwise(op);
  const bool unary = unary_elementwise(op);
  if (!binary && !unary) return std::nullopt;
  if (in.empty() || !in[0].tensor()) return std::nullopt;
  std::vector<int64_t> out = in[0].shape;
  int64_t read = 0;
  const size_t operands = binary ? in.size() : 1;
  for (size_t i = 0; i < operands; ++i) {
    if (!in[i].tensor()) continue;
    read += in[i].bytes();
    const auto b = broadcast(out, in[i].shape);
    if (!b) return std::nullopt;
    out = *b;
  }
  const int64_t n = elements(out);
  OpCost c;
  // copy_(self, src): src read, self written; an in-place op writes its first input's bytes.
  if (op == "aten::copy_") {
    if (in.size() < 2 || !in[1].tensor()) return std::nullopt;
    c.bytes = in[1].bytes() + in[0].bytes();
    c.flops = 0;
    return c;
  }
  c.bytes = read + n * in[0].element;
  c.flops = n;
  if (one_of(op, {"aten::softmax", "aten::_softmax", "aten::log_softmax", "aten::_log_softmax"})) c.flops = 5 * n;
  if (one_of(op, {"aten::layer_norm", "aten::native_layer_norm"})) {
    c.flops = 8 * n;
    for (size_t i = 1; i < in.size(); ++i) c.bytes += in[i].bytes();  // weight and bias
  }
  if (op == "aten::clone") c.flops = 0;
  return c;
}

Bound roofline_bound(int64_t flops, int64_t bytes, double peak_flops, double bytes_per_s) {
  Bound b;
  b.intensity = bytes > 0 ? double(flops) / double(bytes) : 0;
  b.ridge = bytes_per_s > 0 ? peak_flops / bytes_per_s : 0;
  b.memory_bound = b.intensity < b.ridge;
  b.attainable_flops = std::min(peak_flops, bytes_per_s * b.intensity);
  return b;
}

}  // namespace tach::analyze
