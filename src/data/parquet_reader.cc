// A Parquet file's columns as records (flat ones; lists of one level when asked): every row
// group, every page, nulls as empty cells;
// the label names of a Hugging Face dataset from the `huggingface` key of the footer's metadata.
#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
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
  // One repeated ancestor (a list, as pyarrow and `datasets` write list<T>): the definition level
  // at which an element exists (below it the list is empty, or it or an ancestor is null), and the
  // name without the list's wrapper groups ("answers.text.list.element" is "answers.text").
  int element_def = 0;
  std::string list_name;
};

std::vector<Leaf> leaves_of(const FileMetaData& m, const std::string& where) {
  check(!m.schema.empty(), where + ": the footer has no schema");
  std::vector<Leaf> out;
  size_t at = 1;
  // Depth first: a group's children follow it; `def`/`rep` count the optional/repeated ancestors.
  // `list` is the name so far without the wrapper groups of a list ("list" and "element", "bag"
  // and "array_element", ...); `wrapper`: the group walked is one.
  std::function<void(int, const std::string&, const std::string&, int, int, int, int, bool)> walk = [&](int children,
                                                                                                        const std::
                                                                                                            string&
                                                                                                                prefix,
                                                                                                        const std::
                                                                                                            string&
                                                                                                                list,
                                                                                                        int def,
                                                                                                        int rep,
                                                                                                        int element_def,
                                                                                                        int depth,
                                                                                                        bool wrapper) {
    for (int i = 0; i < children; ++i) {
      check(at < m.schema.size(), where + ": the schema lists fewer elements than its groups hold");
      const SchemaElement e = m.schema[at++];
      const int d = def + (e.repetition == kOptional || e.repetition == kRepeated);
      const int r = rep + (e.repetition == kRepeated);
      const std::string name = prefix.empty() ? e.name : prefix + "." + e.name;
      // A repeated group of one child is a list's wrapper ("list", "bag"), and so is that child
      // (the element: a value, or a struct whose fields keep their names).
      const bool wraps = e.repetition == kRepeated && e.num_children == 1;
      const bool dropped = wraps || (wrapper && children == 1);
      const std::string list_name = dropped ? list : list.empty() ? e.name : list + "." + e.name;
      check(depth < 64, where + ": the schema nests deeper than 64 levels");
      if (e.num_children > 0)
        walk(e.num_children, name, list_name, d, r, e.repetition == kRepeated ? d : element_def, depth + 1, wraps);
      else out.push_back({name, e, d, r, depth == 0 && r == 0, e.repetition == kRepeated ? d : element_def, list_name});
    }
  };
  walk(m.schema[0].num_children, "", "", 0, 0, 0, 0, false);
  return out;
}

int bit_width(int max_level) {
  int w = 0;
  while ((1 << w) <= max_level) ++w;
  return w;
}

// One column chunk as its pages hold it: per entry its repetition level (0: a new row) and
// definition level (max_def: a value is present), and the present values in order.
struct ChunkEntries {
  std::vector<uint32_t> rep, def;  // empty when the column has no such levels
  std::vector<std::string> values;
  size_t count = 0;
};

