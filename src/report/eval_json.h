// Fields of tach eval's files (accuracy.json, token_classification.json, question_answering.json)
// as report.html and tach compare read them: a field may be absent, or null where the figure does
// not exist, and neither is an error there.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace tach::report {

// obj[key] as a number; NaN where it is absent or null (seqeval's average over no entity types).
inline double field_number(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : std::nan("");
}

// obj[key] as text; "" where it is absent or not text.
inline std::string field_text(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A pass's name: its "device/dtype".
inline std::string pass_name(const nlohmann::json& pass) {
  return field_text(pass, "device") + "/" + field_text(pass, "dtype");
}

}  // namespace tach::report
