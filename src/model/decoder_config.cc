#include "model/decoder_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/config.h"
#include "model/config_fields.h"
#include "model/family.h"

namespace tach::model {

float DecoderConfig::attention_scale() const {
  return float(1.0 / std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : double(head_dim)));
}

bool DecoderConfig::any_sliding() const {
  for (int64_t w : layer_window)
    if (w > 0) return true;
  return false;
}

const ops::RopeSettings& DecoderConfig::layer_rope(int64_t layer) const {
  return has_local_rope && layer_window[size_t(layer)] > 0 ? local_rope : rope;
}

std::string DecoderConfig::describe_positions() const {
  auto one = [](const ops::RopeSettings& r) {
    char theta[32];
    std::snprintf(theta, sizeof theta, "%g", r.theta);
    std::string s = "theta " + std::string(theta);
    if (r.type != "default") {
      char factor[32];
      std::snprintf(factor, sizeof factor, "%g", r.factor);
      s += ", " + r.type + " scaling x" + factor;
    }
    return s;
  };
  std::string s = "rotary (" + one(rope) + ")";
  int64_t sliding = 0, window = 0;
  for (int64_t w : layer_window)
    if (w > 0) ++sliding, window = w;
  if (sliding > 0) {
    s += (causal ? ", sliding window " + std::to_string(window)
                 : ", local attention (" + std::to_string(window) + " keys on either side)") +
         " on " + std::to_string(sliding) + " of " + std::to_string(num_layers) + " layers";
    if (has_local_rope) s += " (local rotary " + one(local_rope) + ")";
  }
  return s;
}

namespace {

const char* const kRopeTypes = "default, linear, dynamic, llama3, yarn";

// One RoPE object (rope_scaling, rope_parameters or one of its per-layer-type entries) over the
// settings read so far.
void read_rope_object(const Field& f, const std::string& key, const json& r, ops::RopeSettings& s) {
  if (!r.is_object()) f.fail(key, "must be an object or null");
  s.theta = positive_number(f, r, "rope_theta", s.theta);
  std::string type = "default";
  for (const char* k : {"rope_type", "type"})
    if (r.contains(k) && r[k].is_string()) type = r[k].get<std::string>();
  if (type != "default" && type != "linear" && type != "dynamic" && type != "llama3" && type != "yarn")
    f.fail(key, "has rope type \"" + type + "\"; tach implements " + std::string(kRopeTypes));
  s.type = type;
  if (type == "default") return;
  s.factor = positive_number(f, r, "factor", 0);
  if (type == "llama3" || type == "yarn") {
    const double orig = positive_number(f, r, "original_max_position_embeddings", 0);
    if (orig <= 0) f.fail(key, "needs \"original_max_position_embeddings\" for " + type + " scaling");
    s.original_max_positions = int64_t(orig);
    // yarn without a factor: the one implied by the context it was extended to (transformers).
    if (type == "yarn" && s.factor == 0) s.factor = double(s.max_positions) / orig;
  }
  if (!(s.factor >= 1) && type != "yarn") f.fail(key, "needs \"factor\" >= 1 for " + type + " scaling");
  if (!(s.factor > 0)) f.fail(key, "needs a positive \"factor\" for yarn scaling");
  if (type == "llama3") {
    s.low_freq_factor = positive_number(f, r, "low_freq_factor", 1.0);
    s.high_freq_factor = positive_number(f, r, "high_freq_factor", 4.0);
    if (!(s.high_freq_factor > s.low_freq_factor)) f.fail(key, "needs high_freq_factor > low_freq_factor");
  }
  if (type == "yarn") {
    s.beta_fast = positive_number(f, r, "beta_fast", 32.0);
    s.beta_slow = positive_number(f, r, "beta_slow", 1.0);
    s.attention_factor = positive_number(f, r, "attention_factor", 0.0);
    s.mscale = positive_number(f, r, "mscale", 0.0);
    s.mscale_all_dim = positive_number(f, r, "mscale_all_dim", 0.0);
    if (r.contains("truncate") && r["truncate"].is_boolean()) s.truncate = r["truncate"].get<bool>();
  }
  for (const char* k : {"short_factor", "long_factor"})
    if (r.contains(k)) f.fail(key, std::string("has \"") + k + "\" (longrope); tach implements " + kRopeTypes);
}

// RoPE in transformers 4's spelling (rope_theta, rope_scaling) or 5's (rope_parameters, which
// Gemma 3 nests per layer type: {"full_attention": {...}, "sliding_attention": {...}}).
void read_rope(const Field& f, DecoderConfig& c, const DecoderFamily& d) {
  c.rope.head_dim = c.head_dim;
  c.rope.max_positions = c.max_position_embeddings;
  c.rope.theta = positive_number(f, f.root, d.rope_theta_key, d.default_rope_theta);
  c.local_rope = c.rope;
  c.local_rope.type = "default";
  if (c.has_local_rope || f.has(d.local_rope_theta_key)) {  // the family's switch, or the file's field
    c.has_local_rope = true;
    c.local_rope.theta = positive_number(f, f.root, d.local_rope_theta_key, 10000.0);
  }
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!f.has(key)) continue;
    const json& r = f.root[key];
    if (r.is_object() && (r.contains("full_attention") || r.contains("sliding_attention"))) {
      for (const auto& [type, value] : r.items()) {
        if (type == "full_attention") {
          read_rope_object(f, std::string(key) + ".full_attention", value, c.rope);
        } else if (type == "sliding_attention") {
          c.has_local_rope = true;
          read_rope_object(f, std::string(key) + ".sliding_attention", value, c.local_rope);
        } else {
          f.fail(key,
                 "has RoPE settings for layer type \"" + type + "\"; tach knows full_attention and sliding_attention");
        }
      }
    } else {
      read_rope_object(f, key, r, c.rope);
    }
  }
}

