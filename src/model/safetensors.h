// The safetensors format: an 8-byte little-endian header length N, N bytes of JSON, then the
// tensor bytes. Every claim the header makes is checked against the file before any tensor
// is handed out (docs/formats.md lists the checks).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "tach/tensor.h"

namespace tach::model {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range, relative to the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in header order
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // 8 + N
  uint64_t data_size = 0;
};

// The largest header accepted (the safetensors library's own limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Parses and validates a whole file's bytes. `source` names the file in errors.
SafetensorsHeader parse_safetensors(const uint8_t* data, size_t size, const std::string& source);

class SafetensorsFile {
 public:
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const SafetensorsHeader& header() const { return header_; }
  const SafetensorsEntry* find(const std::string& name) const;
  // A view into the mapping when the bytes are aligned for the dtype (zero copy); an owned
  // copy (category weights) otherwise.
  Tensor tensor(const SafetensorsEntry& entry) const;
  void drop_resident_pages() const { file_->drop_resident_pages(); }

 private:
  std::shared_ptr<core::MappedFile> file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t> index_;
};

}  // namespace tach::model
