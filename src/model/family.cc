#include "model/family.h"

#include <filesystem>
#include <optional>

#include "model/config.h"
#include "model/embedding_model.h"
#include "model/encoder_model.h"
#include "model/presets.h"
#include "model/qwen2_model.h"
#include "tach/error.h"

namespace tach::model {

int64_t ArchitectureSummary::layer_params() const {
  if (decoder)  // q, k, v with bias, o, gate/up/down, two RMSNorms
    return C * H * D + H * D + 2 * (C * KVH * D + KVH * D) + H * D * C + 3 * C * I + 2 * C;
  return 4 * C * C + 4 * C + 2 * C * I + I + C + 4 * C;  // q k v o with bias, FFN, two LayerNorms
}

int64_t ArchitectureSummary::parameters() const {
  if (decoder) return V * C + L * layer_params() + C + (tied ? 0 : V * C) + labels * C;
  const int64_t p = V * C + P * C + Tt * C + 2 * C + L * layer_params();
  return p + C * C + C + labels * C + labels;  // pooler / pre_classifier, classifier
}

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {
      {"BERT / DistilBERT encoders", {"bert", "distilbert"}, encoder_preset_list,
       [](const std::string& preset) { return preset_config(preset).config.model_type; }, load_encoder,
       summarize_encoder},
      {"Qwen2 decoders", {"qwen2"}, qwen2_preset_list, [](const std::string&) { return std::string("qwen2"); },
       load_qwen2, summarize_qwen2},
  };
  return families;
}

const ModelFamily& model_family(const std::string& model_type) {
  std::string known;
  for (const auto& f : model_families())
    for (const auto& t : f.model_types) {
      if (t == model_type) return f;
      known += (known.empty() ? "" : ", ") + t;
    }
  throw Error("model_type '" + model_type + "' is not one tach builds (" + known + ")");
}

std::string model_type_of(const ModelLocation& location) {
  if (location.kind == ModelLocation::Kind::preset) {
    for (const auto& f : model_families())
      for (const auto& p : f.presets())
        if (p == location.preset) return f.preset_model_type(p);
    preset_config(location.preset);  // throws, listing every preset with its description
    throw Error("unknown preset '" + location.preset + "'");
  }
  return load_config_model_type((std::filesystem::path(location.dir) / "config.json").string());
}

ArchitectureSummary summarize_architecture(const ModelLocation& location) {
  return model_family(model_type_of(location)).summarize(location);
}

}  // namespace tach::model

namespace tach {

std::unique_ptr<EncoderModel> load_model(const std::string& spec, const LoadOptions& options) {
  if (options.device.kind == DeviceKind::cuda) {
    check(cuda_available(), "device " + options.device.str() + ": " + cuda_unavailable_reason());
    check(options.device.index < cuda_device_count(),
          "device " + options.device.str() + ": this machine has " + std::to_string(cuda_device_count()) +
              " CUDA device(s), numbered from 0");
    check(options.compute == DType::f32 || options.compute == DType::bf16 || options.compute == DType::f16,
          "compute dtype " + std::string(dtype_name(options.compute)) + " is not supported on cuda (f32, bf16, f16)");
  } else {
    check(options.compute == DType::f32 || options.compute == DType::bf16,
          "compute dtype " + std::string(dtype_name(options.compute)) + " is not supported on cpu (f32, bf16)");
  }
  const model::ModelLocation loc = model::resolve_model(spec);
  std::unique_ptr<Model> m = model::model_family(model::model_type_of(loc)).load(loc, options);
  std::optional<model::SentenceEmbeddingConfig> sentence;
  if (loc.kind != model::ModelLocation::Kind::preset) sentence = model::read_sentence_embedding_config(loc.dir);
  // A bare encoder (no head) is what sentence-transformers would wrap with mean pooling.
  if (!sentence && !m->info().classifier && !m->info().causal_lm) sentence = model::default_sentence_embedding_config();
  if (sentence) m = model::with_sentence_embedding(std::move(m), *sentence);
  return m;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& f : model::model_families())
    for (auto& p : f.presets()) names.push_back(p);
  return names;
}

}  // namespace tach
