// JSONL and JSON split files into Records.
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/records.h"
#include "tach/error.h"

namespace tach::data {

namespace {

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();  // numbers and booleans as JSON writes them: 1, true
}

// Adds an object's values under their keys, growing the column list as new keys appear.
void add_object(Records& r, std::map<std::string, size_t>& index, const nlohmann::json& obj, int64_t number) {
  std::vector<std::string> row(r.columns.size());
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    auto [pos, inserted] = index.try_emplace(it.key(), r.columns.size());
    if (inserted) {
      r.columns.push_back(it.key());
      for (auto& old : r.rows) old.emplace_back();
      row.emplace_back();
    }
    row[pos->second] = value_text(it.value());
  }
  r.rows.push_back(std::move(row));
  r.row_numbers.push_back(number);
}

}  // namespace

Records read_jsonl(const std::string& path, const std::string& bytes) {
  Records r;
  std::map<std::string, size_t> index;
  std::istringstream in(bytes);
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ":" + std::to_string(lineno) + ": not JSON (" + e.what() + ")");
    }
    check(j.is_object(), path + ":" + std::to_string(lineno) + ": expected a JSON object per line");
    add_object(r, index, j, lineno);
  }
  return r;
}

Records read_json_splits(const std::string& path, const std::string& bytes, const std::string& split) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes);
  } catch (const nlohmann::json::exception& e) { throw Error(path + ": not JSON (" + e.what() + ")"); }
  std::string names;
  if (j.is_object())
    for (auto it = j.begin(); it != j.end(); ++it) names += (names.empty() ? "" : ", ") + it.key();
  check(j.is_object(), path + ": expected a JSON object of splits ({\"test\": [...], ...})");
  std::string chosen = split;
  if (chosen.empty()) {
    check(j.contains("test"), path + ": no split chosen and none is called 'test'; choose one of: " + names);
    chosen = "test";
  }
  check(j.contains(chosen), path + ": no split '" + chosen + "'; the file has: " + names);
  const nlohmann::json& items = j[chosen];
  check(items.is_array(), path + ": split '" + chosen + "' is not a list");
  Records r;
  r.split = chosen;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < items.size(); ++i) {
    const auto& item = items[i];
    const std::string where = path + ": " + chosen + "[" + std::to_string(i) + "]";
    if (item.is_array()) {
      // CLINC150: [text, intent]
      check(item.size() == 2, where + ": expected [text, label], got " + std::to_string(item.size()) + " values");
      if (r.columns.empty()) r.columns = {"0", "1"};
      check(r.columns.size() == 2 && r.columns[0] == "0", where + ": a pair among objects");
      r.rows.push_back({value_text(item[0]), value_text(item[1])});
      r.row_numbers.push_back(static_cast<int64_t>(i + 1));
    } else {
      check(item.is_object(), where + ": expected [text, label] or an object");
      check(r.columns.empty() || r.columns[0] != "0" || index.count("0"), where + ": an object among pairs");
      add_object(r, index, item, static_cast<int64_t>(i + 1));
    }
  }
  return r;
}

}  // namespace tach::data
