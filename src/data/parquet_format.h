// Parquet's file layout as tach reads it: the footer (FileMetaData) and page headers, which are
// Thrift compact-protocol structs (read by data/thrift_compact.h), and the value encodings and
// compressions of the pages. Field numbers and enum values are parquet-format's (parquet.thrift).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tach::data::parquet {

enum PhysicalType : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kInt96 = 3,
  kFloat = 4,
  kDouble = 5,
  kByteArray = 6,
  kFixedLenByteArray = 7
};
enum Repetition : int32_t { kRequired = 0, kOptional = 1, kRepeated = 2 };
enum Codec : int32_t {
  kUncompressed = 0,
  kSnappy = 1,
  kGzip = 2,
  kLzo = 3,
  kBrotli = 4,
  kLz4 = 5,
  kZstd = 6,
  kLz4Raw = 7
};
enum Encoding : int32_t {
  kPlain = 0,
  kPlainDictionary = 2,
  kRle = 3,
  kBitPacked = 4,
  kDeltaBinaryPacked = 5,
  kDeltaLengthByteArray = 6,
  kDeltaByteArray = 7,
  kRleDictionary = 8,
  kByteStreamSplit = 9
};
enum PageType : int32_t { kDataPage = 0, kIndexPage = 1, kDictionaryPage = 2, kDataPageV2 = 3 };

struct SchemaElement {
  std::string name;
  int32_t type = -1;  // a PhysicalType; -1 for a group
  int32_t type_length = 0;
  int32_t repetition = kRequired;
  int32_t num_children = 0;
  int32_t converted_type = -1;  // UINT_8..UINT_64 (11..14) print unsigned
  bool unsigned_int = false;    // logicalType INTEGER with isSigned false
};

struct ColumnChunk {
  int32_t type = -1, codec = kUncompressed;
  std::vector<std::string> path;
  int64_t num_values = 0, total_compressed_size = 0, data_page_offset = -1, dictionary_page_offset = -1;
};

struct RowGroup {
  int64_t num_rows = 0;
  std::vector<ColumnChunk> columns;
};

struct FileMetaData {
  std::vector<SchemaElement> schema;  // depth first; schema[0] is the root
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::vector<std::pair<std::string, std::string>> key_value;
  std::string created_by;
};

struct PageHeader {
  int32_t type = -1, uncompressed_size = 0, compressed_size = 0;
  int32_t num_values = 0, encoding = kPlain;  // of the data, dictionary or v2 header
  // Data page v2 only: the levels lie uncompressed before the values.
  int32_t def_levels_bytes = 0, rep_levels_bytes = 0;
  bool is_compressed = true;
};

// The footer's bytes (between the last data and the length before the closing PAR1), which start
// at byte `file_offset` of the file. Errors name `where`, the field and its byte in the file.
FileMetaData read_file_metadata(const uint8_t* data, size_t size, uint64_t file_offset, const std::string& where);
// The page header at `data` (byte `file_offset` of the file); `consumed` is set to its length in bytes.
PageHeader read_page_header(const uint8_t* data, size_t size, uint64_t file_offset, size_t& consumed,
                            const std::string& where);

// A page's bytes decompressed to exactly `uncompressed_size` bytes.
std::string decompress(int32_t codec, const uint8_t* data, size_t size, size_t uncompressed_size,
                       const std::string& where);
const char* codec_name(int32_t codec);

// The bytes of one page's values and what they decode to: one string per value (integers in
// decimal, floats as the shortest text that reads back the same, booleans true/false, byte arrays
// as they are).
struct ValueReader {
  int32_t type = kByteArray, type_length = 0;
  bool unsigned_int = false;
  std::string where;
  std::vector<std::string> plain(const uint8_t* data, size_t size, size_t count) const;
  std::vector<std::string> decode(int32_t encoding, const uint8_t* data, size_t size, size_t count,
                                  const std::vector<std::string>* dictionary) const;
};

// The RLE / bit-packed hybrid of levels and dictionary indices: `count` values of `bit_width` bits.
std::vector<uint32_t> read_hybrid(const uint8_t* data, size_t size, int bit_width, size_t count,
                                  const std::string& where);

}  // namespace tach::data::parquet
