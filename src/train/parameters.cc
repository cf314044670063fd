#include "train/parameters.h"

#include <cctype>

#include <set>

#include "core/allocator.h"
#include "ops/grad_norm.h"
#include "tach/error.h"

namespace tach::train {

namespace {

// An f32 copy of a host tensor (the conversion runs on the host).
Tensor f32_copy(const Tensor& t, MemoryCategory category) { return t.to(DType::f32, category); }

// QLoRA's quantizer is bitsandbytes' algorithm on the host, run once at set-up: it reads the
// master weight there (itself on the CPU), and its codes and absmax go to the table's device.
std::shared_ptr<const cpu::Nf4Matrix> quantize_on(Device device, const Tensor& weight,
                                                  const std::vector<int64_t>& part_rows) {
  const Tensor host = weight.on(Device::cpu(), MemoryCategory::workspace);
  cpu::Nf4Matrix m = cpu::quantize_nf4_matrix(host.data<float>(), part_rows, weight.size(1));
  for (cpu::Nf4Tensor& part : m.parts)
    for (Tensor* t : {&part.codes, &part.qabsmax, &part.absmax2}) *t = t->on(device, MemoryCategory::weights);
  return std::make_shared<const cpu::Nf4Matrix>(std::move(m));
}

}  // namespace

Parameter& ParameterTable::add(const std::string& name, const Tensor& init) {
  check(!index_.count(name), "parameter '" + name + "' registered twice");
  Parameter p;
  p.name = name;
  p.value = f32_copy(init, MemoryCategory::weights).on(device_, MemoryCategory::weights);
  p.grad = Tensor::zeros(p.value.shape(), DType::f32, device_, MemoryCategory::gradients);
  p.decay = trainer_decays(name);
  index_[name] = entries_.size();
  entries_.push_back(std::move(p));
  return entries_.back();
}

FusedTensor ParameterTable::add_fused(const std::string& fused_name,
                                      const std::vector<std::pair<std::string, Tensor>>& parts) {
  check(!parts.empty(), "fused parameter '" + fused_name + "' has no parts");
  Shape shape = parts.front().second.shape();
  int64_t rows = 0;
  for (const auto& [name, t] : parts) {
    Shape s = t.shape();
    s[0] = shape[0];
    check(s == shape, "fused parameter '" + fused_name + "': part '" + name + "' " + t.describe() +
                          " does not stack with " + shape_str(parts.front().second.shape()));
    rows += t.size(0);
  }
  shape[0] = rows;
  FusedTensor fused{Tensor::empty(shape, DType::f32, device_, MemoryCategory::weights),
                    Tensor::zeros(shape, DType::f32, device_, MemoryCategory::gradients), fused_name, nullptr};
  int64_t row = 0;
  for (const auto& [name, t] : parts) {
    check(!index_.count(name), "parameter '" + name + "' registered twice");
    Tensor f = f32_copy(t, MemoryCategory::workspace);
    Parameter p;
    p.name = name;
    p.value = fused.value.narrow(0, row, t.size(0));
    p.grad = fused.grad.narrow(0, row, t.size(0));
    core::copy_bytes(device_, p.value.raw(), f.device(), f.raw(), f.nbytes());
    p.decay = trainer_decays(name);
    p.fused = fused_name;
    p.fused_row = row;
    row += t.size(0);
    index_[name] = entries_.size();
    entries_.push_back(std::move(p));
  }
  return fused;
}

Parameter& ParameterTable::at(const std::string& name) {
  auto it = index_.find(name);
  check(it != index_.end(), "no parameter named '" + name + "'");
  return entries_[it->second];
}

const Parameter* ParameterTable::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

void ParameterTable::zero_grad() {
  grad_list_.clear();
  for (const auto& p : entries_)
    if (p.grad.defined()) grad_list_.push_back(p.grad);
  ops::zero_grads(grad_list_);
  grad_list_.clear();  // holds no gradient a later freeze releases
}

int64_t ParameterTable::count(bool trainable_only) const {
  int64_t n = 0;
  for (const auto& p : entries_)
    if (!trainable_only || p.trainable) n += p.numel();
  return n;
}

int64_t ParameterTable::quantize_nf4(FusedTensor& fused) {
  std::vector<Parameter*> parts;
  std::vector<int64_t> rows;
  for (auto& p : entries_)
    if (p.fused == fused.name) {
      check(!p.trainable, "NF4: '" + p.name + "' trains; only frozen weights are quantized");
      parts.push_back(&p);
      rows.push_back(p.value.size(0));
    }
  check(!parts.empty() && fused.value.dim() == 2, "NF4: '" + fused.name + "' is not a fused weight matrix");
  fused.nf4 = quantize_on(device_, fused.value, rows);
  for (Parameter* p : parts) {
    p->shape = p->value.shape();
    p->value = Tensor();
    p->grad = Tensor();
    p->nf4 = fused.nf4;
  }
  fused.value = Tensor();
  fused.grad = Tensor();
  return int64_t(parts.size());
}

void ParameterTable::quantize_nf4(Parameter& p) {
  check(!p.trainable, "NF4: '" + p.name + "' trains; only frozen weights are quantized");
  check(p.value.dim() == 2 && p.fused.empty(), "NF4: '" + p.name + "' is not a weight matrix of its own");
  p.nf4 = quantize_on(device_, p.value, {p.value.size(0)});
  p.shape = p.value.shape();
  p.value = Tensor();
  p.grad = Tensor();
}

int64_t ParameterTable::nf4_bytes() const {
  std::set<const cpu::Nf4Matrix*> seen;
  int64_t n = 0;
  for (const auto& p : entries_)
    if (p.nf4 && seen.insert(p.nf4.get()).second) n += p.nf4->bytes();
  return n;
}

bool any_part_trainable(const ParameterTable& table, const FusedTensor& fused) {
  if (!fused.grad.defined()) return false;
  const char* begin = static_cast<const char*>(fused.grad.raw());
  const char* end = begin + fused.grad.nbytes();
  for (const auto& p : table.entries()) {
    if (!p.trainable || !p.grad.defined()) continue;
    const char* at = static_cast<const char*>(p.grad.raw());
    if (at >= begin && at < end) return true;
  }
  return false;
}

bool trainer_decays(const std::string& name) {
  // Trainer.get_decay_parameter_names: no decay where the lower-cased name matches "bias",
  // "layernorm", "rmsnorm", "(^|\.)norm($|\.)" or "_norm($|\.)": biases, BERT's "LayerNorm",
  // DistilBERT's "sa_layer_norm", Qwen2's "input_layernorm" and final "norm".
  std::string n = name;
  for (char& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (n.find("bias") != std::string::npos || n.find("layernorm") != std::string::npos ||
      n.find("rmsnorm") != std::string::npos)
    return false;
  for (size_t at = n.find("norm"); at != std::string::npos; at = n.find("norm", at + 1)) {
    const size_t after = at + 4;
    const bool ends = after == n.size() || n[after] == '.';
    if (ends && (at == 0 || n[at - 1] == '.' || n[at - 1] == '_')) return false;
  }
  return true;
}

}  // namespace tach::train
