#include "prune/prune_plan.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tach/plain_number.h"
#include "model/family.h"
#include "tach/error.h"

namespace tach::prune {

bool PrunePlan::keeps_layer(int64_t l) const {
  return !std::binary_search(removed_layers.begin(), removed_layers.end(), l);
}

std::vector<int64_t> lowest(const std::vector<double>& scores, const std::vector<int64_t>& candidates, int64_t n) {
  std::vector<int64_t> order = candidates;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return scores[size_t(a)] < scores[size_t(b)]; });
  order.resize(size_t(std::min<int64_t>(n, int64_t(order.size()))));
  std::sort(order.begin(), order.end());
  return order;
}

namespace {

void check_fraction(double f, const char* option) {
  usage_check(f >= 0 && f < 1,
              std::string("tach prune: ") + option + " must be a fraction in [0, 1), got " + plain_number(f));
}

// "--heads" asked of a family that cannot write it: refused with the family's reason.
void require(bool allowed, const model::ModelFamily& family, const std::string& what, const std::string& why) {
  check(allowed, "tach prune: " + std::string(family.name) + " cannot be written with " + what + ": " + why);
}

// `option`: the flag the list came from (--layers, or --heads' layer keys), for the messages.
std::vector<int64_t> parse_layer_list(const std::string& text, int64_t L, const std::string& option) {
  std::vector<int64_t> layers;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() : comma + 1;
    if (item.empty()) continue;
    size_t used = 0;
    int64_t l = -1;
    try {
      l = std::stoll(item, &used);
    } catch (const std::exception&) { used = 0; }
    usage_check(used == item.size() && l >= 0 && l < L, "tach prune: " + option + " lists \"" + item +
                                                            "\"; the model has layers 0 to " + std::to_string(L - 1));
    // A layer twice is a typo for another layer, not a request to remove it twice.
    usage_check(std::count(layers.begin(), layers.end(), l) == 0,
                "tach prune: " + option + " lists layer " + std::to_string(l) + " twice");
    layers.push_back(l);
  }
  std::sort(layers.begin(), layers.end());
  return layers;
}

// Layers: a count of the lowest-scored, or a list; a family whose layer 0 must stay keeps it.
std::vector<int64_t> plan_layers(const PruneOptions& o, const model::ModelFamily& family, int64_t L,
                                 const UnitScores& scores) {
  if (o.layers.empty()) return {};
  const model::PruningRule& rule = family.pruning;
  require(rule.layers_key != nullptr, family, "fewer layers", "tach has no rule for its layer count");
  std::vector<int64_t> removed;
  if (o.layers.find(',') == std::string::npos) {
    int64_t n = -1;
    size_t used = 0;
    try {
      n = std::stoll(o.layers, &used);
    } catch (const std::exception&) { used = 0; }
    usage_check(used == o.layers.size() && n >= 0,
                "tach prune: --layers must be a count of layers to remove or a list of them (\"1,3\", or \"2,\" for "
                "layer 2 alone), got \"" +
                    o.layers + "\"");
    usage_check(n < L, "tach prune: --layers " + o.layers + " removes every layer; the model has " + std::to_string(L));
    std::vector<int64_t> candidates;
    for (int64_t l = rule.first_layer_refusal ? 1 : 0; l < L; ++l) candidates.push_back(l);
    removed = lowest(scores.layers, candidates, n);
  } else {
    removed = parse_layer_list(o.layers, L, "--layers");
    if (rule.first_layer_refusal && !removed.empty() && removed.front() == 0)
      throw UsageError("tach prune: --layers lists layer 0, which " + std::string(family.name) +
                       " keep: " + rule.first_layer_refusal);
  }
  usage_check(int64_t(removed.size()) < L,
              "tach prune: --layers " + o.layers + " removes every layer; the model has " + std::to_string(L));
  return removed;
}

// FFN neurons: the same count in every layer (config.json has one width), the lowest of each.
void plan_ffn(const PruneOptions& o, const model::ModelFamily& family, int64_t L, int64_t I, const UnitScores& scores,
              PrunePlan& p) {
  if (o.ffn <= 0) return;
  require(family.pruning.ffn_key != nullptr, family, "a narrower FFN", "tach has no rule for its FFN width");
  const int64_t n = std::llround(o.ffn * double(I));
  usage_check(n < I, "tach prune: --ffn " + plain_number(o.ffn) + " removes all " + std::to_string(I) +
                         " neurons of every layer");
  std::vector<int64_t> every(static_cast<size_t>(I));
  for (int64_t j = 0; j < I; ++j) every[size_t(j)] = j;
  p.kept_neurons.assign(size_t(L), {});
  for (int64_t l = 0; l < L; ++l) {
    const std::vector<int64_t> removed = lowest(scores.neurons[size_t(l)], every, n);
    for (int64_t j = 0; j < I; ++j)
      if (!std::binary_search(removed.begin(), removed.end(), j)) p.kept_neurons[size_t(l)].push_back(j);
    if (p.keeps_layer(l)) p.new_neurons += n;
  }
}

}  // namespace

