#include "model/peft_adapter.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cpu/gemm.h"
#include "model/config.h"
#include "tach/error.h"
#include "tach/plain_number.h"

namespace tach::model {

namespace {

using json = nlohmann::json;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

std::vector<std::string> string_list(const json& v, const std::string& key, const std::string& source) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_string()) {
    // peft also accepts one regular expression as target_modules; tach matches module names.
    throw Error(source + ": \"" + key + "\" is a regular expression (" + v.get<std::string>() +
                "); tach reads adapters whose " + key + " is a list of module names");
  }
  if (!v.is_array()) throw Error(source + ": \"" + key + "\" must be a list of names");
  for (const auto& e : v) {
    if (!e.is_string()) throw Error(source + ": \"" + key + "\" must be a list of names");
    out.push_back(e.get<std::string>());
  }
  return out;
}

// peft's get_pattern_key: a pattern key applies to a module whose name ends in it at a dot.
bool pattern_matches(const std::string& key, const std::string& module) {
  try {
    return std::regex_match(module, std::regex("(.*\\.)?(" + key + ")"));
  } catch (const std::regex_error&) { return module == key || ends_with(module, "." + key); }
}

}  // namespace

std::shared_ptr<PeftAdapter> PeftAdapter::open(const std::string& dir) {
  auto a = std::make_shared<PeftAdapter>();
  a->dir_ = dir;
  const std::string config_path = (std::filesystem::path(dir) / "adapter_config.json").string();
  if (!std::filesystem::exists(config_path))
    throw Error(config_path + ": cannot open (is this a peft adapter directory?)");
  const json c = read_json_file(config_path);
  if (!c.is_object()) throw Error(config_path + ": not a JSON object");
  const std::string type = c.value("peft_type", std::string());
  check(type == "LORA", config_path + ": peft_type is '" + type + "'; tach reads LoRA adapters (peft_type LORA)");
  check(c.contains("r") && c["r"].is_number_integer() && c["r"].get<int64_t>() >= 1,
        config_path + ": \"r\" must be an integer of at least 1");
  a->r_ = c["r"].get<int64_t>();
  check(c.contains("lora_alpha") && c["lora_alpha"].is_number(), config_path + ": \"lora_alpha\" is missing");
  a->alpha_ = c["lora_alpha"].get<float>();
  check(std::isfinite(a->alpha_) && a->alpha_ > 0,
        config_path + ": \"lora_alpha\" must be positive, got " + plain_number(a->alpha_));
  a->dropout_ = c.value("lora_dropout", 0.0f);
  a->rslora_ = c.value("use_rslora", false);
  check(!c.value("use_dora", false), config_path + ": a DoRA adapter (use_dora true); tach merges plain LoRA");
  check(!c.value("fan_in_fan_out", false),
        config_path + ": fan_in_fan_out is true (GPT-2's Conv1D layout); tach's models use nn.Linear");
  const json bias = c.value("bias", json("none"));
  check(bias.is_string() && bias.get<std::string>() == "none",
        config_path + ": \"bias\" is " + bias.dump() + "; tach reads adapters with bias \"none\"");
  if (c.contains("base_model_name_or_path") && c["base_model_name_or_path"].is_string())
    a->base_model_ = c["base_model_name_or_path"].get<std::string>();
  a->target_modules_ = string_list(c.value("target_modules", json()), "target_modules", config_path);
  a->modules_to_save_ = string_list(c.value("modules_to_save", json()), "modules_to_save", config_path);
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    const json p = c.value(key, json::object());
    if (p.is_null()) continue;
    check(p.is_object(), config_path + ": \"" + std::string(key) + "\" must be an object");
    for (auto it = p.begin(); it != p.end(); ++it) {
      check(it.value().is_number(), config_path + ": \"" + std::string(key) + "\"." + it.key() + " must be a number");
      if (std::string(key) == "rank_pattern") a->rank_pattern_[it.key()] = it.value().get<int64_t>();
      else a->alpha_pattern_[it.key()] = it.value().get<float>();
    }
  }

  const std::string path = (std::filesystem::path(dir) / "adapter_model.safetensors").string();
  check(std::filesystem::exists(path),
        path + ": not found" +
            (std::filesystem::exists(std::filesystem::path(dir) / "adapter_model.bin")
                 ? " (this adapter is saved as adapter_model.bin, a pickle, which tach does not read; save it "
                   "with safe_serialization=True)"
                 : ""));
  a->file_ = std::make_unique<SafetensorsFile>(SafetensorsFile::open(path));
  if (auto it = a->file_->header().metadata.find(kAdapterLabelsKey); it != a->file_->header().metadata.end()) {
    try {
      for (const auto& l : json::parse(it->second)) a->id2label_.push_back(l.get<std::string>());
    } catch (const json::exception& e) {
      throw Error(path + ": metadata \"" + std::string(kAdapterLabelsKey) + "\" is not a JSON list of names");
    }
  }
  const std::string root = "base_model.model.";
  for (const auto& e : a->file_->header().entries) {
    check(is_floating(e.dtype) && e.dtype != DType::f64,
          path + ": tensor '" + e.name + "' is " + std::string(dtype_name(e.dtype)) + "; expected f32, f16 or bf16");
    std::string name = starts_with(e.name, root) ? e.name.substr(root.size()) : e.name;
    if (auto p = name.find("modules_to_save.default."); p != std::string::npos) name.erase(p, 24);
    check(name.find("lora_embedding_") == std::string::npos && name.find("lora_magnitude") == std::string::npos,
          path + ": tensor '" + e.name + "': adapters on embeddings and DoRA magnitudes are not read by tach");
    for (const char* part : {".lora_A.weight", ".lora_B.weight"}) {
      if (!ends_with(name, part)) continue;
      Pair& pr = a->pairs_[name.substr(0, name.size() - std::string(part).size())];
      pr.module = name.substr(0, name.size() - std::string(part).size());
      (std::string(part) == ".lora_A.weight" ? pr.A : pr.B) = &e;
      name.clear();
    }
    if (name.empty()) continue;
    check(name.find("lora_") == std::string::npos,
          path + ": tensor '" + e.name +
              "' is a LoRA tensor tach does not know (lora_A.weight and lora_B.weight are read)");
    a->full_[name] = &e;
  }
  check(!a->pairs_.empty() || !a->full_.empty(), path + ": holds no tensors");
  for (auto& [module, pr] : a->pairs_) {
    check(pr.A && pr.B,
          path + ": '" + module + "' has lora_" + (pr.A ? "A" : "B") + " but no lora_" + (pr.A ? "B" : "A"));
    check(pr.A->shape.size() == 2 && pr.B->shape.size() == 2 && pr.A->shape[0] == pr.B->shape[1],
          path + ": '" + module + "': lora_A " + shape_str(pr.A->shape) + " and lora_B " + shape_str(pr.B->shape) +
              " do not chain (A is [r, in], B is [out, r])");
    pr.scale = a->scale_for(module, pr.A->shape[0]);
  }
  return a;
}

