#include "estimate/architecture_reader.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/config_fields.h"
#include "model/decoder_model.h"
#include "model/presets.h"
#include "tach/error.h"

namespace tach::estimate {

namespace {

using json = nlohmann::json;
using model::ArchitectureSummary;

// Published configs (the fields the estimate reads, as on the Hub), for the memory table.
constexpr const char* kLlama31_70b = R"json({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
  "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256,
  "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "attention_bias": false, "mlp_bias": false,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})json";
constexpr const char* kMixtral8x7b = R"json({
  "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "num_experts_per_tok": 2, "vocab_size": 32000, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})json";
constexpr const char* kQwen15MoE = R"json({
  "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
  "decoder_sparse_step": 1, "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16,
  "vocab_size": 151936, "max_position_embeddings": 8192, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})json";
constexpr const char* kDeepSeekV3 = R"json({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
  "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
  "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1, "num_attention_heads": 128,
  "num_key_value_heads": 128, "num_hidden_layers": 61, "q_lora_rank": 1536, "kv_lora_rank": 512,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
  "max_position_embeddings": 163840, "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                   "original_max_position_embeddings": 4096, "type": "yarn"},
  "rope_theta": 10000, "tie_word_embeddings": false, "torch_dtype": "bfloat16"})json";

struct ConfigPreset {
  const char* name;
  const char* config;
};
constexpr ConfigPreset kConfigPresets[] = {{"llama-3.1-70b", kLlama31_70b},
                                           {"mixtral-8x7b", kMixtral8x7b},
                                           {"qwen1.5-moe-a2.7b", kQwen15MoE},
                                           {"deepseek-v3", kDeepSeekV3}};

// j[key] when it is a string, else `otherwise` (a model_type of another type names no family).
std::string string_field(const json& j, const char* key, const char* otherwise) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string(otherwise);
}

