// tach prune: the checkpoint read, its units ranked and removed, the smaller one written.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/encoder.h"
#include "model/encoder_build.h"
#include "model/family.h"
#include "model/safetensors_writer.h"
#include "prune/prune_decoder.h"
#include "prune/importance.h"
#include "prune/prune_files.h"
#include "prune/prune_plan.h"
#include "prune/unit_scores.h"
#include "tach/error.h"
#include "tach/prune.h"

namespace tach {

using namespace model;
using namespace prune;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The rows of a layer's q, k or v that its kept heads hold: positions among its current heads.
std::vector<int64_t> kept_head_rows(const EncoderConfig& c, int64_t layer, const std::vector<int64_t>& removed) {
  std::vector<int64_t> rows;
  const std::vector<int64_t> heads = current_heads(c, layer);
  const int64_t D = c.head_dim();
  for (size_t i = 0; i < heads.size(); ++i)
    if (!std::binary_search(removed.begin(), removed.end(), heads[i]))
      for (int64_t d = 0; d < D; ++d) rows.push_back(int64_t(i) * D + d);
  return rows;
}

PruneSize size_of(const EncoderConfig& c, int64_t parameters, int64_t bytes, int64_t T) {
  PruneSize s;
  s.parameters = parameters;
  s.weight_bytes = bytes;
  s.layers = c.num_layers;
  for (int64_t l = 0; l < c.num_layers; ++l) s.heads += c.heads_in_layer(l);
  s.ffn_width = c.intermediate_size;
  s.flops_per_token = encoder_cost(encoder_shape(c), 1, T).flops / double(T);
  return s;
}

}  // namespace

PruneResult prune_model(const PruneOptions& o) {
  check(!o.output.empty(), "tach prune: an output directory is needed (-o DIR)");
  const ModelLocation loc = resolve_model(o.model);
  check(loc.kind != ModelLocation::Kind::preset,
        "tach prune writes a checkpoint from a checkpoint's files; " + o.model + " is a preset with synthetic weights");
  check(fs::weakly_canonical(o.output) != fs::weakly_canonical(loc.dir),
        "tach prune: the output directory is the model's own (" + loc.dir + "); write somewhere else");
  const std::string config_path = (fs::path(loc.dir) / "config.json").string();
  const json config = read_json_file(config_path);
  const ModelFamily& family = model_family(load_config_model_type(config_path));
  check_ranking_options(o, family);
  if (family.decoder != nullptr) return prune_decoder_model(o, loc.dir, config, family);
  const EncoderConfig c = parse_encoder_config(config, config_path);
  const WeightStore store = open_checkpoint_weights(loc.dir);
  const EncoderTensors names = encoder_tensors(store, family, c);
  Calibration calibration;
  const UnitScores scores =
      o.by == "importance" ? importance_scores(o, loc.dir, &calibration) : magnitude_scores(store, names);
  const PrunePlan plan = plan_pruning(o, family, c, scores);

  PruneResult r;
  r.family = family.name;
  int64_t parameters = 0;
  for (const auto& n : store.names()) parameters += shape_numel(store.find(n)->shape);
  r.before = size_of(c, parameters, safetensors_bytes(loc.dir), r.summary_tokens);
  json scores_out = scores_json(scores, plan, o.by);
  if (o.by == "importance") {
    scores_out["calibration"] = calibration_json(calibration);
    r.calibration = calibration_text(calibration);
  }

  if (plan.removes_nothing()) {
    write_unchanged(loc.dir, o.output, scores_out, r);
    return r;
  }

  const EncoderTensorNames& n = c.family->names;
  const int64_t L = c.num_layers;
  std::vector<int64_t> new_index(size_t(L), -1);
  int64_t kept_layers = 0;
  for (int64_t l = 0; l < L; ++l)
    if (plan.keeps_layer(l)) new_index[size_t(l)] = kept_layers++;
  std::vector<std::pair<std::string, Tensor>> tensors;
  int64_t after_parameters = 0;
  for (const auto& name : store.names()) {
    const StoredTensor* st = store.find(name);
    if (name.rfind(names.layer_prefix, 0) != 0) {
      tensors.emplace_back(name, st->load().contiguous());
      after_parameters += tensors.back().second.numel();
      continue;
    }
    const std::string tail = name.substr(names.layer_prefix.size());
    const int64_t l = std::stoll(tail.substr(0, tail.find('.')));
    check(l >= 0 && l < L, name + ": layer " + std::to_string(l) + " of a model with " + std::to_string(L));
    if (!plan.keeps_layer(l)) continue;
    const std::string role = tail.substr(tail.find('.') + 1);  // "attention.self.query.weight"
    auto is = [&](const std::string& module) { return role == module + ".weight" || role == module + ".bias"; };
    Tensor t = st->load().contiguous();
    if (is(n.q) || is(n.k) || is(n.v)) t = take_rows(t, kept_head_rows(c, l, plan.removed_heads[size_t(l)]));
    else if (role == n.out + ".weight") t = take_columns(t, kept_head_rows(c, l, plan.removed_heads[size_t(l)]));
    else if (!plan.kept_neurons.empty() && is(n.ffn_in)) t = take_rows(t, plan.kept_neurons[size_t(l)]);
    else if (!plan.kept_neurons.empty() && role == n.ffn_out + ".weight")
      t = take_columns(t, plan.kept_neurons[size_t(l)]);
    tensors.emplace_back(names.layer_prefix + std::to_string(new_index[size_t(l)]) + "." + role, t);
    after_parameters += t.numel();
  }

  // config.json: the new sizes, and the removed heads under the kept layers' new numbers.
  json out = config;
  const PruningRule& rule = family.pruning;
  if (!plan.removed_layers.empty()) out[rule.layers_key] = kept_layers;
  if (!plan.kept_neurons.empty()) out[rule.ffn_key] = int64_t(plan.kept_neurons.front().size());
  json pruned = json::object();
  for (int64_t l = 0; l < L; ++l)
    if (plan.keeps_layer(l) && !plan.removed_heads[size_t(l)].empty())
      pruned[std::to_string(new_index[size_t(l)])] = plan.removed_heads[size_t(l)];
  if (!pruned.empty()) out["pruned_heads"] = pruned;
  else out.erase("pruned_heads");
  const EncoderConfig after = parse_encoder_config(out, o.output + "/config.json");

  write_pruned(
      loc.dir, o.output, tensors, out, scores_out,
      [&](int64_t bytes) { return size_of(after, after_parameters, bytes, r.summary_tokens); }, r);
  r.removed_layers = int64_t(plan.removed_layers.size());
  r.removed_heads = plan.new_heads;
  r.removed_neurons = plan.new_neurons;
  if (!pruned.empty())
    r.notes.push_back(
        "config.json lists the removed heads under pruned_heads, as transformers 4 saves them; "
        "transformers 5 no longer reads that key and builds every layer with all its heads");
  return r;
}

}  // namespace tach