float PeftAdapter::scale_for(const std::string& module, int64_t rank) const {
  int64_t r = r_;
  for (const auto& [k, v] : rank_pattern_)
    if (pattern_matches(k, module)) {
      r = v;
      break;
    }
  float alpha = alpha_;
  for (const auto& [k, v] : alpha_pattern_)
    if (pattern_matches(k, module)) {
      alpha = v;
      break;
    }
  check(r == rank, dir_ + ": '" + module + "' has rank " + std::to_string(rank) + " in adapter_model.safetensors but " +
                       std::to_string(r) + " in adapter_config.json");
  return rslora_ ? alpha / std::sqrt(float(r)) : alpha / float(r);
}

const SafetensorsEntry* PeftAdapter::head_tensor(const std::string& name) const {
  auto it = full_.find(name);
  return it == full_.end() ? nullptr : it->second;
}

Tensor PeftAdapter::load_head(const std::string& name) const {
  const SafetensorsEntry* e = head_tensor(name);
  check(e != nullptr, dir_ + ": the adapter has no tensor '" + name + "'");
  return file_->tensor(*e).to(DType::f32, MemoryCategory::weights);
}

std::vector<std::string> PeftAdapter::modules_to_save_names() const {
  std::vector<std::string> names;
  for (const auto& [n, e] : full_) names.push_back(n);
  return names;
}