// Reads `entries` entries of one column chunk (a flat column's are its rows; a list's, the
// chunk's num_values).
ChunkEntries read_chunk(const uint8_t* file, size_t file_size, const ColumnChunk& chunk, const Leaf& leaf,
                        int64_t entries, const std::string& where) {
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
  ChunkEntries out;
  size_t at = 0;
  while (out.count < size_t(entries)) {
    check(at < size, where + ": the column chunk ends after " + std::to_string(out.count) + " of " +
                         std::to_string(entries) + " values");
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
    check(size_t(h.num_values) <= size_t(entries) - out.count,
          where + (leaf.max_rep > 0 ? ": a page holds more values than its column chunk"
                                    : ": a page holds more values than the row group has rows"));
    std::string raw;
    // The levels: repetition (lists only), then definition (optional or repeated columns).
    const uint8_t* rep_levels = nullptr;
    const uint8_t* def_levels = nullptr;
    size_t rep_size = 0, def_size = 0;
    const uint8_t* data = nullptr;
    size_t data_size = 0;
    if (h.type == kDataPage) {
      raw = decompress(chunk.codec, body, size_t(h.compressed_size), size_t(h.uncompressed_size), where);
      data = reinterpret_cast<const uint8_t*>(raw.data());
      data_size = raw.size();
      // Each level run is a 4-byte length, then the levels.
      const auto take_levels = [&](const uint8_t*& levels, size_t& levels_size, const char* what) {
        check(data_size >= 4, where + ": a data page too short for its " + what + " levels");
        uint32_t n;
        std::memcpy(&n, data, 4);
        check(n <= data_size - 4, where + ": " + what + " levels longer than their page");
        levels = data + 4, levels_size = n;
        data += 4 + n, data_size -= 4 + n;
      };
      if (leaf.max_rep > 0) take_levels(rep_levels, rep_size, "repetition");
      if (leaf.max_def > 0) take_levels(def_levels, def_size, "definition");
    } else {
      const size_t lv = size_t(h.rep_levels_bytes) + size_t(h.def_levels_bytes);
      check(h.rep_levels_bytes >= 0 && h.def_levels_bytes >= 0 && lv <= size_t(h.compressed_size),
            where + ": a v2 page's levels are longer than the page");
      rep_levels = body, rep_size = size_t(h.rep_levels_bytes);
      def_levels = body + h.rep_levels_bytes, def_size = size_t(h.def_levels_bytes);
      const bool compressed = h.is_compressed && chunk.codec != kUncompressed;
      check(size_t(h.uncompressed_size) >= lv, where + ": a v2 page smaller than its levels");
      raw = compressed ? decompress(chunk.codec, body + lv, size_t(h.compressed_size) - lv,
                                    size_t(h.uncompressed_size) - lv, where)
                       : std::string(reinterpret_cast<const char*>(body + lv), size_t(h.compressed_size) - lv);
      data = reinterpret_cast<const uint8_t*>(raw.data());
      data_size = raw.size();
    }
    const size_t n = size_t(h.num_values);
    size_t present = n;
    if (leaf.max_rep > 0) {
      const auto rep = read_hybrid(rep_levels, rep_size, bit_width(leaf.max_rep), n, where);
      out.rep.insert(out.rep.end(), rep.begin(), rep.end());
    }
    if (leaf.max_def > 0) {
      const auto def = read_hybrid(def_levels, def_size, bit_width(leaf.max_def), n, where);
      present = size_t(std::count(def.begin(), def.end(), uint32_t(leaf.max_def)));
      out.def.insert(out.def.end(), def.begin(), def.end());
    }
    auto v = values.decode(h.encoding, data, data_size, present, has_dictionary ? &dictionary : nullptr);
    check(v.size() == present,
          where + ": a page decodes to " + std::to_string(v.size()) + " values of " + std::to_string(present));
    std::move(v.begin(), v.end(), std::back_inserter(out.values));
    out.count += n;
  }
  return out;
}

// A flat column's cells, one per row (null: "").
void flat_cells(ChunkEntries&& e, const Leaf& leaf, std::vector<std::string>& cells) {
  size_t next = 0;
  for (size_t i = 0; i < e.count; ++i)
    cells.push_back(e.def.empty() || e.def[i] == uint32_t(leaf.max_def) ? std::move(e.values[next++]) : std::string());
}

// A value of a list as JSON: numbers and booleans as themselves, byte arrays as strings.
nlohmann::json json_value(std::string&& text, int32_t type) {
  switch (type) {
    case kBoolean: return text == "true";
    case kInt32:
    case kInt64: return text[0] == '-' ? nlohmann::json(std::stoll(text)) : nlohmann::json(std::stoull(text));
    case kFloat:
    case kDouble: return std::stod(text);
    default: return std::move(text);
  }
}

