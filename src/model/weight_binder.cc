#include "model/weight_binder.h"

#include <cmath>

#include "core/parallel.h"
#include "tach/error.h"

namespace tach::model {

namespace {

std::string prefixes_str(const std::vector<std::string>& prefixes) {
  std::string s;
  for (const auto& p : prefixes) s += (s.empty() ? "" : ", ") + (p.empty() ? std::string("none") : "'" + p + "'");
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Older BERT checkpoints (TF-converted) call LayerNorm's parameters gamma and beta.
std::string legacy_name(const std::string& name) {
  if (ends_with(name, "LayerNorm.weight")) return name.substr(0, name.size() - 6) + "gamma";
  if (ends_with(name, "LayerNorm.bias")) return name.substr(0, name.size() - 4) + "beta";
  return "";
}

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Extras a checkpoint may carry that a sequence classifier or bare encoder does not use.
bool is_known_extra(const std::string& name) {
  return ends_with(name, "position_ids") || ends_with(name, "embeddings.token_type_ids") ||
         name.rfind("cls.", 0) == 0 ||                                                  // BERT pre-training heads
         name.rfind("vocab_", 0) == 0 ||                                                // DistilBERT MLM head
         name.rfind("qa_outputs.", 0) == 0 ||                                           // question answering
         name.find("pooler.") != std::string::npos ||                                   // pooler of a bare BERT
         name.rfind("classifier.", 0) == 0 || name.rfind("pre_classifier.", 0) == 0 ||  // head of a bare model
         name.rfind("lm_head.", 0) == 0 || name.rfind("score.", 0) == 0 ||              // Qwen2 heads of the other task
         name.rfind("head.", 0) == 0 || name.rfind("decoder.", 0) == 0 ||               // ModernBERT's heads
         ends_with(name, "rotary_emb.inv_freq");  // a buffer older checkpoints saved
}

}  // namespace

WeightBinder::WeightBinder(const WeightStore& store, const std::vector<std::string>& prefixes, const std::string& probe,
                           std::string config_source)
    : store_(&store), prefixes_(prefixes), config_source_(std::move(config_source)) {
  bool found = false;
  for (const auto& p : prefixes) {
    if (store.find(p + probe)) {
      prefix_ = p;
      found = true;
      break;
    }
  }
  if (!found)
    throw Error(store.description + ": tensor '" + probe + "' not found under any name prefix (tried " +
                prefixes_str(prefixes) + "); is this checkpoint of the model type config.json says?");
}

WeightBinder WeightBinder::synthetic(uint64_t seed, bool norms_at_zero) {
  WeightBinder b;
  b.synthetic_ = true;
  b.seed_ = seed;
  b.norms_at_zero_ = norms_at_zero;
  return b;
}

void WeightBinder::set_adapter(std::shared_ptr<PeftAdapter> adapter, std::vector<std::string> prefixes,
                               std::string model_name) {
  adapter_ = std::move(adapter);
  adapter_prefixes_ = std::move(prefixes);
  adapter_model_name_ = std::move(model_name);
}

Tensor WeightBinder::bind(const std::string& full_name, const std::string& shown_name, const Shape& shape) {
  Tensor t = bind_base(full_name, shown_name, shape);
  if (!adapter_) return t;
  Tensor merged = adapter_->merged(full_name, t, adapter_prefixes_, adapter_model_name_);
  return merged.defined() ? merged : t;
}

Tensor WeightBinder::bind_base(const std::string& full_name, const std::string& shown_name, const Shape& shape) {
  parameters_ += shape_numel(shape);
  if (synthetic_) {
    dtypes_.insert("f32");
    return synthesize(full_name, shape);
  }
  std::string name = full_name;
  const StoredTensor* t = store_->find(name);
  if (!t) {
    const std::string legacy = legacy_name(full_name);
    if (!legacy.empty() && (t = store_->find(legacy))) name = legacy;
  }
  if (!t)
    throw Error(store_->description + ": missing tensor '" + shown_name + "' (looked for '" + full_name +
                "'; name prefixes tried: " + prefixes_str(prefixes_) + ")");
  if (t->shape != shape)
    throw Error(t->file + ": tensor '" + name + "' has shape " + shape_str(t->shape) + ", " + config_source_ +
                " needs " + shape_str(shape));
  if (!is_floating(t->dtype) || t->dtype == DType::f64)
    throw Error(t->file + ": tensor '" + name + "' is " + std::string(dtype_name(t->dtype)) +
                "; weights must be f32, f16 or bf16");
  used_.insert(name);
  dtypes_.insert(std::string(dtype_name(t->dtype)));
  return t->load();
}

Tensor WeightBinder::take(const std::string& name, const Shape& shape) { return bind(prefix_ + name, name, shape); }

Tensor WeightBinder::take_head(const std::string& name, const Shape& shape) {
  if (adapter_ && adapter_->head_tensor(name)) {
    const SafetensorsEntry* e = adapter_->head_tensor(name);
    if (e->shape != shape)
      throw Error(adapter_->dir() + ": the adapter's '" + name + "' is " + shape_str(e->shape) + ", the model '" +
                  adapter_model_name_ + "' needs " + shape_str(shape) + " (" + config_source_ + ")");
    parameters_ += shape_numel(shape);
    adapter_heads_used_.insert(name);
    if (!synthetic_ && store_->find(name)) used_.insert(name);  // replaced by the adapter's
    return adapter_->load_head(name);
  }
  return bind(name, name, shape);
}

bool WeightBinder::has_head(const std::string& name) const {
  if (adapter_ && adapter_->head_tensor(name)) return true;
  return synthetic_ || store_->find(name) != nullptr;
}

bool WeightBinder::has(const std::string& name) const {
  if (synthetic_) return true;
  const std::string legacy = legacy_name(prefix_ + name);
  return store_->find(prefix_ + name) != nullptr || (!legacy.empty() && store_->find(legacy) != nullptr);
}

bool WeightBinder::holds(const std::string& name, const Shape& shape, bool head) const {
  if (synthetic_) return true;
  if (head && adapter_ && adapter_->head_tensor(name)) return adapter_->head_tensor(name)->shape == shape;
  const std::string full = head ? name : prefix_ + name;
  const StoredTensor* t = store_->find(full);
  if (!t && !head && !legacy_name(full).empty()) t = store_->find(legacy_name(full));
  return t != nullptr && t->shape == shape;
}

std::vector<std::string> WeightBinder::finish(const std::string& architecture, const std::string& checkpoint) const {
  std::vector<std::string> notes;
  if (adapter_) {
    adapter_->check_all_used(adapter_model_name_);
    for (const auto& n : adapter_->modules_to_save_names())
      if (!adapter_heads_used_.count(n))
        throw Error("the adapter in " + adapter_->dir() + " was made for base model '" + adapter_->base_model() +
                    "' and does not fit '" + adapter_model_name_ + "': its tensor '" + n + "' has no place in it");
    notes.push_back(adapter_->describe());
  }
  if (synthetic_) return notes;
  std::vector<std::string> ignored, unexpected;
  for (const auto& n : store_->names()) {
    if (used_.count(n)) continue;
    (is_known_extra(n) ? ignored : unexpected).push_back(n);
  }
  if (!unexpected.empty()) {
    std::string list;
    for (size_t i = 0; i < unexpected.size() && i < 8; ++i) list += "\n  " + unexpected[i];
    if (unexpected.size() > 8) list += "\n  ... and " + std::to_string(unexpected.size() - 8) + " more";
    throw Error(store_->description + ": " + std::to_string(unexpected.size()) +
                " unexpected tensor(s) that the architecture in " + config_source_ + " does not use (name prefix '" +
                prefix_ + "'):" + list);
  }
  if (!architecture.empty()) {  // transformers' words; buffers (position ids, rotary tables) are not weights
    std::string list;
    size_t shown = 0, weights = 0;
    for (const auto& n : ignored) {
      if (ends_with(n, "position_ids") || ends_with(n, "token_type_ids") || ends_with(n, "inv_freq")) continue;
      if (++weights <= 8) list += std::string(shown++ ? ", '" : "'") + n + "'";
    }
    if (weights > 8) list += ", ... (" + std::to_string(weights) + " in all)";
    if (weights > 0)
      notes.push_back("Some weights of the model checkpoint at " + checkpoint + " were not used when initializing " +
                      architecture + ": [" + list + "]");
  } else if (!ignored.empty()) {
    std::string list;
    for (size_t i = 0; i < ignored.size() && i < 4; ++i) list += (i ? ", " : "") + ignored[i];
    if (ignored.size() > 4) list += ", ...";
    notes.push_back("ignored " + std::to_string(ignored.size()) + " tensor(s) this architecture does not use: " + list);
  }
  return notes;
}

std::string WeightBinder::stored_dtypes() const {
  std::string s;
  for (const auto& d : dtypes_) s += (s.empty() ? "" : "+") + d;
  return s;
}

Tensor WeightBinder::synthesize(const std::string& name, const Shape& shape) const {
  Tensor t = Tensor::empty(shape, DType::f32, Device::cpu(), MemoryCategory::weights);
  float* p = t.data<float>();
  const int64_t n = t.numel();
  // LayerNorm (BERT), layer_norm (DistilBERT), input_layernorm / model.norm / q_norm (decoders' RMSNorm).
  const bool norm = name.find("LayerNorm") != std::string::npos || name.find("layer_norm") != std::string::npos ||
                    name.find("layernorm") != std::string::npos || ends_with(name, "norm.weight");
  if (norm) {
    const float v = ends_with(name, "weight") && !norms_at_zero_ ? 1.0f : 0.0f;
    for (int64_t i = 0; i < n; ++i) p[i] = v;
    return t;
  }
  fill_normal(t, 0.02f, seed_, name);
  return t;
}

void fill_normal(Tensor& t, float std, uint64_t seed, const std::string& name) {
  float* p = t.data<float>();
  const int64_t n = t.numel();
  // Chunks seeded by (seed, name, chunk): identical values whatever the thread count.
  constexpr int64_t kChunk = 1 << 14;
  const uint64_t base = seed * 0x9e3779b97f4a7c15ull ^ fnv1a(name);
  core::parallel_for((n + kChunk - 1) / kChunk, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      uint64_t state = base + static_cast<uint64_t>(c) * 0xd1b54a32d192ed03ull;
      const int64_t end = std::min(n, (c + 1) * kChunk);
      for (int64_t i = c * kChunk; i < end; i += 2) {
        // Box-Muller: two normals from two uniforms in (0, 1].
        const double u1 = (double(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
        const double u2 = double(splitmix64(state) >> 11) * 0x1.0p-53;
        const double r = std::sqrt(-2.0 * std::log(u1)) * double(std);
        p[i] = static_cast<float>(r * std::cos(2 * M_PI * u2));
        if (i + 1 < end) p[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2));
      }
    }
  });
}

}  // namespace tach::model
