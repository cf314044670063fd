// The file-system half of the Hub cache: its paths, the per-blob lock, relative symlinks, and
// the digests a blob is verified with.
#pragma once

#include <string>

namespace tach::model {

// An exclusive flock on path (created with its directories), held until destruction. The same
// lock file huggingface_hub's filelock takes: <cache>/.locks/<repo folder>/<etag>.lock.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// link_path → a relative path to target (so a moved cache keeps working), replacing an existing link.
void make_relative_symlink(const std::string& target, const std::string& link_path);

std::string sha256_of_file(const std::string& path);         // lower-case hex
std::string git_blob_sha1_of_file(const std::string& path);  // sha1("blob <size>\0" + bytes): the git object id
std::string sha256_of_bytes(const std::string& bytes);
std::string git_blob_sha1_of_bytes(const std::string& bytes);

// Text written to path through a temporary name and a rename.
void write_small_file_atomically(const std::string& path, const std::string& text);

}  // namespace tach::model
