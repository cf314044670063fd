// Reading config.json fields with errors that name the file and the field: what the config
// parsers of every family share (model/config.cc for the encoders, model/decoder_config.cc and
// the families' naming files for the decoders).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tach/error.h"

namespace tach::model {

using json = nlohmann::json;

struct Field {
  const json& root;
  const std::string& source;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(source + ": \"" + key + "\" " + what);
  }
  bool has(const std::string& key) const { return root.contains(key) && !root[key].is_null(); }

  int64_t positive_int(const std::string& key, int64_t fallback, bool required) const {
    if (!has(key)) {
      if (required) throw Error(source + ": missing \"" + key + "\"");
      return fallback;
    }
    const json& v = root[key];
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + std::string(v.type_name()));
    const int64_t x = v.get<int64_t>();
    if (x <= 0 || x > (int64_t(1) << 40)) fail(key, "must be a positive integer, got " + std::to_string(x));
    return x;
  }
  int64_t nonneg_int(const std::string& key, int64_t fallback) const {
    if (!has(key)) return fallback;
    const json& v = root[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(key, "must be a non-negative integer, got " + v.dump());
    return v.get<int64_t>();
  }
  // A dropout rate: a number in [0, 1) (1 would drop everything and scale by infinity).
  float probability(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    const json& v = root[key];
    if (!v.is_number() || !(v.get<double>() >= 0) || !(v.get<double>() < 1))
      fail(key, "must be a dropout probability in [0, 1), got " + v.dump());
    return v.get<float>();
  }
  bool flag(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!root[key].is_boolean()) fail(key, "must be true or false, got " + root[key].dump());
    return root[key].get<bool>();
  }
  // A number >= 0 (attention_dropout, softcaps), or fallback.
  double nonneg_number(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    if (!root[key].is_number() || !(root[key].get<double>() >= 0))
      fail(key, "must be a number >= 0, got " + root[key].dump());
    return root[key].get<double>();
  }
  std::string str(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!root[key].is_string()) fail(key, "must be a string, got " + std::string(root[key].type_name()));
    return root[key].get<std::string>();
  }
  float number(const std::string& key, float fallback) const {
    if (!has(key)) return fallback;
    if (!root[key].is_number()) fail(key, "must be a number, got " + std::string(root[key].type_name()));
    const double v = root[key].get<double>();
    if (!(v > 0 && v < 1)) fail(key, "must be in (0, 1), got " + root[key].dump());
    return static_cast<float>(v);
  }
};

std::string read_text_file(const std::string& path);
json parse_json_text(const std::string& text, const std::string& source);
// A positive number under `key` of obj (config.json or one of its objects), or fallback.
double positive_number(const Field& f, const json& obj, const std::string& key, double fallback);

// id2label / label2id / num_labels / problem_type, checked against each other.
template <typename Config>
void parse_labels(const Field& f, Config& c) {
  // Hugging Face saves id2label (string keys "0".."n-1") and label2id; num_labels is implied.
  if (f.has("id2label")) {
    const json& m = f.root["id2label"];
    if (!m.is_object() || m.empty()) f.fail("id2label", "must be a non-empty object {\"0\": \"LABEL\", ...}");
    c.id2label.assign(m.size(), "");
    std::vector<bool> seen(m.size(), false);
    for (auto it = m.begin(); it != m.end(); ++it) {
      size_t idx = 0;
      try {
        size_t used = 0;
        const long long v = std::stoll(it.key(), &used);
        if (used != it.key().size() || v < 0 || size_t(v) >= m.size()) throw std::out_of_range("");
        idx = size_t(v);
      } catch (const std::exception&) {
        f.fail("id2label",
               "keys must be the class ids 0.." + std::to_string(m.size() - 1) + ", got \"" + it.key() + "\"");
      }
      if (!it->is_string()) f.fail("id2label", "[\"" + it.key() + "\"] must be a string");
      if (seen[idx]) f.fail("id2label", "repeats class id " + it.key());
      seen[idx] = true;
      c.id2label[idx] = it->get<std::string>();
    }
  }
  if (f.has("num_labels")) {
    const int64_t n = f.positive_int("num_labels", 0, true);
    if (c.id2label.empty()) {
      for (int64_t i = 0; i < n; ++i) c.id2label.push_back("LABEL_" + std::to_string(i));
    } else if (n != c.num_labels()) {
      f.fail("num_labels",
             "is " + std::to_string(n) + " but id2label has " + std::to_string(c.num_labels()) + " entries");
    }
  }
  if (c.id2label.empty()) c.id2label = {"LABEL_0", "LABEL_1"};  // transformers' default
  for (size_t i = 0; i < c.id2label.size(); ++i) c.label2id[c.id2label[i]] = int(i);
  if (f.has("label2id")) {
    const json& m = f.root["label2id"];
    if (!m.is_object()) f.fail("label2id", "must be an object {\"LABEL\": id, ...}");
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->is_number_integer()) f.fail("label2id", "[\"" + it.key() + "\"] must be an integer");
      const int64_t id = it->get<int64_t>();
      if (id < 0 || id >= c.num_labels() || c.id2label[size_t(id)] != it.key())
        f.fail("label2id", "maps \"" + it.key() + "\" to " + std::to_string(id) + ", which disagrees with id2label");
    }
  }
  c.problem_type = f.str("problem_type", "");
  if (!c.problem_type.empty() && c.problem_type != "single_label_classification" &&
      c.problem_type != "multi_label_classification" && c.problem_type != "regression")
    f.fail("problem_type", "is \"" + c.problem_type +
                               "\"; expected single_label_classification, multi_label_classification or regression");
}

}  // namespace tach::model