// layer_types, or the family's rule when the file has none (read_switches sets layer_window).
// The sliding layers' window: sliding_window, or the one the family's rule gave (ModernBERT's
// files name local_attention instead).
void read_layer_types(const Field& f, DecoderConfig& c) {
  if (!f.has("layer_types")) return;
  int64_t family_window = 0;
  for (int64_t w : c.layer_window) family_window = std::max(family_window, w);
  const json& t = f.root["layer_types"];
  if (!t.is_array() || int64_t(t.size()) != c.num_layers)
    f.fail("layer_types", "must list one type for each of the " + std::to_string(c.num_layers) + " layers");
  const bool needs_window = [&] {
    for (const auto& x : t)
      if (x == "sliding_attention") return true;
    return false;
  }();
  const int64_t window =
      needs_window
          ? (family_window > 0 && !f.has("sliding_window") ? family_window : f.positive_int("sliding_window", 0, true))
          : 0;
  c.layer_window.assign(size_t(c.num_layers), 0);
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_string()) f.fail("layer_types", "must be strings");
    const std::string type = t[i].get<std::string>();
    if (type == "sliding_attention") c.layer_window[i] = window;
    else if (type != "full_attention")
      f.fail("layer_types", "has layer type \"" + type + "\" at layer " + std::to_string(i) +
                                "; tach builds full_attention and sliding_attention layers");
  }
}

void read_eos(const Field& f, DecoderConfig& c) {
  if (!f.has("eos_token_id")) return;
  const json& e = f.root["eos_token_id"];
  if (e.is_number_integer()) c.eos_token_ids.push_back(e.get<int64_t>());
  else if (e.is_array())
    for (const auto& x : e) {
      if (!x.is_number_integer()) f.fail("eos_token_id", "must be an integer or a list of integers");
      c.eos_token_ids.push_back(x.get<int64_t>());  // checked to be an integer above
    }
  else f.fail("eos_token_id", "must be an integer or a list of integers");
}

}  // namespace

