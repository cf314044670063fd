#include "train/lora.h"

#include "model/family.h"

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "core/allocator.h"
#include "model/peft_adapter.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "ops/dropout.h"
#include "ops/lora.h"
#include "tach/error.h"
#include "tach/plain_number.h"
#include "train/trainable_model.h"

namespace tach::train {

namespace {

std::string last_name(const std::string& module) {
  const size_t dot = module.rfind('.');
  return dot == std::string::npos ? module : module.substr(dot + 1);
}

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// PEFT's lora_A init, nn.init.kaiming_uniform_(A, a=sqrt(5)): U(-1/sqrt(in), 1/sqrt(in)), drawn
// here from (seed, name) so that it does not depend on the order adapters are made in. Drawn in
// host memory; the parameter table copies it to the model's device.
Tensor kaiming_uniform(int64_t r, int64_t in, uint64_t seed, const std::string& name) {
  Tensor t = Tensor::empty({r, in}, DType::f32);
  const double bound = 1.0 / std::sqrt(double(in));
  uint64_t h = seed;
  for (char c : name) h = mix(h ^ uint64_t(uint8_t(c)));
  float* p = t.data<float>();
  for (int64_t i = 0; i < r * in; ++i) {
    const double u = double(mix(h + uint64_t(i)) >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    p[i] = float((2.0 * u - 1.0) * bound);
  }
  return t;
}

// Keeps its gradient: an adapter, or a parameter of a module to save.
// PEFT's rule for modules_to_save: the parameter sits in a module whose name ends with one of
// them, at any depth ("classifier" keeps DistilBERT's "pre_classifier", and RoBERTa's
// "classifier.dense" and "classifier.out_proj", which PEFT wraps whole as "classifier").
bool stays_trainable(const std::string& name, const LoraOptions& o) {
  if (name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos) return true;
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    const std::string module = name.substr(0, dot);  // every enclosing module, outermost first
    for (const auto& m : o.modules_to_save)
      if (ends_with(module, m)) return true;
  }
  return false;
}

// Dropout keys of the adapters: a site range of their own, past the families' sites.
constexpr int64_t kLoraSite = 1 << 20;

ops::LoraShape shape_of(const LoraAdapter& a, const LoraSet& set, int64_t M, const DropoutRates& d, int64_t index) {
  ops::LoraShape s;
  s.M = M, s.K = a.in, s.N = a.out, s.r = set.options.r, s.scale = set.scale;
  s.dropout = d.lora;
  s.dropout_key = ops::dropout_key(d.seed, d.micro_batch, kLoraSite + index);
  return s;
}

// Sizes adapter i's saved xa for M rows (adapters see different row counts: BERT's pooler sees
// one row per sequence) and the shared scratch for the widest input so far, on the device of the
// adapter's input.
void prepare(LoraActivations& saved, const LoraSet& set, int64_t i, int64_t M, Device device) {
  if (saved.xa.size() != set.adapters.size()) saved.xa.assign(set.adapters.size(), Tensor());
  const int64_t r = set.options.r, K = set.adapters[size_t(i)].in;
  Tensor& xa = saved.xa[size_t(i)];
  if (!xa.defined() || xa.size(0) != M || !(xa.device() == device))
    xa = Tensor::empty({M, r}, DType::f32, device, MemoryCategory::activations);
  const int64_t need = M * K + M * r;
  if (!saved.scratch.defined() || saved.scratch.numel() < need || !(saved.scratch.device() == device))
    saved.scratch = Tensor::empty({need}, DType::f32, device, MemoryCategory::workspace);
}

}  // namespace

void LoraSet::forward(const std::vector<int64_t>& ids, const Tensor& y, const Tensor& x, LoraActivations& saved,
                      const DropoutRates& dropout) const {
  const int64_t M = x.size(0);
  for (int64_t i : ids) {
    prepare(saved, *this, i, M, x.device());
    const LoraAdapter& a = adapters[size_t(i)];
    ops::lora_forward_train(y.narrow(1, a.row0, a.out), saved.xa[size_t(i)], x, a.A->value, a.B->value,
                            shape_of(a, *this, M, dropout, i), saved.scratch);
  }
}

void LoraSet::backward(const std::vector<int64_t>& ids, const Tensor& dx, const Tensor& dy, const Tensor& x,
                       LoraActivations& saved, const DropoutRates& dropout) const {
  const int64_t M = x.size(0);
  for (int64_t i : ids) {
    const LoraAdapter& a = adapters[size_t(i)];
    ops::lora_backward(dx, a.A->grad, a.B->grad, dy.narrow(1, a.row0, a.out), x, saved.xa[size_t(i)], a.A->value,
                       a.B->value, shape_of(a, *this, M, dropout, i), saved.scratch);
  }
}

void attach_lora(TrainableModel& model, const LoraOptions& o, uint64_t init_seed) {
  check(o.r >= 1, "LoRA: the rank r must be at least 1, got " + std::to_string(o.r));
  check(std::isfinite(o.alpha) && o.alpha > 0, "LoRA: lora_alpha must be positive, got " + plain_number(o.alpha));
  check(o.dropout >= 0 && o.dropout < 1, "LoRA: lora_dropout must be in [0, 1), got " + plain_number(o.dropout));
  check(!o.target_modules.empty(), "LoRA: no target modules");
  auto set = std::make_unique<LoraSet>();
  set->options = o;
  set->scale = o.alpha / float(o.r);
  std::vector<LinearSite> sites = model.linear_sites();
  std::set<std::string> names, matched;
  for (const auto& s : sites) names.insert(last_name(s.module));
  for (const auto& t : o.target_modules)
    if (!names.count(t)) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw Error("LoRA: target module '" + t + "' is not a linear of this model; its linears are: " + list);
    }
  // Freeze first, so that the adapters added below keep their gradients.
  for (auto& p : model.params.entries())
    if (!stays_trainable(p.name, o)) {
      p.trainable = false;
      p.grad = Tensor();
    }
  for (auto& s : sites) {
    bool wanted = false;
    for (const auto& t : o.target_modules) wanted = wanted || last_name(s.module) == t;
    if (!wanted) continue;
    LoraAdapter a;
    a.module = s.module;
    a.in = s.in, a.out = s.out, a.row0 = s.row0;
    a.A = &model.params.add(s.module + ".lora_A.weight", kaiming_uniform(o.r, s.in, init_seed, s.module));
    a.B = &model.params.add(s.module + ".lora_B.weight", Tensor::zeros({s.out, o.r}, DType::f32));
    a.A->decay = a.B->decay = true;
    s.adapters->push_back(int64_t(set->adapters.size()));
    set->adapters.push_back(a);
  }
  model.release_frozen_grads();
  model.lora = std::move(set);
}

