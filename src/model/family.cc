#include "model/family.h"

#include <filesystem>
#include <optional>

#include "model/config.h"
#include "model/config_fields.h"
#include "model/embedding_model.h"
#include "model/presets.h"
#include "tach/error.h"
#include "tach/model_families.h"

namespace tach::model {

int64_t ArchitectureSummary::attention_params() const {
  if (mla) {
    const int64_t qk = qk_nope_dim + qk_rope_dim;
    int64_t p = q_lora_rank > 0 ? C * q_lora_rank + q_lora_rank + q_lora_rank * H * qk : C * H * qk;
    p += C * (kv_lora_rank + qk_rope_dim) + kv_lora_rank + kv_lora_rank * H * (qk_nope_dim + v_head_dim);
    return p + H * v_head_dim * C;
  }
  int64_t p = C * H * D + 2 * C * KVH * D + H * D * C;
  if (qkv_bias) p += H * D + 2 * KVH * D;
  if (o_bias) p += C;
  if (qk_norm) p += 2 * D;
  return p;
}

int64_t ArchitectureSummary::mlp_params(bool sparse) const {
  if (!sparse) return 3 * C * I + (mlp_bias ? 2 * I + C : 0);
  int64_t p = C * experts + experts * 3 * C * expert_I + 3 * C * shared_I;
  if (shared_expert_gate) p += C;
  return p;
}

int64_t ArchitectureSummary::layer_params() const {
  if (decoder) return attention_params() + mlp_params(false) + (sandwich_norms ? 4 : 2) * C;
  return 4 * C * C + 4 * C + 2 * C * I + I + C + 4 * C;  // q k v o with bias, FFN, two LayerNorms
}

int64_t ArchitectureSummary::head_parameters() const {
  const int64_t outputs = head == Head::question_answering ? 2 : labels;
  if (prediction_head) {  // ModernBERT: head.dense (+ bias) and head.norm, then the head's own
    if (head == Head::none) return 0;
    const int64_t shared = C * C + (head_dense_bias ? C : 0) + C;
    if (head == Head::masked_lm) return shared + (decoder_bias ? V : 0);  // the decoder is the embeddings
    return shared + outputs * C + outputs;
  }
  if (decoder)  // a causal family's per-token heads: `score` or `qa_outputs` with a bias
    return head == Head::token_classification || head == Head::question_answering ? outputs * C + outputs : 0;
  switch (head) {
    case Head::none: return bare_pooler ? C * C + C : 0;
    case Head::sequence_classification: return C * C + C + labels * C + labels;  // pooler / pre_classifier
    case Head::token_classification:
    case Head::question_answering: return outputs * C + outputs;
    // dense, LayerNorm, bias; untied, the decoder's weight and (BERT, RoBERTa, MPNet) its own bias
    case Head::masked_lm: return C * C + C + 2 * C + V + (tied ? 0 : V * C + (decoder_bias ? V : 0));
  }
  return 0;
}

int64_t ArchitectureSummary::parameters() const {
  if (decoder) {
    const int64_t norms = (sandwich_norms ? 4 : 2) * C;
    const int64_t layers = (L - moe_layers) * (attention_params() + mlp_params(false) + norms) +
                           moe_layers * (attention_params() + mlp_params(true) + norms);
    return V * C + layers + C + (tied ? 0 : V * C) + (prediction_head || head != Head::none ? 0 : labels * C) +
           other_params + head_parameters();
  }
  const int64_t p = V * C + P * C + Tt * C + 2 * C + relative_bias + L * layer_params();
  return p + other_params + head_parameters();
}

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {
      bert_family(),  distilbert_family(), roberta_family(), xlm_roberta_family(), mpnet_family(),     qwen2_family(),
      llama_family(), mistral_family(),    qwen3_family(),   gemma3_family(),      modernbert_family()};
  return families;
}

std::vector<std::pair<std::string, Head>> family_architectures(const ModelFamily& f) {
  std::vector<std::pair<std::string, Head>> out = {{f.bare_architecture, Head::none},
                                                   {f.classifier_architecture, Head::sequence_classification}};
  if (!f.token_classifier_architecture.empty())
    out.emplace_back(f.token_classifier_architecture, Head::token_classification);
  if (!f.question_answering_architecture.empty())
    out.emplace_back(f.question_answering_architecture, Head::question_answering);
  if (!f.masked_lm_architecture.empty()) out.emplace_back(f.masked_lm_architecture, Head::masked_lm);
  return out;
}

