// Thrift's compact protocol, the encoding of Parquet's footer and page headers, read from bytes in
// memory. Every count and length is checked against the bytes left before it is used, so a
// malformed or hostile header is an Error naming the field and its byte offset in the file: never
// a read past the end, an integer overflow, deep recursion, or an allocation of the size a header
// claims. (libthrift's reader multiplies a container's claimed size in an int, unchecked, and
// names an unknown type code by its raw byte.) Fields are read by number, as the callers ask for
// them; any other field is skipped, as the protocol allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace tach::data::thrift {

// The compact protocol's type codes. A bool field carries its value in its type (true or false);
// a bool inside a list is a byte holding one of those two codes.
enum class Type : uint8_t {
  stop = 0,
  bool_true = 1,
  bool_false = 2,
  byte = 3,
  i16 = 4,
  i32 = 5,
  i64 = 6,
  double_ = 7,
  binary = 8,
  list = 9,
  set = 10,
  map = 11,
  struct_ = 12
};

// A field's name in messages ("row_groups", "num_rows"), by its number in the .thrift file.
struct FieldName {
  int16_t id;
  const char* name;
};

class CompactReader {
 public:
  // data, size: the encoded bytes, which start at byte `file_offset` of the file. Errors read
  // "<where>: <what> is malformed at byte <N> (<root>.<field path>): <why>".
  CompactReader(const uint8_t* data, size_t size, uint64_t file_offset, std::string where, std::string what,
                const char* root);

  // Calls on_field(id, type) for each field of the struct at the cursor (named from `names` in
  // messages; "field N" otherwise). A field on_field returns false for is skipped.
  template <class OnField>
  void read_struct(std::initializer_list<FieldName> names, OnField on_field);
  // For a list-typed field: on_element() per element when the elements are `want`, else the
  // elements are skipped; false, reading nothing, for a field of another type.
  template <class OnElement>
  bool read_list(Type type, Type want, OnElement on_element);

  // Each reads the field's value into `out` when `type` is the expected one; false, reading
  // nothing, otherwise (the caller then skips the field).
  bool read_i32(Type type, int32_t& out);
  bool read_i64(Type type, int64_t& out);
  bool read_binary(Type type, std::string& out);
  bool read_bool(Type type, bool& out);
  // A list element of binary type.
  std::string binary();

  // The value of a field of this type (in_list: a list's element, where a bool takes a byte).
  void skip(Type type, bool in_list = false);

  size_t consumed() const { return at_; }
  [[noreturn]] void fail(size_t at, const std::string& why) const;

 private:
  struct Segment {
    const char* name;  // a field's name, or null: "field <number>", or "[<number>]" for an element
    int64_t number;
    bool element;
  };
  // Nesting (structs, lists, maps) deeper than this is refused: Parquet's own is a few levels.
  static constexpr int kMaxDepth = 64;
  struct Nested {
    explicit Nested(CompactReader& r);
    ~Nested() { --r.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;
    CompactReader& r;
  };

  uint8_t byte();
  uint64_t varint(int bits);  // an unsigned varint of at most `bits` significant bits
  int64_t zigzag(int bits);
  Type type_of(uint8_t code, size_t at, const char* what) const;
  // Reads the next field header (at `at`, its type code unchecked); false at the struct's stop
  // byte. `last`: the previous field's id.
  bool field_header(int16_t last, int16_t& id, uint8_t& code, size_t& at);
  std::string bytes_left() const;  // "3 bytes are left"
  // A list's or set's header: the element type and a count that the bytes left can hold.
  size_t list_header(Type& element);
  size_t checked_count(uint64_t count, size_t min_bytes_each, size_t at, const char* what) const;
  static size_t min_bytes(Type type);

  const uint8_t* data_;
  size_t size_, at_ = 0;
  uint64_t file_offset_;
  std::string where_, what_;
  const char* root_;
  std::vector<Segment> path_;
  int depth_ = 0;
};

template <class OnField>
void CompactReader::read_struct(std::initializer_list<FieldName> names, OnField on_field) {
  Nested nested(*this);
  int16_t id = 0;
  uint8_t code = 0;
  size_t at = 0;
  while (field_header(id, id, code, at)) {
    const char* name = nullptr;
    for (const FieldName& n : names)
      if (n.id == id) name = n.name;
    path_.push_back({name, id, false});
    const Type type = type_of(code, at, "the field");
    if (!on_field(id, type)) skip(type);
    path_.pop_back();
  }
}

template <class OnElement>
bool CompactReader::read_list(Type type, Type want, OnElement on_element) {
  if (type != Type::list) return false;
  Nested nested(*this);
  Type element = Type::stop;
  const size_t n = list_header(element);
  for (size_t i = 0; i < n; ++i) {
    path_.push_back({nullptr, int64_t(i), true});
    if (element == want) on_element();
    else skip(element, true);
    path_.pop_back();
  }
  return true;
}

}  // namespace tach::data::thrift
