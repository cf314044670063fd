// Any bytes given to the dataset readers (CSV, TSV, JSONL, JSON splits) yield records whose rows
// all have one value per column, or a tach::Error. Nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/records.h"
#include "tach/error.h"

namespace {

void check_shape(const tach::data::Records& r) {
  if (r.rows.size() != r.row_numbers.size()) __builtin_trap();
  for (const auto& row : r.rows)
    if (row.size() != r.columns.size()) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the reader, so that one corpus covers all four.
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0: check_shape(tach::data::read_delimited("fuzz.csv", bytes, ',', "auto", "text")); break;
      case 1: check_shape(tach::data::read_delimited("fuzz.tsv", bytes, '\t', "no", "text")); break;
      case 2: check_shape(tach::data::read_jsonl("fuzz.jsonl", bytes)); break;
      default: check_shape(tach::data::read_json_splits("fuzz.json", bytes, "")); break;
    }
  } catch (const tach::Error&) {}
  return 0;
}
