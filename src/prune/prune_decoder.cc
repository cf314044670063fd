#include "prune/prune_decoder.h"

#include <algorithm>
#include <filesystem>

#include "model/checkpoint.h"
#include "model/decoder.h"
#include "model/decoder_config.h"
#include "prune/decoder_scores.h"
#include "prune/importance.h"
#include "prune/prune_files.h"
#include "prune/prune_plan.h"
#include "tach/error.h"

namespace tach::prune {

using json = nlohmann::json;
using model::DecoderConfig;

namespace {

PruneSize size_of(const DecoderConfig& c, int64_t parameters, int64_t bytes, int64_t T) {
  PruneSize s;
  s.parameters = parameters;
  s.weight_bytes = bytes;
  s.layers = c.num_layers;
  s.heads = c.num_heads * c.num_layers;
  s.ffn_width = c.intermediate_size;
  s.flops_per_token = model::decoder_cost(c, 1, T, 0).flops / double(T);
  return s;
}

// The q rows (and o columns) and the k and v rows the kept key/value groups hold.
struct KeptAttentionRows {
  std::vector<int64_t> q, kv;
};
KeptAttentionRows kept_attention_rows(const DecoderConfig& c, const std::vector<int64_t>& removed) {
  KeptAttentionRows k;
  for (int64_t g = 0; g < c.num_kv_heads; ++g) {
    if (std::binary_search(removed.begin(), removed.end(), g)) continue;
    const GroupRows r = group_rows(c, g);
    for (int64_t i = 0; i < r.q_rows; ++i) k.q.push_back(r.q0 + i);
    for (int64_t i = 0; i < r.kv_rows; ++i) k.kv.push_back(r.k0 + i);
  }
  return k;
}

const char* kind(int64_t window) { return window > 0 ? "sliding_attention" : "full_attention"; }

// The kinds (sliding or full attention) of the kept layers, as the original has them.
json kept_layer_types(const DecoderConfig& c, const PrunePlan& p) {
  json types = json::array();
  for (int64_t l = 0; l < c.num_layers; ++l)
    if (p.keeps_layer(l)) types.push_back(kind(c.layer_window[size_t(l)]));
  return types;
}

// The first kept layer whose kind `after` reads differently from the original's; -1: none.
int64_t first_moved_kind(const DecoderConfig& before, const DecoderConfig& after, const PrunePlan& p) {
  for (int64_t l = 0, i = 0; l < before.num_layers; ++l) {
    if (!p.keeps_layer(l)) continue;
    if (before.layer_window[size_t(l)] != after.layer_window[size_t(i)]) return l;
    ++i;
  }
  return -1;
}

}  // namespace

PruneResult prune_decoder_model(const PruneOptions& o, const std::string& dir, const json& config,
                                const model::ModelFamily& family) {
  const std::string config_path = (std::filesystem::path(dir) / "config.json").string();
  const DecoderConfig c = model::parse_decoder_config(config, config_path);
  const model::WeightStore store = model::open_checkpoint_weights(dir);
  const DecoderTensors names = decoder_tensors(store, family, c);
  Calibration calibration;
  const UnitScores scores =
      o.by == "importance" ? importance_scores(o, dir, &calibration) : decoder_magnitude_scores(store, names);
  const PrunePlan plan = plan_decoder_pruning(o, family, c, scores);

  PruneResult r;
  r.family = family.name;
  r.notes = plan.notes;
  int64_t parameters = 0;
  for (const auto& n : store.names()) parameters += shape_numel(store.find(n)->shape);
  r.before = size_of(c, parameters, model::safetensors_bytes(dir), r.summary_tokens);
  json scores_out = scores_json(scores, plan, o.by, "key/value group");
  if (o.by == "importance") {
    scores_out["calibration"] = calibration_json(calibration);
    r.calibration = calibration_text(calibration);
  }
  if (plan.removes_nothing()) {
    write_unchanged(dir, o.output, scores_out, r);
    return r;
  }

  // config.json first: a removal transformers would read as another model is refused before
  // anything is sliced.
  const model::PruningRule& rule = family.pruning;
  const int64_t L = c.num_layers, KVH = c.num_kv_heads, G = c.num_heads / c.num_kv_heads;
  json out = config;
  if (!plan.removed_layers.empty()) {
    out[rule.layers_key] = L - int64_t(plan.removed_layers.size());
    if (out.contains("layer_types")) out["layer_types"] = kept_layer_types(c, plan);
  }
  const int64_t removed_groups = int64_t(plan.removed_heads.front().size());
  if (removed_groups > 0) {
    out["num_key_value_heads"] = KVH - removed_groups;
    out["num_attention_heads"] = (KVH - removed_groups) * G;
    out["head_dim"] = c.head_dim;  // no longer hidden_size / num_attention_heads
  }
  if (!plan.kept_neurons.empty()) out[rule.ffn_key] = int64_t(plan.kept_neurons.front().size());
  DecoderConfig after = model::parse_decoder_config(out, o.output + "/config.json");
  if (const int64_t moved = first_moved_kind(c, after, plan); moved >= 0) {
    check(rule.layer_types, "tach prune: removing layers " + json(plan.removed_layers).dump() + " from " + family.name +
                                " would make layer " + std::to_string(moved) + " (" +
                                kind(c.layer_window[size_t(moved)]) +
                                ") another kind under the family's rule, and transformers reads no layer_types "
                                "for it to say otherwise; remove other layers");
    out["layer_types"] = kept_layer_types(c, plan);
    after = model::parse_decoder_config(out, o.output + "/config.json");
    check(first_moved_kind(c, after, plan) < 0, "tach prune: layer_types does not keep the kept layers' kinds");
    r.notes.push_back(
        "config.json gains layer_types, so each kept layer keeps its kind (sliding or full attention) where "
        "the family's rule would count it from its new index");
  }

  // The tensors: removed layers dropped, the rest renumbered and sliced.
  const model::DecoderTensorNames& n = *names.names;
  check(removed_groups == 0 || n.qkv_fused.empty(), "tach prune: fused q|k|v heads are not sliced");
  std::vector<int64_t> new_index(size_t(L), -1);
  for (int64_t l = 0, kept = 0; l < L; ++l)
    if (plan.keeps_layer(l)) new_index[size_t(l)] = kept++;
  std::vector<std::pair<std::string, Tensor>> tensors;
  int64_t after_parameters = 0;
  for (const auto& name : store.names()) {
    const model::StoredTensor* st = store.find(name);
    Tensor t = st->load().contiguous();
    if (name.rfind(names.layer_prefix, 0) != 0) {
      after_parameters += t.numel();
      tensors.emplace_back(name, t);
      continue;
    }
    const std::string tail = name.substr(names.layer_prefix.size());  // "3.self_attn.q_proj.weight"
    const int64_t l = std::stoll(tail.substr(0, tail.find('.')));
    check(l >= 0 && l < L, name + ": layer " + std::to_string(l) + " of a model with " + std::to_string(L));
    if (!plan.keeps_layer(l)) continue;
    const std::string role = tail.substr(tail.find('.') + 1);
    auto is = [&](const std::string& module) {
      return !module.empty() && (role == module + ".weight" || role == module + ".bias");
    };
    if (removed_groups > 0) {
      const KeptAttentionRows rows = kept_attention_rows(c, plan.removed_heads[size_t(l)]);
      if (is(n.q)) t = take_rows(t, rows.q);
      else if (is(n.k) || is(n.v)) t = take_rows(t, rows.kv);
      else if (role == n.o + ".weight") t = take_columns(t, rows.q);
    }
    if (!plan.kept_neurons.empty()) {
      const std::vector<int64_t>& keep = plan.kept_neurons[size_t(l)];
      if (is(n.gate) || is(n.up)) {
        t = take_rows(t, keep);
      } else if (is(n.gate_up_fused)) {  // [2 I, C]: the activated half's rows, then the gate's
        std::vector<int64_t> both = keep;
        for (int64_t j : keep) both.push_back(c.intermediate_size + j);
        t = take_rows(t, both);
      } else if (role == n.down + ".weight") {
        t = take_columns(t, keep);
      }
    }
    after_parameters += t.numel();
    tensors.emplace_back(names.layer_prefix + std::to_string(new_index[size_t(l)]) + "." + role, t);
  }
  write_pruned(
      dir, o.output, tensors, out, scores_out,
      [&](int64_t bytes) { return size_of(after, after_parameters, bytes, r.summary_tokens); }, r);
  r.removed_layers = int64_t(plan.removed_layers.size());
  r.removed_heads = plan.new_heads;
  r.removed_neurons = plan.new_neurons;
  return r;
}

}  // namespace tach::prune
