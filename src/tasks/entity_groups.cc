// transformers' pipelines/token_classification.py, postprocess with aggregation "none" and
// "simple": gather_pre_entities, aggregate, group_entities, group_sub_entities.
#include "tach/token_classification.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tach/error.h"
#include "tasks/numpy_sum.h"

namespace tach {

namespace {

// Code points before each byte offset: Python's offsets count characters, tach's count bytes.
std::vector<int64_t> chars_before_bytes(const std::string& text) {
  std::vector<int64_t> out(text.size() + 1, 0);
  int64_t chars = 0;
  for (size_t b = 0; b < text.size(); ++b) {
    out[b] = chars;
    if ((static_cast<unsigned char>(text[b]) & 0xC0) != 0x80) ++chars;
  }
  out[text.size()] = chars;
  return out;
}

// The pipeline's get_tag: ("B", type) for B-type, ("I", type) for I-type, else ("I", label).
std::pair<char, std::string> bi_and_type(const std::string& label) {
  if (label.rfind("B-", 0) == 0) return {'B', label.substr(2)};
  if (label.rfind("I-", 0) == 0) return {'I', label.substr(2)};
  return {'I', label};
}

EntityGroup group_of(const std::vector<const TokenEntity*>& members, const TokensToString& join) {
  EntityGroup g;
  // entities[0]["entity"].split("-", 1)[-1]
  const std::string& first = members.front()->entity;
  const size_t dash = first.find('-');
  g.entity_group = dash == std::string::npos ? first : first.substr(dash + 1);
  // np.nanmean of f32 scores: an f32 sum, divided by the count in f64, rounded to f32
  std::vector<float> scores;
  std::vector<std::string> words;
  for (const TokenEntity* t : members) {
    scores.push_back(t->score);
    words.push_back(t->word);
  }
  g.score = float(double(tasks::numpy_sum(scores.data(), scores.size())) / double(scores.size()));
  g.word = join(words);
  g.start = members.front()->start;
  g.end = members.back()->end;
  return g;
}

}  // namespace

std::vector<TokenEntity> token_entities(const std::string& text, const Encoding& encoding, const float* logits,
                                        const std::vector<std::string>& labels, std::optional<int32_t> unk_id,
                                        bool marks_subwords) {
  const size_t T = encoding.ids.size(), L = labels.size();
  check(L > 0, "token classification needs the model's labels (config.json id2label)");
  check(encoding.tokens.size() == T && encoding.offsets.size() == T && encoding.special_tokens_mask.size() == T,
        "token_entities: the encoding's tokens, offsets and special-token mask differ in length");
  const std::vector<int64_t> chars = chars_before_bytes(text);
  std::vector<TokenEntity> out;
  std::vector<float> exps(L);
  for (size_t t = 0; t < T; ++t) {
    if (encoding.special_tokens_mask[t]) continue;
    // softmax in f32 as the pipeline's numpy does: max, exp of the shifted logits, their sum
    const float* row = logits + t * L;
    float max = row[0];
    for (size_t l = 1; l < L; ++l) max = std::max(max, row[l]);
    for (size_t l = 0; l < L; ++l) exps[l] = std::exp(row[l] - max);
    const float sum = tasks::numpy_sum(exps.data(), L);
    size_t best = 0;
    for (size_t l = 1; l < L; ++l)
      if (exps[l] / sum > exps[best] / sum) best = l;
    const auto [b0, b1] = encoding.offsets[t];
    check(b0 <= b1 && b1 <= text.size(), "token_entities: token " + std::to_string(t) + "'s offsets [" +
                                             std::to_string(b0) + ", " + std::to_string(b1) +
                                             ") are outside the text of " + std::to_string(text.size()) + " bytes");
    TokenEntity e;
    e.entity = labels[best];
    e.score = exps[best] / sum;
    e.index = int64_t(t);
    e.start = chars[b0];
    e.end = chars[b1];
    e.scores.resize(L);
    for (size_t l = 0; l < L; ++l) e.scores[l] = exps[l] / sum;
    if (marks_subwords) {
      // len(word) != len(word_ref), in characters
      const std::string& token = encoding.tokens[t];
      const auto token_chars = int64_t(chars_before_bytes(token).back());
      e.is_subword = token_chars != e.end - e.start;
    } else {
      // start > 0 and " " not in sentence[start - 1 : start + 1]
      e.is_subword = b0 > 0 && text[b0 - 1] != ' ' && (b0 >= text.size() || text[b0] != ' ');
    }
    const bool unknown = unk_id && encoding.ids[t] == *unk_id;
    if (unknown) e.is_subword = false;
    e.word = unknown ? text.substr(b0, b1 - b0) : encoding.tokens[t];
    out.push_back(std::move(e));
  }
  return out;
}

Aggregation parse_aggregation(const std::string& name) {
  for (Aggregation a :
       {Aggregation::none, Aggregation::simple, Aggregation::first, Aggregation::average, Aggregation::max})
    if (name == aggregation_name(a)) return a;
  throw UsageError("aggregation '" + name + "' is not one of none, simple, first, average, max");
}

const char* aggregation_name(Aggregation a) {
  switch (a) {
    case Aggregation::none: return "none";
    case Aggregation::simple: return "simple";
    case Aggregation::first: return "first";
    case Aggregation::average: return "average";
    case Aggregation::max: return "max";
  }
  return "?";
}

std::vector<TokenEntity> word_entities(const std::vector<TokenEntity>& tokens, Aggregation strategy,
                                       const std::vector<std::string>& labels, const TokensToString& join) {
  check(strategy == Aggregation::first || strategy == Aggregation::average || strategy == Aggregation::max,
        std::string("word_entities joins words for first, average and max, not ") + aggregation_name(strategy));
  std::vector<TokenEntity> out;
  const auto argmax = [](const std::vector<float>& v) {
    return size_t(std::max_element(v.begin(), v.end()) - v.begin());  // the first maximum, as numpy's
  };
  const auto word_of = [&](size_t first, size_t last) {  // tokens [first, last)
    TokenEntity w;
    std::vector<std::string> pieces;
    for (size_t i = first; i < last; ++i) pieces.push_back(tokens[i].word);
    w.word = join(pieces);
    w.index = tokens[first].index;
    w.start = tokens[first].start;
    w.end = tokens[last - 1].end;
    if (strategy == Aggregation::average) {
      // np.nanmean over the tokens: f32 sums token by token, divided by the count in f64
      std::vector<float> sum = tokens[first].scores;
      for (size_t i = first + 1; i < last; ++i)
        for (size_t l = 0; l < sum.size(); ++l) sum[l] += tokens[i].scores[l];
      w.scores.resize(sum.size());
      for (size_t l = 0; l < sum.size(); ++l) w.scores[l] = float(double(sum[l]) / double(last - first));
    } else {
      size_t pick = first;
      if (strategy == Aggregation::max)
        for (size_t i = first + 1; i < last; ++i)
          if (*std::max_element(tokens[i].scores.begin(), tokens[i].scores.end()) >
              *std::max_element(tokens[pick].scores.begin(), tokens[pick].scores.end()))
            pick = i;
      w.scores = tokens[pick].scores;
    }
    const size_t best = argmax(w.scores);
    w.entity = labels.at(best);
    w.score = w.scores[best];
    return w;
  };
  size_t first = 0;
  for (size_t i = 1; i <= tokens.size(); ++i)
    if (i == tokens.size() || !tokens[i].is_subword) {
      if (i > first) out.push_back(word_of(first, i));
      first = i;
    }
  return out;
}

bool tokenizer_marks_subwords(const std::string& tokenizer_path) {
  namespace fs = std::filesystem;
  const fs::path given(tokenizer_path);
  std::ifstream in(fs::is_directory(given) ? given / "tokenizer.json" : given);
  if (!in) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    const nlohmann::json* model = j.is_object() && j.contains("model") ? &j["model"] : nullptr;
    return model && model->contains("continuing_subword_prefix") && (*model)["continuing_subword_prefix"].is_string() &&
           !(*model)["continuing_subword_prefix"].get<std::string>().empty();
  } catch (const nlohmann::json::exception&) { return false; }
}