std::string architecture_for_head(const ModelFamily& f, Head head) {
  for (const auto& [architecture, h] : family_architectures(f))
    if (h == head) return architecture;
  throw Error(std::string(f.name) + " have no " + head_name(head) + " head");
}

std::vector<std::string> task_body_prefixes(const ModelFamily& f) {
  std::vector<std::string> out = {f.body_prefix};
  if (!f.question_answering_body_prefix.empty() && f.question_answering_body_prefix != f.body_prefix)
    out.push_back(f.question_answering_body_prefix);
  return out;
}

std::string known_model_types() {
  std::string known;
  for (const auto& f : model_families())
    for (const auto& t : f.model_types) known += (known.empty() ? "" : ", ") + t;
  return known;
}

const ModelFamily& model_family(const std::string& model_type) {
  for (const auto& f : model_families())
    for (const auto& t : f.model_types)
      if (t == model_type) return f;
  throw Error("model_type '" + model_type + "' is not one tach builds (" + known_model_types() + ")");
}

std::string config_model_type(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  if (!j.contains("model_type"))
    throw Error(source + ": missing \"model_type\" (tach builds " + known_model_types() + ")");
  if (!j["model_type"].is_string())
    throw Error(source + ": \"model_type\" is " + j["model_type"].dump() + ", not a string (tach builds " +
                known_model_types() + ")");
  std::string t = j["model_type"].get<std::string>();
  for (const auto& f : model_families())
    for (const auto& known : f.model_types)
      if (known == t) return t;
  throw Error(source + ": model_type \"" + t + "\" is not one tach builds (" + known_model_types() + ")");
}

std::string load_config_model_type(const std::string& path) {
  return config_model_type(parse_json_text(read_text_file(path), path), path);
}

std::string model_type_of(const ModelLocation& location) {
  if (location.kind == ModelLocation::Kind::preset) return preset_model_type(location.preset);
  return load_config_model_type((std::filesystem::path(location.dir) / "config.json").string());
}

const ModelFamily& family_of(const ModelLocation& location) { return model_family(model_type_of(location)); }

ArchitectureSummary summarize_architecture(const ModelLocation& location) {
  const ModelFamily& f = family_of(location);
  return f.summarize(f, location);
}

}  // namespace tach::model

namespace tach {

std::unique_ptr<EncoderModel> load_model(const std::string& spec, const LoadOptions& options) {
  if (options.device.kind == DeviceKind::cuda) {
    check(cuda_available(), "device " + options.device.str() + ": " + cuda_unavailable_reason());
    check(options.device.index < cuda_device_count(), "device " + options.device.str() + ": this machine has " +
                                                          std::to_string(cuda_device_count()) +
                                                          " CUDA device(s), numbered from 0");
    // int8 and nf4 on a GPU are weight-only: the linears' weights quantized, bf16 activations.
    check(options.compute == DType::f32 || options.compute == DType::bf16 || options.compute == DType::f16 ||
              options.compute == DType::i8 || options.compute == DType::nf4,
          "compute dtype " + std::string(dtype_name(options.compute)) +
              " is not supported on cuda (f32, bf16, f16, int8, nf4)");
  } else {
    usage_check(!options.allow_tf32,
                "--allow-tf32: TF32 is a GPU tensor-core format; the CPU's f32 GEMMs have no "
                "such mode (run on --device cuda, or drop --allow-tf32)");
    check(options.compute == DType::f32 || options.compute == DType::bf16 || options.compute == DType::i8 ||
              options.compute == DType::nf4,
          "compute dtype " + std::string(dtype_name(options.compute)) +
              " is not supported on cpu (f32, bf16, int8, nf4)");
  }
  const model::ModelLocation loc = model::resolve_model(spec);
  const model::ModelFamily& family = model::family_of(loc);
  std::unique_ptr<Model> m = family.load(family, loc, options);
  std::optional<model::SentenceEmbeddingConfig> sentence;
  if (loc.kind != model::ModelLocation::Kind::preset) sentence = model::read_sentence_embedding_config(loc.dir);
  // A bare encoder (no head) is what sentence-transformers would wrap with mean pooling.
  if (!sentence && m->info().head == Head::none && !m->info().causal_lm)
    sentence = model::default_sentence_embedding_config();
  if (sentence) m = model::with_sentence_embedding(std::move(m), *sentence);
  return m;
}

std::vector<std::string> preset_names() { return model::all_preset_names(); }

std::string model_types_text() { return model::known_model_types(); }

}  // namespace tach