int64_t PeftAdapter::head_rows(const std::string& name) const {
  const SafetensorsEntry* e = head_tensor(name);
  return e && !e->shape.empty() ? e->shape[0] : 0;
}

const PeftAdapter::Pair* PeftAdapter::find_pair(const std::string& tensor_name,
                                                const std::vector<std::string>& prefixes) const {
  if (!ends_with(tensor_name, ".weight")) return nullptr;
  const std::string module = tensor_name.substr(0, tensor_name.size() - 7);
  // The adapter names modules as the model peft wrapped (a task model: "distilbert.…"); the
  // checkpoint may be the bare base model ("transformer.…"), or the other way round.
  std::vector<std::string> candidates{module};
  for (const auto& p : prefixes) {
    if (p.empty()) continue;
    candidates.push_back(p + module);
    if (starts_with(module, p)) candidates.push_back(module.substr(p.size()));
  }
  for (const auto& c : candidates)
    if (auto it = pairs_.find(c); it != pairs_.end()) return &it->second;
  return nullptr;
}

Tensor PeftAdapter::merged(const std::string& tensor_name, const Tensor& weight,
                           const std::vector<std::string>& prefixes, const std::string& model_name) {
  const Pair* pr = find_pair(tensor_name, prefixes);
  if (!pr) return Tensor();
  const int64_t out = pr->B->shape[0], r = pr->A->shape[0], in = pr->A->shape[1];
  if (weight.dim() != 2 || weight.size(0) != out || weight.size(1) != in)
    throw Error("the adapter in " + dir_ + " was made for base model '" + base_model_ + "' and does not fit '" +
                model_name + "': '" + pr->module + "' adapts a [" + std::to_string(out) + ", " + std::to_string(in) +
                "] weight, but " + tensor_name + " is " + shape_str(weight.shape()));
  Tensor w = weight.to(DType::f32, MemoryCategory::weights);
  const Tensor A = file_->tensor(*pr->A).to(DType::f32);  // [r, in]
  const Tensor B = file_->tensor(*pr->B).to(DType::f32);  // [out, r]
  // W[out, in] += scale · B[out, r] · A[r, in]
  cpu::sgemm(cpu::default_gemm_backend(), false, false, out, in, r, pr->scale, B.data<float>(), r, A.data<float>(), in,
             1.0f, w.data<float>(), in);
  used_.insert(pr->module);
  return w;
}

void PeftAdapter::check_all_used(const std::string& model_name) const {
  std::vector<std::string> unused;
  for (const auto& [m, pr] : pairs_)
    if (!used_.count(m)) unused.push_back(m);
  if (unused.empty()) return;
  std::string list;
  for (size_t i = 0; i < unused.size() && i < 4; ++i) list += (i ? ", " : "") + unused[i];
  if (unused.size() > 4) list += ", and " + std::to_string(unused.size() - 4) + " more";
  throw Error("the adapter in " + dir_ + " was made for base model '" + base_model_ + "' and does not fit '" +
              model_name + "': " + std::to_string(unused.size()) + " adapted module(s) are not in it: " + list);
}

std::string PeftAdapter::describe() const {
  std::string heads;
  for (const auto& [n, e] : full_) heads += (heads.empty() ? "" : ", ") + n;
  std::ostringstream s;
  s << "LoRA adapter " << dir_ << " (r=" << r_ << ", alpha=" << alpha_ << (rslora_ ? ", rsLoRA" : "") << ", "
    << pairs_.size() << " linears" << (heads.empty() ? "" : "; replaces " + heads) << ", base '" << base_model_
    << "') merged into the weights at load (W + scale·B·A, f32)";
  return s.str();
}

std::vector<std::string> labels_with_adapter(const PeftAdapter& adapter, const std::string& head_name,
                                             const std::vector<std::string>& config_labels) {
  const int64_t rows = adapter.head_rows(head_name);
  if (rows == 0) return config_labels;
  if (int64_t(adapter.id2label().size()) == rows) return adapter.id2label();
  if (int64_t(config_labels.size()) == rows) return config_labels;
  std::vector<std::string> labels;
  for (int64_t i = 0; i < rows; ++i) labels.push_back("LABEL_" + std::to_string(i));
  return labels;
}

}  // namespace tach::model
