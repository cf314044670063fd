#include "data/thrift_compact.h"

#include "tach/error.h"

namespace tach::data::thrift {

CompactReader::CompactReader(const uint8_t* data, size_t size, uint64_t file_offset, std::string where,
                             std::string what, const char* root)
    : data_(data),
      size_(size),
      file_offset_(file_offset),
      where_(std::move(where)),
      what_(std::move(what)),
      root_(root) {}

CompactReader::Nested::Nested(CompactReader& reader) : r(reader) {
  if (++r.depth_ > kMaxDepth) {
    --r.depth_;  // the destructor does not run for a constructor that throws
    r.fail(r.at_, "structs and lists nest deeper than " + std::to_string(kMaxDepth) + " levels");
  }
}

void CompactReader::fail(size_t at, const std::string& why) const {
  std::string path = root_;
  for (const Segment& s : path_)
    if (s.element) path += "[" + std::to_string(s.number) + "]";
    else path += s.name ? std::string(".") + s.name : ".field " + std::to_string(s.number);
  throw Error(where_ + ": " + what_ + " is malformed at byte " + std::to_string(file_offset_ + at) + " (" + path +
              "): " + why);
}

std::string CompactReader::bytes_left() const {
  const size_t n = size_ - at_;
  return std::to_string(n) + (n == 1 ? " byte is left" : " bytes are left");
}

uint8_t CompactReader::byte() {
  if (at_ >= size_) fail(at_, "it ends in the middle of a value");
  return data_[at_++];
}

uint64_t CompactReader::varint(int bits) {
  const size_t start = at_;
  uint64_t value = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = byte();
    const uint64_t part = b & 0x7fu;
    // The bits this byte adds must fit in `bits`: a longer varint is corrupt, not a big number.
    if (shift >= bits || (shift > 0 && bits - shift < 7 && (part >> (bits - shift)) != 0))
      fail(start, "a varint longer than a " + std::to_string(bits) + "-bit integer");
    value |= part << shift;
    if (!(b & 0x80u)) return value;
  }
}

int64_t CompactReader::zigzag(int bits) {
  const uint64_t n = varint(bits);
  return int64_t(n >> 1) ^ -int64_t(n & 1);
}

Type CompactReader::type_of(uint8_t code, size_t at, const char* what) const {
  if (code == 0 || code > uint8_t(Type::struct_))
    fail(at, std::string(what) + " has type code " + std::to_string(code) +
                 ", which Thrift's compact protocol does not have (1 to 12)");
  return Type(code);
}

bool CompactReader::field_header(int16_t last, int16_t& id, uint8_t& code, size_t& at) {
  at = at_;
  const uint8_t b = byte();
  code = b & 0x0fu;
  if (code == 0) return false;  // the stop byte
  const int delta = b >> 4;
  const int64_t next = delta ? int64_t(last) + delta : zigzag(16);
  if (next <= 0 || next > INT16_MAX)
    fail(at, "a field numbered " + std::to_string(next) + " (field numbers are 1 to 32767)");
  id = int16_t(next);
  return true;
}

size_t CompactReader::min_bytes(Type type) { return type == Type::double_ ? 8 : 1; }

size_t CompactReader::checked_count(uint64_t count, size_t min_bytes_each, size_t at, const char* what) const {
  // Divided, not multiplied: a claimed count near 2^32 cannot overflow the check.
  if (count > (size_ - at_) / min_bytes_each)
    fail(at, std::string(what) + " of " + std::to_string(count) + " elements, but " + bytes_left());
  return size_t(count);
}

size_t CompactReader::list_header(Type& element) {
  const size_t at = at_;
  const uint8_t b = byte();
  const uint64_t count = (b >> 4) == 15 ? varint(31) : uint64_t(b >> 4);
  if (count == 0) {
    element = Type::stop;  // an empty list's element type is not read, as libthrift does not
    return 0;
  }
  element = type_of(b & 0x0fu, at, "a list's element");
  if (element == Type::bool_false) element = Type::bool_true;  // either code means bool in a list
  return checked_count(count, min_bytes(element), at, "a list");
}

bool CompactReader::read_i32(Type type, int32_t& out) {
  if (type != Type::i32) return false;
  out = int32_t(zigzag(32));
  return true;
}

bool CompactReader::read_i64(Type type, int64_t& out) {
  if (type != Type::i64) return false;
  out = zigzag(64);
  return true;
}

std::string CompactReader::binary() {
  const size_t at = at_;
  const uint64_t n = varint(31);
  if (n > size_ - at_) fail(at, "a string of " + std::to_string(n) + " bytes, but " + bytes_left());
  std::string out(reinterpret_cast<const char*>(data_ + at_), size_t(n));
  at_ += size_t(n);
  return out;
}

bool CompactReader::read_binary(Type type, std::string& out) {
  if (type != Type::binary) return false;
  out = binary();
  return true;
}

bool CompactReader::read_bool(Type type, bool& out) {
  if (type != Type::bool_true && type != Type::bool_false) return false;
  out = type == Type::bool_true;
  return true;
}

void CompactReader::skip(Type type, bool in_list) {
  switch (type) {
    case Type::stop: return;
    case Type::bool_true:
    case Type::bool_false:
      if (in_list) byte();
      return;
    case Type::byte: byte(); return;
    case Type::i16: zigzag(16); return;
    case Type::i32: zigzag(32); return;
    case Type::i64: zigzag(64); return;
    case Type::double_:
      if (size_ - at_ < 8) fail(at_, "it ends in the middle of a double");
      at_ += 8;
      return;
    case Type::binary: binary(); return;
    case Type::list:
    case Type::set: read_list(Type::list, Type::stop, [] {}); return;
    case Type::map: {
      Nested nested(*this);
      const size_t at = at_;
      const uint64_t claimed = varint(31);
      if (claimed == 0) return;  // an empty map has no key and value types
      const uint8_t kv = byte();
      const Type key = type_of(kv >> 4, at, "a map's key"), value = type_of(kv & 0x0fu, at, "a map's value");
      const size_t n = checked_count(claimed, min_bytes(key) + min_bytes(value), at, "a map");
      for (size_t i = 0; i < n; ++i) {
        skip(key, true);
        skip(value, true);
      }
      return;
    }
    case Type::struct_: read_struct({}, [](int16_t, Type) { return false; }); return;
  }
}

}  // namespace tach::data::thrift
