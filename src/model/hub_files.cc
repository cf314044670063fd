#include "model/hub_files.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "tach/error.h"

namespace tach::model {

namespace fs = std::filesystem;

namespace {
// A name no other process or thread is using at the same moment, for temporary files.
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}
}  // namespace

FileLock::FileLock(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  check(fd_ >= 0, path + ": cannot open the lock file (" + std::strerror(errno) + ")");
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string why = std::strerror(errno);
    ::close(fd_);
    throw Error(path + ": cannot take the lock (" + why + ")");
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

void make_relative_symlink(const std::string& target, const std::string& link_path) {
  const fs::path link(link_path);
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  check(!ec, link.parent_path().string() + ": cannot create (" + ec.message() + ")");
  const fs::path rel = fs::relative(fs::absolute(target), fs::absolute(link.parent_path()));
  // A link made under a temporary name and renamed over the old one: readers never see none.
  const fs::path tmp = link.string() + ".tmp-link-" + unique_suffix();
  fs::remove(tmp, ec);
  fs::create_symlink(rel, tmp, ec);
  check(!ec, tmp.string() + ": cannot create a symbolic link (" + ec.message() + ")");
  fs::rename(tmp, link, ec);
  check(!ec, link.string() + ": cannot put the link in place (" + ec.message() + ")");
}

namespace {

std::string to_hex(const unsigned char* bytes, unsigned len) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s += hex[bytes[i] >> 4];
    s += hex[bytes[i] & 15];
  }
  return s;
}

std::string digest_of_file(const std::string& path, const EVP_MD* md, const std::string& prefix) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  check(fd >= 0, path + ": cannot read (" + std::strerror(errno) + ")");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), md, nullptr);
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw Error(path + ": read error (" + why + ")");
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), size_t(n));
  }
  ::close(fd);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  return to_hex(out, len);
}

std::string hex_digest(const EVP_MD* md, const std::string& prefix, const std::string& bytes) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), md, nullptr);
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  return to_hex(out, len);
}

}  // namespace

std::string sha256_of_bytes(const std::string& bytes) { return hex_digest(EVP_sha256(), "", bytes); }

std::string git_blob_sha1_of_bytes(const std::string& bytes) {
  return hex_digest(EVP_sha1(), "blob " + std::to_string(bytes.size()) + std::string(1, '\0'), bytes);
}

std::string sha256_of_file(const std::string& path) { return digest_of_file(path, EVP_sha256(), ""); }

std::string git_blob_sha1_of_file(const std::string& path) {
  const auto size = fs::file_size(path);
  return digest_of_file(path, EVP_sha1(), "blob " + std::to_string(size) + std::string(1, '\0'));
}

void write_small_file_atomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp-" + unique_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, tmp + ": cannot write (" + std::strerror(errno) + ")");
  const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const std::string why = std::strerror(errno);
  ::close(fd);
  if (!ok) {
    fs::remove(tmp, ec);
    throw Error(path + ": cannot write (" + why + ")");
  }
  fs::rename(tmp, path, ec);
  check(!ec, path + ": cannot rename into place (" + ec.message() + ")");
}

}  // namespace tach::model
