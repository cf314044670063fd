// tach prune: the checkpoint read, its units ranked and removed, the smaller one written.
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/encoder.h"
#include "model/encoder_build.h"
#include "model/family.h"
#include "model/safetensors_writer.h"
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

// Rows `keep` of t [R, ...] (any dtype), contiguous.
Tensor take_rows(const Tensor& t, const std::vector<int64_t>& keep) {
  Shape shape = t.shape();
  const size_t row = t.nbytes() / size_t(shape[0]);
  shape[0] = int64_t(keep.size());
  Tensor out = Tensor::empty(shape, t.dtype(), Device::cpu(), MemoryCategory::workspace);
  const char* src = static_cast<const char*>(t.raw());
  for (size_t i = 0; i < keep.size(); ++i)
    std::memcpy(static_cast<char*>(out.raw()) + i * row, src + size_t(keep[i]) * row, row);
  return out;
}

// Columns `keep` of t [R, K] (any dtype), contiguous.
Tensor take_columns(const Tensor& t, const std::vector<int64_t>& keep) {
  const int64_t R = t.size(0), K = t.size(1);
  const size_t e = t.nbytes() / size_t(R * K);
  Tensor out = Tensor::empty({R, int64_t(keep.size())}, t.dtype(), Device::cpu(), MemoryCategory::workspace);
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < R; ++r)
    for (size_t i = 0; i < keep.size(); ++i, dst += e) std::memcpy(dst, src + (size_t(r * K + keep[i])) * e, e);
  return out;
}

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

json scores_json(const UnitScores& s, const PrunePlan& p, const std::string& by) {
  auto nullable = [](const std::vector<double>& v) {
    json a = json::array();
    for (double x : v) a.push_back(std::isnan(x) ? json(nullptr) : json(x));
    return a;
  };
  json j = {{"by", by}, {"layers", s.layers}, {"removed_layers", p.removed_layers}};
  j["heads"] = json::array();
  for (const auto& h : s.heads) j["heads"].push_back(nullable(h));
  j["neurons"] = s.neurons;
  j["removed_heads"] = p.removed_heads;
  return j;
}

json size_json(const PruneSize& s) {
  return {{"parameters", s.parameters},
          {"flops_per_token", s.flops_per_token},
          {"weight_bytes", s.weight_bytes},
          {"layers", s.layers},
          {"heads", s.heads},
          {"ffn_width", s.ffn_width}};
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
  check(family.encoder != nullptr, "tach prune: " + std::string(family.name) +
                                       " have no pruning rule in tach (it prunes BERT, DistilBERT, RoBERTa, "
                                       "XLM-RoBERTa and MPNet encoders)");
  const EncoderConfig c = parse_encoder_config(config, config_path);
  const WeightStore store = open_checkpoint_weights(loc.dir);
  const EncoderTensors names = encoder_tensors(store, family, c);
  const UnitScores scores = magnitude_scores(store, names);
  const PrunePlan plan = plan_pruning(o, family, c, scores);

  PruneResult r;
  r.family = family.name;
  int64_t parameters = 0;
  for (const auto& n : store.names()) parameters += shape_numel(store.find(n)->shape);
  r.before = size_of(c, parameters, safetensors_bytes(loc.dir), r.summary_tokens);
  const json scores_out = scores_json(scores, plan, o.by);

  if (plan.removes_nothing()) {
    // Nothing to remove: the model's own files, byte for byte.
    r.unchanged = true;
    r.after = r.before;
    write_directory_atomically(o.output, [&](const std::string& tmp) {
      for (const auto& entry : fs::directory_iterator(loc.dir))
        if (entry.is_regular_file()) fs::copy_file(entry.path(), fs::path(tmp) / entry.path().filename());
      write_file_atomically(tmp + "/prune_scores.json", scores_out.dump(1) + "\n");
      write_file_atomically(tmp + "/prune_summary.json",
                            json({{"before", size_json(r.before)}, {"after", size_json(r.after)}}).dump(1) + "\n");
    });
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

  write_directory_atomically(o.output, [&](const std::string& tmp) {
    write_safetensors(tmp + "/model.safetensors", tensors, {{"format", "pt"}});
    write_file_atomically(tmp + "/config.json", out.dump(2) + "\n");
    copy_tokenizer_files(loc.dir, tmp);
    r.after = size_of(after, after_parameters, safetensors_bytes(tmp), r.summary_tokens);
    write_file_atomically(tmp + "/prune_scores.json", scores_out.dump(1) + "\n");
    write_file_atomically(tmp + "/prune_summary.json",
                          json({{"before", size_json(r.before)}, {"after", size_json(r.after)}}).dump(1) + "\n");
  });
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
