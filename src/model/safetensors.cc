#include "model/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tach/error.h"

namespace tach::model {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) { throw Error(source + ": " + what); }

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Multiplies without wrapping; false on overflow.
bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

SafetensorsEntry parse_entry(const std::string& source, const std::string& name, const json& j) {
  const std::string where = "tensor '" + name + "'";
  if (!j.is_object()) fail(source, where + ": expected an object with dtype, shape and data_offsets");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!j.contains(key)) fail(source, where + ": missing \"" + key + "\"");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      fail(source, where + ": unknown field \"" + it.key() + "\"");
  SafetensorsEntry e;
  e.name = name;
  const json& dt = j["dtype"];
  if (!dt.is_string()) fail(source, where + ": dtype must be a string");
  if (!parse_safetensors_dtype(dt.get<std::string>(), &e.dtype))
    fail(source, where + ": unknown dtype \"" + dt.get<std::string>() +
                     "\" (known: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
  const json& shape = j["shape"];
  if (!shape.is_array()) fail(source, where + ": shape must be an array of non-negative integers");
  uint64_t numel = 1;
  for (const json& d : shape) {
    if (!d.is_number_unsigned()) fail(source, where + ": shape must be an array of non-negative integers");
    const uint64_t v = d.get<uint64_t>();
    if (v > uint64_t(INT64_MAX) || mul_overflows(numel, v, &numel)) fail(source, where + ": shape is too large");
    e.shape.push_back(static_cast<int64_t>(v));
  }
  const json& off = j["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    fail(source, where + ": data_offsets must be [begin, end] with non-negative integers");
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  if (e.end < e.begin)
    fail(source, where + ": data_offsets end " + std::to_string(e.end) + " is before begin " + std::to_string(e.begin));
  uint64_t bits = 0;
  if (mul_overflows(numel, uint64_t(dtype_bits(e.dtype)), &bits)) fail(source, where + ": shape is too large");
  const uint64_t expected = (bits + 7) / 8;
  if (expected != e.end - e.begin)
    fail(source, where + ": shape " + shape_str(e.shape) + " of " + std::string(dtype_safetensors_name(e.dtype)) +
                     " needs " + std::to_string(expected) + " bytes but data_offsets [" + std::to_string(e.begin) +
                     ", " + std::to_string(e.end) + "] hold " + std::to_string(e.end - e.begin));
  return e;
}

}  // namespace

SafetensorsHeader parse_safetensors(const uint8_t* data, size_t size, const std::string& source) {
  if (size < 8) fail(source, "file is " + std::to_string(size) + " bytes, too short for a safetensors header length");
  const uint64_t n = read_u64_le(data);
  if (n > size - 8)
    fail(source, "header length " + std::to_string(n) + " runs past the end of the " + std::to_string(size) +
                     "-byte file (truncated or not a safetensors file)");
  if (n > kMaxSafetensorsHeader)
    fail(source, "header length " + std::to_string(n) + " exceeds the " + std::to_string(kMaxSafetensorsHeader) +
                     "-byte limit");
  if (n < 2) fail(source, "header of " + std::to_string(n) + " bytes cannot hold a JSON object");
  if (data[8] != '{') fail(source, "header does not start with '{' (not a safetensors file?)");

  json header;
  try {
    header = json::parse(data + 8, data + 8 + n);
  } catch (const json::exception& e) { fail(source, std::string("header is not valid JSON: ") + e.what()); }
  if (!header.is_object()) fail(source, "header must be a JSON object");

  SafetensorsHeader h;
  h.data_offset = 8 + n;
  h.data_size = size - h.data_offset;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) fail(source, "__metadata__ must be an object of strings");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) fail(source, "__metadata__[\"" + m.key() + "\"] must be a string");
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(source, it.key(), *it));
  }

  // The byte ranges must lie inside the data section, not overlap, and cover it exactly
  // (no hidden bytes): sort by begin and walk.
  std::vector<const SafetensorsEntry*> order;
  for (const auto& e : h.entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t cursor = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const SafetensorsEntry* e : order) {
    if (e->end > h.data_size)
      fail(source, "tensor '" + e->name + "': data_offsets [" + std::to_string(e->begin) + ", " +
                       std::to_string(e->end) + "] run past the data section of " + std::to_string(h.data_size) +
                       " bytes (file truncated?)");
    if (e->begin < cursor)
      fail(source, "tensors '" + prev->name + "' and '" + e->name + "' overlap at byte " + std::to_string(e->begin));
    if (e->begin > cursor)
      fail(source, "bytes [" + std::to_string(cursor) + ", " + std::to_string(e->begin) + ") of the data section " +
                       "belong to no tensor");
    cursor = e->end;
    prev = e;
  }
  if (cursor != h.data_size)
    fail(source, "the last " + std::to_string(h.data_size - cursor) + " bytes of the data section belong to no tensor");
  return h;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = core::MappedFile::open(path);
  f.header_ = parse_safetensors(f.file_->data(), f.file_->size(), path);
  for (size_t i = 0; i < f.header_.entries.size(); ++i) f.index_[f.header_.entries[i].name] = i;
  return f;
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.entries[it->second];
}

Tensor SafetensorsFile::tensor(const SafetensorsEntry& entry) const {
  const uint8_t* p = file_->data() + header_.data_offset + entry.begin;
  const size_t align = std::max<size_t>(1, size_t(dtype_bits(entry.dtype) / 8));
  if (reinterpret_cast<uintptr_t>(p) % align == 0)
    return Tensor::from_borrowed(const_cast<uint8_t*>(p), entry.shape, entry.dtype, file_);
  // The header length is free-form, so data can start at any byte; copy rather than read unaligned.
  Tensor t = Tensor::empty(entry.shape, entry.dtype, Device::cpu(), MemoryCategory::weights);
  std::memcpy(t.raw(), p, entry.end - entry.begin);
  return t;
}

}  // namespace tach::model
