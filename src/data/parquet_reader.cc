// A Parquet file's flat columns as records: every row group, every page, nulls as empty cells;
// the label names of a Hugging Face dataset from the `huggingface` key of the footer's metadata.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "data/parquet_format.h"
#include "data/records.h"
#include "tach/error.h"

namespace tach::data {

namespace {

using namespace parquet;

// A leaf column of the schema: where its values go, and how many levels it has.
struct Leaf {
  std::string name;
  SchemaElement element;
  int max_def = 0, max_rep = 0;
  bool flat = true;  // a direct child of the root, not repeated
};

std::vector<Leaf> leaves_of(const FileMetaData& m, const std::string& where) {
  check(!m.schema.empty(), where + ": the footer has no schema");
  std::vector<Leaf> out;
  size_t at = 1;
  // Depth first: a group's children follow it; `def`/`rep` count the optional/repeated ancestors.
  std::function<void(int, const std::string&, int, int, int)> walk = [&](int children, const std::string& prefix,
                                                                         int def, int rep, int depth) {
    for (int i = 0; i < children; ++i) {
      check(at < m.schema.size(), where + ": the schema lists fewer elements than its groups hold");
      const SchemaElement e = m.schema[at++];
      const int d = def + (e.repetition == kOptional || e.repetition == kRepeated);
      const int r = rep + (e.repetition == kRepeated);
      const std::string name = prefix.empty() ? e.name : prefix + "." + e.name;
      check(depth < 64, where + ": the schema nests deeper than 64 levels");
      if (e.num_children > 0) walk(e.num_children, name, d, r, depth + 1);
      else out.push_back({name, e, d, r, depth == 0 && r == 0});
    }
  };
  walk(m.schema[0].num_children, "", 0, 0, 0);
  return out;
}

// One column chunk's values, one per row (null: ""), appended to `cells`.
void read_chunk(const uint8_t* file, size_t file_size, const ColumnChunk& chunk, const Leaf& leaf, int64_t rows,
                std::vector<std::string>& cells, const std::string& where) {
  const int64_t start = chunk.dictionary_page_offset > 0 && chunk.dictionary_page_offset < chunk.data_page_offset
                            ? chunk.dictionary_page_offset
                            : chunk.data_page_offset;
  check(start >= 4 && chunk.total_compressed_size >= 0 && uint64_t(start) <= file_size &&
            uint64_t(chunk.total_compressed_size) <= file_size - uint64_t(start),
        where + ": its column chunk lies outside the file (offset " + std::to_string(start) + ", " +
            std::to_string(chunk.total_compressed_size) + " bytes)");
  const uint8_t* p = file + start;
  const size_t size = size_t(chunk.total_compressed_size);
  ValueReader values{leaf.element.type, leaf.element.type_length, leaf.element.unsigned_int, where};
  std::vector<std::string> dictionary;
  bool has_dictionary = false;
  const size_t first = cells.size();
  size_t at = 0;
  while (cells.size() - first < size_t(rows)) {
    check(at < size, where + ": the column chunk ends after " + std::to_string(cells.size() - first) + " of " +
                         std::to_string(rows) + " values");
    size_t header_bytes = 0;
    const PageHeader h = read_page_header(p + at, size - at, uint64_t(start) + at, header_bytes, where);
    at += header_bytes;
    check(h.compressed_size >= 0 && h.uncompressed_size >= 0 && size_t(h.compressed_size) <= size - at &&
              h.num_values >= 0,
          where + ": a page runs past its column chunk");
    const uint8_t* body = p + at;
    at += size_t(h.compressed_size);
    if (h.type == kDictionaryPage) {
      const std::string raw =
          decompress(chunk.codec, body, size_t(h.compressed_size), size_t(h.uncompressed_size), where);
      dictionary = values.plain(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), size_t(h.num_values));
      has_dictionary = true;
      continue;
    }
    if (h.type != kDataPage && h.type != kDataPageV2) continue;  // index pages: nothing to read
    check(size_t(h.num_values) <= size_t(rows) - (cells.size() - first),
          where + ": a page holds more values than the row group has rows");
    std::string raw;
    const uint8_t* levels = nullptr;  // definition levels, when the column is optional
    size_t levels_size = 0;
    const uint8_t* data = nullptr;
    size_t data_size = 0;
    if (h.type == kDataPage) {
      raw = decompress(chunk.codec, body, size_t(h.compressed_size), size_t(h.uncompressed_size), where);
      data = reinterpret_cast<const uint8_t*>(raw.data());
      data_size = raw.size();
      if (leaf.max_def > 0) {  // a 4-byte length, then the levels
        check(data_size >= 4, where + ": a data page too short for its definition levels");
        uint32_t n;
        std::memcpy(&n, data, 4);
        check(n <= data_size - 4, where + ": definition levels longer than their page");
        levels = data + 4, levels_size = n;
        data += 4 + n, data_size -= 4 + n;
      }
    } else {
      const size_t lv = size_t(h.rep_levels_bytes) + size_t(h.def_levels_bytes);
      check(h.rep_levels_bytes >= 0 && h.def_levels_bytes >= 0 && lv <= size_t(h.compressed_size),
            where + ": a v2 page's levels are longer than the page");
      levels = body + h.rep_levels_bytes, levels_size = size_t(h.def_levels_bytes);
      const bool compressed = h.is_compressed && chunk.codec != kUncompressed;
      check(size_t(h.uncompressed_size) >= lv, where + ": a v2 page smaller than its levels");
      raw = compressed ? decompress(chunk.codec, body + lv, size_t(h.compressed_size) - lv,
                                    size_t(h.uncompressed_size) - lv, where)
                       : std::string(reinterpret_cast<const char*>(body + lv), size_t(h.compressed_size) - lv);
      data = reinterpret_cast<const uint8_t*>(raw.data());
      data_size = raw.size();
    }
    std::vector<uint32_t> def;
    size_t present = size_t(h.num_values);
    if (leaf.max_def > 0) {
      def = read_hybrid(levels, levels_size, 1, size_t(h.num_values), where);
      present = 0;
      for (uint32_t d : def) present += d == uint32_t(leaf.max_def);
    }
    const std::vector<std::string> v =
        values.decode(h.encoding, data, data_size, present, has_dictionary ? &dictionary : nullptr);
    size_t next = 0;
    for (size_t i = 0; i < size_t(h.num_values); ++i)
      cells.push_back(def.empty() || def[i] == uint32_t(leaf.max_def) ? v[next++] : std::string());
  }
}

// The dataset's features as `datasets` wrote them: {"info": {"features": {col: {"_type":
// "ClassLabel", "names": [...]}}}} (older files: the features at the top level). The key is
// advisory: metadata of any other shape names no labels (every member's type checked first, so
// that nothing throws).
std::map<std::string, std::vector<std::string>> class_label_names(const FileMetaData& m) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [key, value] : m.key_value) {
    if (key != "huggingface") continue;
    const auto j = nlohmann::json::parse(value, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    const nlohmann::json* features = nullptr;
    if (j.contains("info") && j["info"].is_object() && j["info"].contains("features"))
      features = &j["info"]["features"];
    else if (j.contains("features")) features = &j["features"];
    if (!features || !features->is_object()) continue;
    for (const auto& [column, f] : features->items())
      if (f.is_object() && f.contains("_type") && f["_type"] == "ClassLabel" && f.contains("names") &&
          f["names"].is_array()) {
        std::vector<std::string> names;
        for (const auto& n : f["names"])
          if (n.is_string()) names.push_back(n.get<std::string>());
        out[column] = names;
      }
  }
  return out;
}

}  // namespace