std::vector<EntityGroup> group_entities(const std::vector<TokenEntity>& tokens, const TokensToString& join) {
  std::vector<EntityGroup> groups;
  std::vector<const TokenEntity*> members;
  for (const TokenEntity& t : tokens) {
    if (!members.empty()) {
      const auto [bi, type] = bi_and_type(t.entity);
      if (type != bi_and_type(members.back()->entity).second || bi == 'B') {
        groups.push_back(group_of(members, join));
        members.clear();
      }
    }
    members.push_back(&t);
  }
  if (!members.empty()) groups.push_back(group_of(members, join));
  return groups;
}

std::vector<TokenEntity> without_outside(const std::vector<TokenEntity>& tokens) {
  std::vector<TokenEntity> out;
  for (const auto& t : tokens)
    if (t.entity != "O") out.push_back(t);
  return out;
}

std::vector<EntityGroup> without_outside(const std::vector<EntityGroup>& groups) {
  std::vector<EntityGroup> out;
  for (const auto& g : groups)
    if (g.entity_group != "O") out.push_back(g);
  return out;
}

std::optional<int32_t> unknown_token_id(const std::string& tokenizer_path, const Tokenizer& tokenizer) {
  namespace fs = std::filesystem;
  const fs::path given(tokenizer_path);
  const fs::path dir = fs::is_directory(given) ? given : given.parent_path();
  const auto read = [](const fs::path& p) {
    std::ifstream in(p);
    if (!in) return nlohmann::json();
    try {
      return nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) { return nlohmann::json(); }
  };
  // "[UNK]" or {"content": "[UNK]", ...}, as tokenizer_config.json and special_tokens_map.json write it
  const auto token_of = [](const nlohmann::json& j, const char* key) -> std::string {
    if (!j.is_object() || !j.contains(key)) return "";
    const nlohmann::json& v = j[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
    return "";
  };
  std::string unk = token_of(read(dir / "tokenizer_config.json"), "unk_token");
  if (unk.empty()) unk = token_of(read(dir / "special_tokens_map.json"), "unk_token");
  if (unk.empty()) {
    const nlohmann::json tj = read(fs::is_directory(given) ? given / "tokenizer.json" : given);
    if (tj.is_object() && tj.contains("model")) {
      unk = token_of(tj["model"], "unk_token");
      // a Unigram model names its unknown piece by id
      if (unk.empty() && tj["model"].contains("unk_id") && tj["model"]["unk_id"].is_number_integer())
        return tj["model"]["unk_id"].get<int32_t>();
    }
  }
  if (unk.empty()) return std::nullopt;
  return tokenizer.token_to_id(unk);
}

}  // namespace tach
