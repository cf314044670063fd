// A read-only memory map of a whole file. Tensors viewing into it hold a shared_ptr to it,
// so the mapping lives exactly as long as the last view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tach::core {

class MappedFile {
 public:
  // Throws tach::Error naming the path and the system error when the file cannot be mapped.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops this mapping's pages from the process's resident set (madvise MADV_DONTNEED). The
  // bytes stay in the page cache, and a later read faults them back in without I/O: after
  // weights were packed into their own buffers, the file's pages need not stay resident too.
  void drop_resident_pages() const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tach::core
