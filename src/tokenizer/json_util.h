// Reading tokenizer.json with errors that name the file and the JSON path
// ("tokenizer.json: model.merges[1203]: expected \"a b\" or [\"a\", \"b\"]").
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "tach/error.h"

namespace tach::tokenizer {

using json = nlohmann::json;

struct JsonAt {
  const json& value;
  std::string file;
  std::string path;  // "normalizer.normalizers[2]"

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file + ": " + (path.empty() ? std::string("(top level)") : path) + ": " + what);
  }
  bool has(const std::string& key) const { return value.is_object() && value.contains(key) && !value[key].is_null(); }
  JsonAt at(const std::string& key) const {
    if (!value.is_object() || !value.contains(key)) fail("missing \"" + key + "\"");
    return {value[key], file, path.empty() ? key : path + "." + key};
  }
  JsonAt at(size_t i) const { return {value[i], file, path + "[" + std::to_string(i) + "]"}; }
  std::string str(const std::string& key) const {
    JsonAt v = at(key);
    if (!v.value.is_string()) v.fail("expected a string, got " + std::string(v.value.type_name()));
    return v.value.get<std::string>();
  }
  std::string str_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? str(key) : fallback;
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    JsonAt v = at(key);
    if (!v.value.is_boolean()) v.fail("expected true or false, got " + v.value.dump());
    return v.value.get<bool>();
  }
  int64_t integer_or(const std::string& key, int64_t fallback) const {
    if (!has(key)) return fallback;
    JsonAt v = at(key);
    if (!v.value.is_number_integer()) v.fail("expected an integer, got " + v.value.dump());
    return v.value.get<int64_t>();
  }
  std::string type() const { return str("type"); }
  void expect_array() const {
    if (!value.is_array()) fail("expected an array, got " + std::string(value.type_name()));
  }
};

}  // namespace tach::tokenizer