void load_peft_adapter_weights(TrainableModel& model, const std::string& dir) {
  check(model.lora != nullptr, dir + ": loading an adapter needs a model set up for LoRA");
  const std::string path = dir + "/adapter_model.safetensors";
  const auto file = model::SafetensorsFile::open(path);
  const std::string prefix = "base_model.model.";
  for (const auto& e : file.header().entries) {
    std::string name = e.name.rfind(prefix, 0) == 0 ? e.name.substr(prefix.size()) : e.name;
    if (auto at = name.find("modules_to_save.default."); at != std::string::npos) name.erase(at, 24);
    check(model.params.find(name) != nullptr, path + ": tensor '" + e.name + "' has no place in this model (" +
                                                  model.architecture() +
                                                  " with LoRA r=" + std::to_string(model.lora->options.r) + ")");
    Parameter* p = &model.params.at(name);
    check(e.shape == p->value.shape(),
          path + ": '" + e.name + "' is " + shape_str(e.shape) + ", the model's is " + shape_str(p->value.shape()));
    const Tensor t = file.tensor(e).to(DType::f32);
    core::copy_bytes(p->value.device(), p->value.raw(), t.device(), t.raw(), p->value.nbytes());
  }
}

LoraOptions lora_options_of(const model::PeftAdapter& a) {
  check(!a.rslora(), a.dir() +
                         ": an rsLoRA adapter (use_rslora); tach trains adapters scaled by alpha / r (it can "
                         "still merge this one: tach classify, eval or bench --adapter, tach merge)");
  check(!a.has_patterns(), a.dir() +
                               ": rank_pattern or alpha_pattern gives modules their own rank or alpha; tach "
                               "trains one rank and alpha for all (it can still merge this adapter)");
  LoraOptions o;
  o.r = a.r();
  o.alpha = a.alpha();
  o.dropout = a.lora_dropout();
  o.target_modules = a.target_modules();
  o.modules_to_save = a.modules_to_save();
  check(!o.target_modules.empty(), a.dir() + "/adapter_config.json: target_modules is empty");
  return o;
}