Records read_parquet(const std::string& path, const std::string& bytes) {
  const auto* file = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  check(n >= 12 && std::memcmp(file, "PAR1", 4) == 0 && std::memcmp(file + n - 4, "PAR1", 4) == 0,
        path + ": not a Parquet file (no PAR1 magic at its start and end" +
            std::string(n >= 4 && std::memcmp(file + n - 4, "PARE", 4) == 0 ? "; it is encrypted Parquet, not read"
                                                                            : "") +
            ")");
  uint32_t footer = 0;
  std::memcpy(&footer, file + n - 8, 4);
  check(footer <= n - 12,
        path + ": a footer of " + std::to_string(footer) + " bytes in a file of " + std::to_string(n));
  const FileMetaData m = read_file_metadata(file + n - 8 - footer, footer, n - 8 - footer, path);
  const std::vector<Leaf> leaves = leaves_of(m, path);
  Records r;
  std::vector<size_t> flat;  // indices into leaves of the columns read
  for (size_t i = 0; i < leaves.size(); ++i)
    if (leaves[i].flat) flat.push_back(i), r.columns.push_back(leaves[i].name);
    else if (const std::string top = leaves[i].name.substr(0, leaves[i].name.find('.'));
             std::find(r.skipped_columns.begin(), r.skipped_columns.end(), top) == r.skipped_columns.end())
      r.skipped_columns.push_back(top);  // a list or struct column, named as the file's schema names it
  check(!flat.empty(), path + ": no flat column to read (nested columns only: lists and structs are not read)");
  std::vector<std::vector<std::string>> cells(flat.size());
  int64_t rows = 0;
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    const RowGroup& group = m.row_groups[g];
    check(group.num_rows >= 0 && group.num_rows <= int64_t(n) * 8,
          path + ": row group " + std::to_string(g) + " claims " + std::to_string(group.num_rows) + " rows");
    for (size_t c = 0; c < flat.size(); ++c) {
      const Leaf& leaf = leaves[flat[c]];
      const ColumnChunk* chunk = nullptr;
      for (const auto& cc : group.columns)
        if (cc.path.size() == 1 && cc.path[0] == leaf.name) chunk = &cc;
      check(chunk != nullptr,
            path + ": row group " + std::to_string(g) + " has no chunk for column '" + leaf.name + "'");
      read_chunk(file, n, *chunk, leaf, group.num_rows, cells[c],
                 path + " (column '" + leaf.name + "', row group " + std::to_string(g) + ")");
    }
    rows += group.num_rows;
  }
  r.rows.resize(size_t(rows));
  for (int64_t i = 0; i < rows; ++i) {
    r.rows[size_t(i)].reserve(flat.size());
    for (auto& column : cells) r.rows[size_t(i)].push_back(std::move(column[size_t(i)]));
    r.row_numbers.push_back(i + 1);
  }
  r.class_names = class_label_names(m);
  return r;
}

}  // namespace tach::data