PrunePlan plan_pruning(const PruneOptions& o, const model::ModelFamily& family, const model::EncoderConfig& c,
                       const UnitScores& scores) {
  check_fraction(o.heads, "--heads");
  check_fraction(o.ffn, "--ffn");
  usage_check(o.heads == 0 || o.heads_list.empty(), "tach prune: give --heads as a fraction or as a list, not both");
  const model::PruningRule& rule = family.pruning;
  const int64_t L = c.num_layers, I = c.intermediate_size;
  PrunePlan p;

  p.removed_layers = plan_layers(o, family, L, scores);

  // Heads: those already pruned stay pruned; a fraction of each layer's heads, or a list.
  p.removed_heads.assign(size_t(L), {});
  for (int64_t l = 0; l < L; ++l)
    if (!c.pruned_heads.empty()) p.removed_heads[size_t(l)] = c.pruned_heads[size_t(l)];
  if (o.heads > 0 || !o.heads_list.empty())
    require(rule.pruned_heads, family, "fewer attention heads", rule.heads_refusal);
  for (int64_t l = 0; l < L && o.heads > 0; ++l) {
    if (!p.keeps_layer(l)) continue;
    const std::vector<int64_t> heads = current_heads(c, l);
    const int64_t n = std::llround(o.heads * double(heads.size()));
    usage_check(n < int64_t(heads.size()), "tach prune: --heads " + plain_number(o.heads) + " removes all " +
                                               std::to_string(heads.size()) + " heads of layer " + std::to_string(l) +
                                               "; a layer keeps at least one");
    for (int64_t h : lowest(scores.heads[size_t(l)], heads, n)) p.removed_heads[size_t(l)].push_back(h);
  }
  if (!o.heads_list.empty()) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(o.heads_list);
    } catch (const nlohmann::json::exception&) {
      throw UsageError(
          "tach prune: --heads must be a fraction or a list in config.json's pruned_heads spelling, "
          "{\"layer\": [head, ...]}, got " +
          o.heads_list);
    }
    usage_check(j.is_object(),
                "tach prune: the --heads list must be an object {\"layer\": [head, ...]}, got " + j.dump());
    std::vector<int64_t> listed_layers;
    for (const auto& [key, heads] : j.items()) {
      const std::vector<int64_t> layer = parse_layer_list(key + ",", L, "--heads");
      usage_check(std::count(listed_layers.begin(), listed_layers.end(), layer.front()) == 0,
                  "tach prune: --heads lists layer " + std::to_string(layer.front()) + " twice");
      listed_layers.push_back(layer.front());
      usage_check(heads.is_array(),
                  "tach prune: --heads layer " + key + " must be a list of heads, got " + heads.dump());
      const int64_t l = layer.front();
      const std::vector<int64_t> present = current_heads(c, l);
      for (const auto& h : heads) {
        usage_check(h.is_number_integer() && std::count(present.begin(), present.end(), h.get<int64_t>()) == 1,
                    "tach prune: --heads names head " + h.dump() + " of layer " + key + ", which has heads " +
                        nlohmann::json(present).dump());
        auto& removed = p.removed_heads[size_t(l)];
        usage_check(std::count(removed.begin(), removed.end(), h.get<int64_t>()) == 0,
                    "tach prune: --heads lists head " + h.dump() + " of layer " + key + " twice");
        removed.push_back(h.get<int64_t>());
      }
    }
  }
  for (int64_t l = 0; l < L; ++l) {
    auto& r = p.removed_heads[size_t(l)];
    std::sort(r.begin(), r.end());
    r.erase(std::unique(r.begin(), r.end()), r.end());
    if (!p.keeps_layer(l)) continue;  // its heads go with it
    usage_check(int64_t(r.size()) < c.num_heads, "tach prune: --heads removes every head of layer " +
                                                     std::to_string(l) + "; a layer keeps at least one");
    p.new_heads += int64_t(r.size()) - (c.pruned_heads.empty() ? 0 : int64_t(c.pruned_heads[size_t(l)].size()));
  }

  plan_ffn(o, family, L, I, scores, p);
  return p;
}

PrunePlan plan_decoder_pruning(const PruneOptions& o, const model::ModelFamily& family, const model::DecoderConfig& c,
                               const UnitScores& scores) {
  check_fraction(o.heads, "--heads");
  check_fraction(o.ffn, "--ffn");
  const model::PruningRule& rule = family.pruning;
  const int64_t L = c.num_layers, KVH = c.num_kv_heads, G = c.num_heads / c.num_kv_heads;
  PrunePlan p;
  p.removed_layers = plan_layers(o, family, L, scores);
  p.removed_heads.assign(size_t(L), {});
  if (o.heads > 0 || !o.heads_list.empty())
    require(rule.kv_groups, family, "fewer attention heads", rule.heads_refusal);
  usage_check(o.heads_list.empty(), "tach prune: --heads takes a fraction for " + std::string(family.name) +
                                        ", not a list: config.json has one num_attention_heads and "
                                        "num_key_value_heads for every layer, so each layer loses as many");
  if (o.heads > 0) {
    // Query heads share their key/value head in groups of G: a group goes whole, or the key/value
    // head would serve fewer query heads than the config's ratio says.
    const int64_t n = std::llround(o.heads * double(KVH));
    usage_check(n < KVH, "tach prune: --heads " + plain_number(o.heads) + " removes all " + std::to_string(KVH) +
                             " key/value groups of each layer (" + std::to_string(G) +
                             " query heads share each key/value head); a layer keeps at least one group");
    std::vector<int64_t> groups(static_cast<size_t>(KVH));
    for (int64_t g = 0; g < KVH; ++g) groups[size_t(g)] = g;
    for (int64_t l = 0; l < L; ++l) {
      p.removed_heads[size_t(l)] = lowest(scores.heads[size_t(l)], groups, n);
      if (p.keeps_layer(l)) p.new_heads += n * G;
    }
    if (double(n) != o.heads * double(KVH))
      p.notes.push_back("--heads " + plain_number(o.heads) + " rounds to whole key/value groups: " + std::to_string(n) +
                        " of " + std::to_string(KVH) + " per layer (" + std::to_string(n * G) + " of " +
                        std::to_string(c.num_heads) + " query heads), as " + std::to_string(G) +
                        " query heads share each key/value head");
  }
  plan_ffn(o, family, L, c.intermediate_size, scores, p);
  return p;
}

}  // namespace tach::prune