std::vector<std::string> default_lora_targets(const model::ModelFamily& family) { return family.lora_targets; }

std::vector<std::string> default_modules_to_save(const model::ModelFamily& family, Head head) {
  switch (head) {
    case Head::token_classification: return {"classifier", "score"};  // PEFT's TOKEN_CLS
    case Head::question_answering:  // PEFT's QUESTION_ANS adds qa_outputs to the list; a head named
                                    // otherwise (ModernBERT's classifier) is named, or it would not train
      if (family.head_names.qa_outputs != "qa_outputs") return {family.head_names.qa_outputs, "qa_outputs"};
      return {"qa_outputs"};
    case Head::masked_lm: return {};  // PEFT has no masked-LM task: no module saved, the head stays as it is
    default: return family.head_modules;
  }
}

void save_peft_adapter(const std::string& dir, const TrainableModel& m, const std::string& base_model) {
  check(m.lora != nullptr, "save_peft_adapter: the model has no LoRA adapters");
  const LoraOptions& o = m.lora->options;
  nlohmann::json config = {{"peft_type", "LORA"},
                           {"task_type", m.head() == Head::token_classification ? nlohmann::json("TOKEN_CLS")
                                         : m.head() == Head::question_answering ? nlohmann::json("QUESTION_ANS")
                                         : m.head() == Head::masked_lm          ? nlohmann::json(nullptr)
                                                                                : nlohmann::json("SEQ_CLS")},
                           {"base_model_name_or_path", base_model},
                           {"r", o.r},
                           {"lora_alpha", o.alpha},
                           {"lora_dropout", o.dropout},
                           {"target_modules", o.target_modules},
                           {"modules_to_save", o.modules_to_save},
                           {"bias", "none"},
                           {"fan_in_fan_out", false},
                           {"inference_mode", true},
                           {"init_lora_weights", true},
                           {"use_rslora", false},
                           {"use_dora", false},
                           {"layers_to_transform", nullptr},
                           {"layers_pattern", nullptr},
                           {"rank_pattern", nlohmann::json::object()},
                           {"alpha_pattern", nlohmann::json::object()},
                           {"revision", nullptr}};
  model::write_directory_atomically(dir, [&](const std::string& tmp) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const auto& p : m.params.entries())
      if (p.trainable) tensors.emplace_back("base_model.model." + p.name, p.value.contiguous());
    // The head's labels ride in the file's metadata (peft ignores it), so that tach classify
    // --adapter names the classes this adapter was trained on.
    model::write_safetensors(tmp + "/adapter_model.safetensors", tensors,
                             {{"format", "pt"}, {model::kAdapterLabelsKey, nlohmann::json(m.labels()).dump()}});
    model::write_file_atomically(tmp + "/adapter_config.json", config.dump(2) + "\n");
  });
}

}  // namespace tach::train
