// Parquet's footer and page headers through libthrift's compact protocol, read field by field
// (no generated code: tach needs a dozen of parquet.thrift's fields, and a field it does not need,
// or one of an unexpected type, is skipped as the protocol allows).
#include <thrift/Thrift.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include <memory>

#include "data/parquet_format.h"
#include "tach/error.h"

namespace tach::data::parquet {

namespace {

using apache::thrift::protocol::TType;
using Transport = apache::thrift::transport::TMemoryBuffer;
using Protocol = apache::thrift::protocol::TCompactProtocolT<Transport>;
namespace tt = apache::thrift::protocol;

// Calls on_field(id, type) for each field of a struct; a field it returns false for is skipped.
template <class OnField>
void read_struct(Protocol& p, OnField on_field) {
  std::string name;
  p.readStructBegin(name);
  for (;;) {
    TType type;
    int16_t id = 0;
    p.readFieldBegin(name, type, id);
    if (type == tt::T_STOP) break;
    if (!on_field(id, type)) p.skip(type);
    p.readFieldEnd();
  }
  p.readStructEnd();
}

// Calls on_element() per element of a list whose elements are `want` (else the list is skipped).
template <class OnElement>
bool read_list(Protocol& p, TType type, TType want, OnElement on_element) {
  if (type != tt::T_LIST) return false;
  TType element;
  uint32_t n = 0;
  p.readListBegin(element, n);
  for (uint32_t i = 0; i < n; ++i)
    if (element == want) on_element();
    else p.skip(element);
  p.readListEnd();
  return true;
}

bool i32(Protocol& p, TType type, int32_t& out) {
  if (type != tt::T_I32) return false;
  p.readI32(out);
  return true;
}

bool i64(Protocol& p, TType type, int64_t& out) {
  if (type != tt::T_I64) return false;
  p.readI64(out);
  return true;
}

bool text(Protocol& p, TType type, std::string& out) {
  if (type != tt::T_STRING) return false;
  p.readBinary(out);
  return true;
}

SchemaElement schema_element(Protocol& p) {
  SchemaElement e;
  read_struct(p, [&](int16_t id, TType type) {
    switch (id) {
      case 1: return i32(p, type, e.type);
      case 2: return i32(p, type, e.type_length);
      case 3: return i32(p, type, e.repetition);
      case 4: return text(p, type, e.name);
      case 5: return i32(p, type, e.num_children);
      case 6: return i32(p, type, e.converted_type);
      case 10:  // logicalType: a union; INTEGER (10) holds bitWidth (1) and isSigned (2)
        if (type != tt::T_STRUCT) return false;
        read_struct(p, [&](int16_t kind, TType kind_type) {
          if (kind != 10 || kind_type != tt::T_STRUCT) return false;
          read_struct(p, [&](int16_t f, TType ft) {
            if (f != 2 || ft != tt::T_BOOL) return false;
            bool is_signed = true;
            p.readBool(is_signed);
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

ColumnChunk column_chunk(Protocol& p) {
  ColumnChunk c;
  read_struct(p, [&](int16_t id, TType type) {
    if (id != 3 || type != tt::T_STRUCT) return false;  // meta_data
    read_struct(p, [&](int16_t f, TType ft) {
      switch (f) {
        case 1: return i32(p, ft, c.type);
        case 3:
          return read_list(p, ft, tt::T_STRING, [&] {
            c.path.emplace_back();
            p.readBinary(c.path.back());
          });
        case 4: return i32(p, ft, c.codec);
        case 5: return i64(p, ft, c.num_values);
        case 7: return i64(p, ft, c.total_compressed_size);
        case 9: return i64(p, ft, c.data_page_offset);
        case 11: return i64(p, ft, c.dictionary_page_offset);
        default: return false;
      }
    });
    return true;
  });
  return c;
}

RowGroup row_group(Protocol& p) {
  RowGroup g;
  read_struct(p, [&](int16_t id, TType type) {
    if (id == 1) return read_list(p, type, tt::T_STRUCT, [&] { g.columns.push_back(column_chunk(p)); });
    if (id == 3) return i64(p, type, g.num_rows);
    return false;
  });
  return g;
}

// Runs `read` over the bytes, turning Thrift's exceptions into tach's errors naming `where`.
template <class Read>
void parse(const uint8_t* data, size_t size, const std::string& where, const char* what, Read read) {
  try {
    auto transport = std::make_shared<Transport>(const_cast<uint8_t*>(data), uint32_t(size));
    Protocol protocol(transport);
    read(protocol, *transport);
  } catch (const apache::thrift::TException& e) {
    throw Error(where + ": the " + what + " is malformed (" + e.what() + ")");
  }
}

}  // namespace

FileMetaData read_file_metadata(const uint8_t* data, size_t size, const std::string& where) {
  FileMetaData m;
  parse(data, size, where, "Parquet footer", [&](Protocol& p, Transport&) {
    read_struct(p, [&](int16_t id, TType type) {
      switch (id) {
        case 2: return read_list(p, type, tt::T_STRUCT, [&] { m.schema.push_back(schema_element(p)); });
        case 3: return i64(p, type, m.num_rows);
        case 4: return read_list(p, type, tt::T_STRUCT, [&] { m.row_groups.push_back(row_group(p)); });
        case 5:
          return read_list(p, type, tt::T_STRUCT, [&] {
            std::pair<std::string, std::string> kv;
            read_struct(p, [&](int16_t f, TType ft) {
              return f == 1 ? text(p, ft, kv.first) : f == 2 && text(p, ft, kv.second);
            });
            m.key_value.push_back(std::move(kv));
          });
        case 6: return text(p, type, m.created_by);
        default: return false;
      }
    });
  });
  return m;
}

PageHeader read_page_header(const uint8_t* data, size_t size, size_t& consumed, const std::string& where) {
  PageHeader h;
  // A header is small; its statistics are bounded by the page. 16 MiB keeps Thrift's own
  // message-size limit (100 MB) out of the way of a large column chunk.
  const size_t window = std::min<size_t>(size, size_t(16) << 20);
  parse(data, window, where, "page header", [&](Protocol& p, Transport& t) {
    read_struct(p, [&](int16_t id, TType type) {
      switch (id) {
        case 1: return i32(p, type, h.type);
        case 2: return i32(p, type, h.uncompressed_size);
        case 3: return i32(p, type, h.compressed_size);
        case 5:  // DataPageHeader: num_values, encoding
        case 7:  // DictionaryPageHeader: num_values, encoding
          if (type != tt::T_STRUCT) return false;
          read_struct(p, [&](int16_t f, TType ft) {
            return f == 1 ? i32(p, ft, h.num_values) : f == 2 && i32(p, ft, h.encoding);
          });
          return true;
        case 8:  // DataPageHeaderV2
          if (type != tt::T_STRUCT) return false;
          read_struct(p, [&](int16_t f, TType ft) {
            switch (f) {
              case 1: return i32(p, ft, h.num_values);
              case 4: return i32(p, ft, h.encoding);
              case 5: return i32(p, ft, h.def_levels_bytes);
              case 6: return i32(p, ft, h.rep_levels_bytes);
              case 7:
                if (ft != tt::T_BOOL) return false;
                p.readBool(h.is_compressed);
                return true;
              default: return false;
            }
          });
          return true;
        default: return false;
      }
    });
    consumed = window - t.available_read();
  });
  return h;
}

}  // namespace tach::data::parquet