// A list column's cells, one per row: the list as a JSON array (`["EU", "rejects"]`, `[3, 0]`;
// a null element as null), "[]" for an empty list, "" for a null one. Returns the rows read.
int64_t list_cells(ChunkEntries&& e, const Leaf& leaf, std::vector<std::string>& cells, const std::string& where) {
  check(e.count == 0 || e.rep[0] == 0, where + ": the column chunk starts inside a row (repetition level " +
                                           std::to_string(e.count ? e.rep[0] : 0) + ")");
  int64_t rows = 0;
  size_t next = 0, i = 0;
  while (i < e.count) {
    nlohmann::json list = nlohmann::json::array();
    bool null = false;
    do {
      const uint32_t d = e.def[i];
      if (d == uint32_t(leaf.max_def)) list.push_back(json_value(std::move(e.values[next++]), leaf.element.type));
      else if (d >= uint32_t(leaf.element_def)) list.push_back(nullptr);
      else null = d + 1 < uint32_t(leaf.element_def);  // below the list's own level: it or an ancestor is null
      ++i;
    } while (i < e.count && e.rep[i] != 0);
    cells.push_back(null ? std::string() : list.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    ++rows;
  }
  return rows;
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
    const auto is_class_label = [](const nlohmann::json& f) {
      return f.is_object() && f.contains("_type") && f["_type"] == "ClassLabel" && f.contains("names") &&
             f["names"].is_array();
    };
    for (const auto& [column, feature] : features->items()) {
      // A list of labels (conll2003's ner_tags): Sequence (List since datasets 4) of a ClassLabel.
      const nlohmann::json* f = &feature;
      if (f->is_object() && f->contains("feature") && f->contains("_type") &&
          ((*f)["_type"] == "Sequence" || (*f)["_type"] == "List" || (*f)["_type"] == "LargeList"))
        f = &(*f)["feature"];
      if (!is_class_label(*f)) continue;
      std::vector<std::string> names;
      for (const auto& n : (*f)["names"])
        if (n.is_string()) names.push_back(n.get<std::string>());
      out[column] = names;
    }
  }
  return out;
}

}  // namespace

Records read_parquet(const std::string& path, const std::string& bytes, bool lists) {
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
  std::vector<size_t> read;  // indices into leaves of the columns read
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Leaf& leaf = leaves[i];
    if (leaf.flat) {
      read.push_back(i), r.columns.push_back(leaf.name);
    } else if (lists && leaf.max_rep == 1) {
      read.push_back(i), r.columns.push_back(leaf.list_name), r.list_columns.push_back(leaf.list_name);
    } else if (const std::string top = leaf.name.substr(0, leaf.name.find('.'));
               std::find(r.skipped_columns.begin(), r.skipped_columns.end(), top) == r.skipped_columns.end()) {
      r.skipped_columns.push_back(top);  // a list or struct column, named as the file's schema names it
    }
  }
  check(!read.empty(), path + (lists ? ": no flat or list column to read (lists of lists are not read)"
                                     : ": no flat column to read (nested columns only: lists and structs are not "
                                       "read)"));
  std::vector<std::vector<std::string>> cells(read.size());
  int64_t rows = 0;
  for (size_t g = 0; g < m.row_groups.size(); ++g) {
    const RowGroup& group = m.row_groups[g];
    check(group.num_rows >= 0 && group.num_rows <= int64_t(n) * 8,
          path + ": row group " + std::to_string(g) + " claims " + std::to_string(group.num_rows) + " rows");
    for (size_t c = 0; c < read.size(); ++c) {
      const Leaf& leaf = leaves[read[c]];
      const ColumnChunk* chunk = nullptr;
      for (const auto& cc : group.columns) {
        std::string joined;
        for (const auto& part : cc.path) joined += (joined.empty() ? "" : ".") + part;
        if (joined == leaf.name) chunk = &cc;
      }
      check(chunk != nullptr,
            path + ": row group " + std::to_string(g) + " has no chunk for column '" + leaf.name + "'");
      const std::string where = path + " (column '" + leaf.name + "', row group " + std::to_string(g) + ")";
      if (leaf.max_rep == 0) {
        flat_cells(read_chunk(file, n, *chunk, leaf, group.num_rows, where), leaf, cells[c]);
        continue;
      }
      // A list's entries are its elements (and its empty or null lists): the chunk's num_values.
      check(
          chunk->num_values >= group.num_rows && chunk->num_values <= int64_t(n) * 8,
          where + ": " + std::to_string(chunk->num_values) + " values for " + std::to_string(group.num_rows) + " rows");
      const int64_t got =
          list_cells(read_chunk(file, n, *chunk, leaf, chunk->num_values, where), leaf, cells[c], where);
      check(got == group.num_rows, where + ": " + std::to_string(got) + " lists in a row group of " +
                                       std::to_string(group.num_rows) + " rows");
    }
    rows += group.num_rows;
  }
  r.rows.resize(size_t(rows));
  for (int64_t i = 0; i < rows; ++i) {
    r.rows[size_t(i)].reserve(read.size());
    for (auto& column : cells) r.rows[size_t(i)].push_back(std::move(column[size_t(i)]));
    r.row_numbers.push_back(i + 1);
  }
  r.class_names = class_label_names(m);
  return r;
}

}  // namespace tach::data
