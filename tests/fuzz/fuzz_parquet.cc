// Any bytes given as a Parquet file yield records or a tach::Error. Nothing else: no crash, no
// read outside the file, no allocation a malformed header asks for beyond its bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "data/records.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto r = tach::data::read_parquet("fuzz.parquet", std::string(reinterpret_cast<const char*>(data), size));
    for (const auto& row : r.rows)
      if (row.size() != r.columns.size()) __builtin_trap();  // every row has every column
  } catch (const tach::Error&) {}
  return 0;
}
