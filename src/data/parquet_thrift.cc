// Parquet's footer and page headers, read field by field through tach's compact-protocol reader
// (data/thrift_compact.h; no generated code: tach needs a dozen of parquet.thrift's fields, and a
// field it does not need, or one of an unexpected type, is skipped as the protocol allows).
#include "data/parquet_format.h"
#include "data/thrift_compact.h"

namespace tach::data::parquet {

namespace {

using thrift::CompactReader;
using thrift::Type;

SchemaElement schema_element(CompactReader& r) {
  SchemaElement e;
  r.read_struct({{1, "type"},
                 {2, "type_length"},
                 {3, "repetition_type"},
                 {4, "name"},
                 {5, "num_children"},
                 {6, "converted_type"},
                 {10, "logicalType"}},
                [&](int16_t id, Type type) {
                  switch (id) {
                    case 1: return r.read_i32(type, e.type);
                    case 2: return r.read_i32(type, e.type_length);
                    case 3: return r.read_i32(type, e.repetition);
                    case 4: return r.read_binary(type, e.name);
                    case 5: return r.read_i32(type, e.num_children);
                    case 6: return r.read_i32(type, e.converted_type);
                    case 10:  // logicalType: a union; INTEGER (10) holds bitWidth (1) and isSigned (2)
                      if (type != Type::struct_) return false;
                      r.read_struct({{10, "INTEGER"}}, [&](int16_t kind, Type kind_type) {
                        if (kind != 10 || kind_type != Type::struct_) return false;
                        r.read_struct({{1, "bitWidth"}, {2, "isSigned"}}, [&](int16_t f, Type ft) {
                          bool is_signed = true;
                          if (f != 2 || !r.read_bool(ft, is_signed)) return false;
                          e.unsigned_int = !is_signed;
                          return true;
                        });
                        return true;
                      });
                      return true;
                    default: return false;
                  }
                });
  if (e.converted_type >= 11 && e.converted_type <= 14) e.unsigned_int = true;
  return e;
}

ColumnChunk column_chunk(CompactReader& r) {
  ColumnChunk c;
  r.read_struct({{3, "meta_data"}}, [&](int16_t id, Type type) {
    if (id != 3 || type != Type::struct_) return false;
    r.read_struct({{1, "type"},
                   {3, "path_in_schema"},
                   {4, "codec"},
                   {5, "num_values"},
                   {7, "total_compressed_size"},
                   {9, "data_page_offset"},
                   {11, "dictionary_page_offset"}},
                  [&](int16_t f, Type ft) {
                    switch (f) {
                      case 1: return r.read_i32(ft, c.type);
                      case 3: return r.read_list(ft, Type::binary, [&] { c.path.push_back(r.binary()); });
                      case 4: return r.read_i32(ft, c.codec);
                      case 5: return r.read_i64(ft, c.num_values);
                      case 7: return r.read_i64(ft, c.total_compressed_size);
                      case 9: return r.read_i64(ft, c.data_page_offset);
                      case 11: return r.read_i64(ft, c.dictionary_page_offset);
                      default: return false;
                    }
                  });
    return true;
  });
  return c;
}

RowGroup row_group(CompactReader& r) {
  RowGroup g;
  r.read_struct({{1, "columns"}, {3, "num_rows"}}, [&](int16_t id, Type type) {
    if (id == 1) return r.read_list(type, Type::struct_, [&] { g.columns.push_back(column_chunk(r)); });
    if (id == 3) return r.read_i64(type, g.num_rows);
    return false;
  });
  return g;
}

}  // namespace

FileMetaData read_file_metadata(const uint8_t* data, size_t size, uint64_t file_offset, const std::string& where) {
  FileMetaData m;
  CompactReader r(data, size, file_offset, where, "the Parquet footer", "FileMetaData");
  r.read_struct({{2, "schema"}, {3, "num_rows"}, {4, "row_groups"}, {5, "key_value_metadata"}, {6, "created_by"}},
                [&](int16_t id, Type type) {
                  switch (id) {
                    case 2: return r.read_list(type, Type::struct_, [&] { m.schema.push_back(schema_element(r)); });
                    case 3: return r.read_i64(type, m.num_rows);
                    case 4: return r.read_list(type, Type::struct_, [&] { m.row_groups.push_back(row_group(r)); });
                    case 5:
                      return r.read_list(type, Type::struct_, [&] {
                        std::pair<std::string, std::string> kv;
                        r.read_struct({{1, "key"}, {2, "value"}}, [&](int16_t f, Type ft) {
                          return f == 1 ? r.read_binary(ft, kv.first) : f == 2 && r.read_binary(ft, kv.second);
                        });
                        m.key_value.push_back(std::move(kv));
                      });
                    case 6: return r.read_binary(type, m.created_by);
                    default: return false;
                  }
                });
  return m;
}

PageHeader read_page_header(const uint8_t* data, size_t size, uint64_t file_offset, size_t& consumed,
                            const std::string& where) {
  PageHeader h;
  CompactReader r(data, size, file_offset, where, "a page header", "PageHeader");
  r.read_struct({{1, "type"},
                 {2, "uncompressed_page_size"},
                 {3, "compressed_page_size"},
                 {5, "data_page_header"},
                 {7, "dictionary_page_header"},
                 {8, "data_page_header_v2"}},
                [&](int16_t id, Type type) {
                  switch (id) {
                    case 1: return r.read_i32(type, h.type);
                    case 2: return r.read_i32(type, h.uncompressed_size);
                    case 3: return r.read_i32(type, h.compressed_size);
                    case 5:  // DataPageHeader: num_values, encoding
                    case 7:  // DictionaryPageHeader: num_values, encoding
                      if (type != Type::struct_) return false;
                      r.read_struct({{1, "num_values"}, {2, "encoding"}}, [&](int16_t f, Type ft) {
                        return f == 1 ? r.read_i32(ft, h.num_values) : f == 2 && r.read_i32(ft, h.encoding);
                      });
                      return true;
                    case 8:  // DataPageHeaderV2
                      if (type != Type::struct_) return false;
                      r.read_struct({{1, "num_values"},
                                     {4, "encoding"},
                                     {5, "definition_levels_byte_length"},
                                     {6, "repetition_levels_byte_length"},
                                     {7, "is_compressed"}},
                                    [&](int16_t f, Type ft) {
                                      switch (f) {
                                        case 1: return r.read_i32(ft, h.num_values);
                                        case 4: return r.read_i32(ft, h.encoding);
                                        case 5: return r.read_i32(ft, h.def_levels_bytes);
                                        case 6: return r.read_i32(ft, h.rep_levels_bytes);
                                        case 7: return r.read_bool(ft, h.is_compressed);
                                        default: return false;
                                      }
                                    });
                      return true;
                    default: return false;
                  }
                });
  consumed = r.consumed();
  return h;
}

}  // namespace tach::data::parquet
