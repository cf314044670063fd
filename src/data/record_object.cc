// A record of a table read from a file, as the JSON object its nested readers take: Parquet's
// list and struct columns back in their shape (SQuAD's answers{text[], answer_start[]},
// conll2003's tokens[] and ner_tags[]), so one reader serves JSON and Parquet records alike.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "data/records.h"

namespace tach::data {

nlohmann::json record_object(const Records& records, size_t row) {
  nlohmann::json obj = nlohmann::json::object();
  const std::vector<std::string>& cells = records.rows.at(row);
  for (size_t c = 0; c < records.columns.size() && c < cells.size(); ++c) {
    const std::string& name = records.columns[c];
    const bool list =
        std::find(records.list_columns.begin(), records.list_columns.end(), name) != records.list_columns.end();
    nlohmann::json value;  // null: a null list
    if (!list) value = cells[c];
    else if (!cells[c].empty()) value = nlohmann::json::parse(cells[c]);  // written by read_parquet: valid
    // "a.b.c" nests; a name part already holding a value (a flat column named like a struct's
    // parent) keeps the first one.
    nlohmann::json* at = &obj;
    size_t from = 0;
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', from)) {
      nlohmann::json& next = (*at)[name.substr(from, dot - from)];
      if (!next.is_null() && !next.is_object()) break;
      at = &next;
      from = dot + 1;
    }
    if (at->is_object() || at->is_null()) (*at)[name.substr(from)] = std::move(value);
  }
  return obj;
}

}  // namespace tach::data