DecoderConfig parse_decoder_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  const Field f{j, source};
  DecoderConfig c;
  c.model_type = config_model_type(j, source);
  const ModelFamily& family = model_family(c.model_type);
  check(family.decoder != nullptr, source + ": model_type \"" + c.model_type + "\" is not a decoder");
  const DecoderFamily& d = *family.decoder;
  c.architecture = family.bare_architecture;
  if (f.has("architectures")) {
    const json& a = j["architectures"];
    if (!a.is_array() || a.empty() || !a[0].is_string())
      f.fail("architectures", "must be a non-empty array of strings");
    c.architecture = a[0].get<std::string>();
    std::vector<std::pair<std::string, Head>> known = family_architectures(family);
    if (family.masked_lm_architecture != d.causal_lm_architecture)
      known.emplace_back(d.causal_lm_architecture, Head::none);  // a causal LM's head is not one of tach::Head
    std::string names;
    bool found = false;
    for (const auto& [architecture, head] : known) {
      names += (names.empty() ? "" : ", ") + architecture;
      if (architecture == c.architecture) found = true, c.checkpoint_head = head;
    }
    if (!found)
      throw Error(source + ": architecture \"" + c.architecture + "\" is not one tach builds for model_type \"" +
                  c.model_type + "\" (" + names + ")");
  }
  c.classification_head = c.architecture == family.classifier_architecture;
  c.causal_lm = c.architecture == d.causal_lm_architecture;
  c.head = c.checkpoint_head;

  c.vocab_size = f.positive_int("vocab_size", 0, true);
  c.hidden_size = f.positive_int("hidden_size", 0, true);
  c.num_layers = f.positive_int("num_hidden_layers", 0, true);
  c.num_heads = f.positive_int("num_attention_heads", 0, true);
  c.num_kv_heads = f.positive_int("num_key_value_heads", c.num_heads, false);
  c.intermediate_size = f.positive_int("intermediate_size", 0, true);
  c.max_position_embeddings = f.positive_int("max_position_embeddings", 2048, false);
  c.norm_eps = f.number("rms_norm_eps", 1e-6f);
  c.head_dim = f.positive_int("head_dim", 0, false);
  if (c.head_dim == 0) {
    if (c.hidden_size % c.num_heads != 0)
      throw Error(source + ": hidden size " + std::to_string(c.hidden_size) + " is not divisible by " +
                  std::to_string(c.num_heads) + " attention heads, and no head_dim is given");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.head_dim % 2 != 0) f.fail("head_dim", "must be even for rotary embeddings, got " + std::to_string(c.head_dim));
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(source + ": " + std::to_string(c.num_heads) + " attention heads cannot be shared among " +
                std::to_string(c.num_kv_heads) + " key/value heads (num_key_value_heads must divide them)");
  c.tie_word_embeddings = f.flag("tie_word_embeddings", d.tied_by_default);
  c.layer_window.assign(size_t(c.num_layers), 0);

  // The family's own fields and defaults (model/family_*.cc), then what every family spells alike.
  d.read_switches(f, c);
  read_rope(f, c, d);
  read_layer_types(f, c);
  for (const char* key : {"attn_logit_softcapping"})
    if (f.has(key)) f.fail(key, "is set; tach does not implement attention-logit softcapping (Gemma 2)");
  c.final_logit_softcap = f.nonneg_number("final_logit_softcapping", 0);
  if (f.has("pretraining_tp") && f.root["pretraining_tp"] != 1)
    f.fail("pretraining_tp", "is not 1; tach implements the plain (unsplit) projections");
  if (c.causal && f.flag("use_bidirectional_attention", false))
    f.fail("use_bidirectional_attention", "is true; tach's decoders are causal");
  c.attention_dropout = float(f.nonneg_number("attention_dropout", 0));
  c.initializer_range = f.has("initializer_range") ? f.number("initializer_range", 0.02f) : 0.02f;
  c.pad_token_id = f.has("pad_token_id") ? f.nonneg_int("pad_token_id", 0) : -1;
  read_eos(f, c);
  c.torch_dtype = f.str("torch_dtype", f.str("dtype", ""));
  parse_labels(f, c);
  return c;
}

DecoderConfig parse_decoder_config_text(const std::string& text, const std::string& source) {
  return parse_decoder_config(parse_json_text(text, source), source);
}

DecoderConfig load_decoder_config(const std::string& path) {
  return parse_decoder_config_text(read_text_file(path), path);
}

}  // namespace tach::model
