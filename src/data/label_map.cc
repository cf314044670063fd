// Dataset labels to model ids: by name first (id2label), then as an integer id in range.
#include <charconv>
#include <map>

#include "tach/dataset.h"
#include "tach/error.h"

namespace tach {

LabelMap::LabelMap(std::vector<std::string> model_labels) : labels_(std::move(model_labels)) {
  check(!labels_.empty(), "the model has no labels: accuracy needs a sequence classifier");
}

std::vector<int32_t> LabelMap::ids_of(const std::vector<Example>& examples, const std::string& dataset_name) const {
  std::map<std::string, int32_t> by_name;
  for (size_t i = 0; i < labels_.size(); ++i) by_name.emplace(labels_[i], static_cast<int32_t>(i));
  std::vector<int32_t> ids;
  ids.reserve(examples.size());
  std::map<std::string, int64_t> unknown;
  for (const auto& e : examples) {
    auto it = by_name.find(e.label);
    if (it != by_name.end()) {
      ids.push_back(it->second);
      continue;
    }
    int64_t v = -1;
    const char* end = e.label.data() + e.label.size();
    const auto [p, ec] = std::from_chars(e.label.data(), end, v);
    if (ec == std::errc() && p == end && v >= 0 && v < static_cast<int64_t>(labels_.size())) {
      ids.push_back(static_cast<int32_t>(v));
      continue;
    }
    ++unknown[e.label];
    ids.push_back(-1);
  }
  if (!unknown.empty()) {
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
  return ids;
}

}  // namespace tach
