// Dataset labels to model ids: by name first (id2label), then as an integer id in range.
#include <charconv>
#include <map>

#include <nlohmann/json.hpp>

#include "tach/dataset.h"
#include "tach/error.h"

namespace tach {

namespace {

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

}  // namespace

LabelMap::LabelMap(std::vector<std::string> model_labels) : labels_(std::move(model_labels)) {
  check(!labels_.empty(), "the model has no labels: accuracy needs a sequence classifier");
  for (size_t i = 0; i < labels_.size(); ++i) by_name_.emplace(labels_[i], static_cast<int32_t>(i));
}

int32_t LabelMap::id_of(const std::string& label) const {
  auto it = by_name_.find(label);
  if (it != by_name_.end()) return it->second;
  int64_t v = -1;
  const char* end = label.data() + label.size();
  const auto [p, ec] = std::from_chars(label.data(), end, v);
  if (ec == std::errc() && p == end && v >= 0 && v < static_cast<int64_t>(labels_.size())) return int32_t(v);
  return -1;
}

void LabelMap::throw_unknown(const std::map<std::string, int64_t>& unknown, const std::string& dataset_name) const {
  std::string listed, model;
  int shown = 0;
  for (const auto& [label, count] : unknown) {
    if (shown++ == 12) {
      listed += ", ... (" + std::to_string(unknown.size()) + " in all)";
      break;
    }
    listed += (listed.empty() ? "'" : ", '") + label + "' (" + std::to_string(count) + "x)";
  }
  for (size_t i = 0; i < labels_.size() && i < 40; ++i) model += (i ? ", " : "") + std::to_string(i) + "=" + labels_[i];
  if (labels_.size() > 40) model += ", ...";
  throw Error(dataset_name + ": labels the model does not know: " + listed + ". The model's " +
              std::to_string(labels_.size()) + " labels (id=name, from config.json id2label): " + model +
              ". Labels match by name or as an integer id.");
}

std::vector<int32_t> LabelMap::ids_of(const std::vector<Example>& examples, const std::string& dataset_name) const {
  std::vector<int32_t> ids;
  ids.reserve(examples.size());
  std::map<std::string, int64_t> unknown;
  for (const auto& e : examples) {
    ids.push_back(id_of(e.label));
    if (ids.back() < 0) ++unknown[e.label];
  }
  if (!unknown.empty()) throw_unknown(unknown, dataset_name);
  return ids;
}

std::vector<std::vector<int32_t>> LabelMap::label_sets_of(const std::vector<Example>& examples,
                                                          const std::string& dataset_name) const {
  std::vector<std::vector<int32_t>> sets;
  sets.reserve(examples.size());
  std::map<std::string, int64_t> unknown;
  for (const auto& e : examples) {
    std::vector<int32_t> ids;
    for (const auto& label : split_label_set(e.label, dataset_name + ": record " + std::to_string(e.source_row))) {
      const int32_t id = id_of(label);
      if (id < 0) ++unknown[label];
      else ids.push_back(id);
    }
    sets.push_back(std::move(ids));
  }
  if (!unknown.empty()) throw_unknown(unknown, dataset_name);
  return sets;
}

std::vector<std::string> split_label_set(const std::string& cell, const std::string& where) {
  const std::string s = trimmed(cell);
  std::vector<std::string> out;
  if (s.empty()) return out;
  if (s.front() == '[') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception&) {
      throw Error(where + ": the label set " + s + " starts with '[' but is not a JSON list");
    }
    check(j.is_array(), where + ": the label set " + s + " is not a JSON list");
    for (const auto& v : j) {
      check(v.is_string() || v.is_number_integer(),
            where + ": the label set " + s + " holds " + v.dump() + "; expected label names or integer ids");
      out.push_back(v.is_string() ? v.get<std::string>() : std::to_string(v.get<int64_t>()));
    }
    return out;
  }
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') {
      const std::string part = trimmed(s.substr(start, i - start));
      check(!part.empty(), where + ": the label set \"" + s + "\" has an empty name between commas");
      out.push_back(part);
      start = i + 1;
    }
  return out;
}

}  // namespace tach