// The fields every decoder config has; a config without them is refused, naming them.
void require_decoder_fields(const json& j, const std::string& source) {
  std::string missing;
  for (const char* k : {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"})
    if (!j.contains(k) || !j[k].is_number_integer()) missing += (missing.empty() ? "" : ", ") + std::string(k);
  if (!missing.empty())
    throw Error(source + ": model_type \"" + string_field(j, "model_type", "?") + "\" is not one tach builds (" +
                model::known_model_types() +
                "), and the estimate of an unknown one needs the standard decoder fields; "
                "missing: " +
                missing);
}

int64_t layers_with_experts(const model::Field& f, int64_t L, int64_t step_default) {
  std::set<int64_t> dense;
  if (f.has("mlp_only_layers")) {
    if (!f.root["mlp_only_layers"].is_array()) f.fail("mlp_only_layers", "must be a list of layer indices");
    for (const auto& x : f.root["mlp_only_layers"]) {
      if (!x.is_number_integer()) f.fail("mlp_only_layers", "must be a list of layer indices, got " + x.dump());
      dense.insert(x.get<int64_t>());
    }
  }
  const int64_t step = f.positive_int("decoder_sparse_step", step_default, false);
  int64_t n = 0;
  for (int64_t i = 0; i < L; ++i) n += !dense.count(i) && (i + 1) % step == 0;
  return n;
}

// The readers of decoders tach does not build, one row per kind: what their config.json adds to
// the standard fields (the estimate's counterpart of the family table's read_switches).
void read_mixtral(const model::Field& f, ArchitectureSummary& a) {
  a.experts = f.positive_int("num_local_experts", 8, false);
  a.experts_per_token = f.positive_int("num_experts_per_tok", 2, false);
  a.expert_I = a.I;
  a.moe_layers = a.L;
  a.note = "Mixtral: every layer's MLP is " + std::to_string(a.experts) + " experts, " +
           std::to_string(a.experts_per_token) + " active per token";
}

void read_qwen_experts(const model::Field& f, ArchitectureSummary& a) {
  a.experts = f.positive_int("num_experts", 60, false);
  a.experts_per_token = f.positive_int("num_experts_per_tok", 4, false);
  a.expert_I = f.positive_int("moe_intermediate_size", 0, true);
  a.moe_layers = layers_with_experts(f, a.L, 1);
  a.note = f.str("model_type", "") + ": " + std::to_string(a.moe_layers) + " of " + std::to_string(a.L) +
           " layers with " + std::to_string(a.experts) + " experts (" + std::to_string(a.experts_per_token) +
           " active)" + (a.shared_I ? ", a shared expert of width " + std::to_string(a.shared_I) : "");
}

void read_qwen2_moe(const model::Field& f, ArchitectureSummary& a) {
  a.qkv_bias = true;  // Qwen2's biases on q, k and v
  a.shared_I = f.nonneg_int("shared_expert_intermediate_size", 0);
  a.shared_expert_gate = a.shared_I > 0;
  read_qwen_experts(f, a);
}

void read_qwen3_moe(const model::Field& f, ArchitectureSummary& a) {
  a.qkv_bias = a.o_bias = f.flag("attention_bias", false);
  a.qk_norm = true;
  read_qwen_experts(f, a);
}

void read_deepseek(const model::Field& f, ArchitectureSummary& a) {
  a.mla = true;
  a.q_lora_rank = f.nonneg_int("q_lora_rank", 0);
  a.kv_lora_rank = f.positive_int("kv_lora_rank", 0, true);
  a.qk_rope_dim = f.positive_int("qk_rope_head_dim", 0, true);
  a.qk_nope_dim = f.positive_int("qk_nope_head_dim", 0, true);
  a.v_head_dim = f.positive_int("v_head_dim", 0, true);
  a.D = a.qk_nope_dim + a.qk_rope_dim;
  a.experts = f.nonneg_int("n_routed_experts", 0);
  a.experts_per_token = f.positive_int("num_experts_per_tok", 1, false);
  a.expert_I = f.positive_int("moe_intermediate_size", a.I, false);
  a.shared_I = f.nonneg_int("n_shared_experts", 0) * a.expert_I;
  const int64_t freq = f.positive_int("moe_layer_freq", 1, false);
  const int64_t first_dense = f.nonneg_int("first_k_dense_replace", 0);
  for (int64_t i = 0; i < a.L; ++i) a.moe_layers += a.experts > 0 && i >= first_dense && i % freq == 0;
  a.note = f.str("model_type", "") + ": multi-head latent attention (KV cache " + std::to_string(a.kv_lora_rank) +
           " + " + std::to_string(a.qk_rope_dim) + " values per token and layer), " + std::to_string(a.moe_layers) +
           " of " + std::to_string(a.L) + " layers with " + std::to_string(a.experts) + " routed experts (" +
           std::to_string(a.experts_per_token) + " active) and " + std::to_string(f.nonneg_int("n_shared_experts", 0)) +
           " shared; the multi-token-prediction layers (" +
           std::to_string(f.nonneg_int("num_nextn_predict_layers", 0)) +
           ") are not counted, as transformers builds none";
}

// The labels config.json gives, as transformers reads them (id2label, else num_labels, else 2).
struct Labels {
  std::vector<std::string> id2label;
  std::map<std::string, int> label2id;
  std::string problem_type;
  int64_t num_labels() const { return int64_t(id2label.size()); }
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The task head its architecture names, in place of the LM head (transformers builds no lm_head
// beside one, whatever tie_word_embeddings says): ForSequenceClassification's `score` [labels, C]
// without a bias, ForTokenClassification's `score` and ForQuestionAnswering's `qa_outputs` [2, C]
// with one.
void read_task_head(const model::Field& f, ArchitectureSummary& a) {
  const bool sequence = ends_with(a.name, "ForSequenceClassification");
  const bool token = ends_with(a.name, "ForTokenClassification");
  const bool qa = ends_with(a.name, "ForQuestionAnswering");
  if (!sequence && !token && !qa) return;
  Labels labels;
  if (!qa) model::parse_labels(f, labels);
  a.tied = true;
  a.labels = labels.num_labels();
  a.head = token ? Head::token_classification : qa ? Head::question_answering : Head::none;
}

struct ConfigReader {
  const char* model_types[2];
  void (*read)(const model::Field& f, ArchitectureSummary& a);
};
constexpr ConfigReader kReaders[] = {{{"mixtral", nullptr}, read_mixtral},
                                     {{"qwen2_moe", nullptr}, read_qwen2_moe},
                                     {{"qwen3_moe", nullptr}, read_qwen3_moe},
                                     {{"deepseek_v3", "deepseek_v2"}, read_deepseek}};

}  // namespace

std::vector<std::string> config_only_presets() {
  std::vector<std::string> v;
  for (const auto& p : kConfigPresets) v.emplace_back(p.name);
  return v;
}

ArchitectureSummary describe_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  require_decoder_fields(j, source);
  const model::Field f{j, source};
  const std::string type = f.str("model_type", "");
  ArchitectureSummary a;
  a.decoder = true;
  a.name = j.contains("architectures") && j["architectures"].is_array() && !j["architectures"].empty()
               ? j["architectures"][0].get<std::string>()
               : type;
  a.V = f.positive_int("vocab_size", 0, true);
  a.C = f.positive_int("hidden_size", 0, true);
  a.L = f.positive_int("num_hidden_layers", 0, true);
  a.H = f.positive_int("num_attention_heads", 0, true);
  a.KVH = f.positive_int("num_key_value_heads", a.H, false);
  a.D = f.positive_int("head_dim", a.C / a.H, false);
  a.I = f.positive_int("intermediate_size", 0, true);
  a.P = f.positive_int("max_position_embeddings", 2048, false);
  a.tied = f.flag("tie_word_embeddings", false);
  read_task_head(f, a);
  for (const auto& reader : kReaders)
    for (const char* t : reader.model_types)
      if (t && type == t) {
        reader.read(f, a);
        return a;
      }
  a.qkv_bias = a.o_bias = f.flag("attention_bias", false);
  a.mlp_bias = f.flag("mlp_bias", false);
  a.note = "model_type \"" + type +
           "\" is not one tach builds or knows: estimated as a Llama-shaped decoder from its "
           "standard fields (q, k, v, o, gate/up/down, two RMSNorms per layer); its parameter count may differ";
  return a;
}

ArchitectureSummary describe_model(const std::string& spec) {
  const std::string prefix = "preset:";
  if (spec.rfind(prefix, 0) == 0)
    for (const auto& p : kConfigPresets)
      if (spec.substr(prefix.size()) == p.name) {
        const json j = json::parse(p.config);
        const std::string type = j["model_type"].get<std::string>();
        ArchitectureSummary a;
        bool built = false;  // a family tach builds: its own parser, as for a checkpoint's config.json
        for (const auto& fam : model::model_families())
          for (const auto& t : fam.model_types)
            if (t == type && fam.decoder) {
              a = model::summarize_decoder_config(model::parse_decoder_config(j, spec));
              built = true;
            }
        if (!built) a = describe_config(j, spec);
        a.note += std::string(a.note.empty() ? "" : "; ") + "a published config kept for tach estimate (no weights)";
        return a;
      }
  const model::ModelLocation loc = model::resolve_model(spec);
  if (loc.kind == model::ModelLocation::Kind::preset) {
    try {
      return model::summarize_architecture(loc);
    } catch (const Error& e) {
      std::string more;
      for (const auto& p : kConfigPresets)
        more += std::string("\n  preset:") + p.name + "  (config only, for tach estimate)";
      throw Error(std::string(e.what()) + more);
    }
  }
  const std::string path = (std::filesystem::path(loc.dir) / "config.json").string();
  const json j = model::parse_json_text(model::read_text_file(path), path);
  const std::string type = string_field(j, "model_type", "");
  for (const auto& fam : model::model_families())
    for (const auto& t : fam.model_types)
      if (t == type) return fam.summarize(fam, loc);
  return describe_config(j, path);
}

std::vector<int64_t> pruned_layer_heads(const std::string& spec) {
  if (spec.rfind("preset:", 0) == 0) return {};
  const model::ModelLocation loc = model::resolve_model(spec);
  if (loc.kind == model::ModelLocation::Kind::preset) return {};
  const std::string path = (std::filesystem::path(loc.dir) / "config.json").string();
  if (!model::parse_json_text(model::read_text_file(path), path).contains("pruned_heads")) return {};
  const model::EncoderConfig c = model::load_encoder_config(path);
  std::vector<int64_t> heads;
  if (!c.pruned_heads.empty())
    for (int64_t l = 0; l < c.num_layers; ++l) heads.push_back(c.heads_in_layer(l));
  return heads;
}

}  // namespace tach::estimate
