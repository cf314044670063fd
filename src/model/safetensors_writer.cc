#include "model/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tach/error.h"

namespace tach::model {

namespace {

namespace fs = std::filesystem;

const char* safetensors_dtype(DType d) {
  switch (d) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
    default: return nullptr;
  }
}

// A file descriptor that writes everything or throws, and is closed (and, unless kept, removed)
// on the way out.
class TempFile {
 public:
  explicit TempFile(std::string final_path)
      : final_(std::move(final_path)), tmp_(final_ + ".tmp-" + std::to_string(::getpid())) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create");
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("write failed");
      p += w;
      n -= size_t(w);
    }
  }
  void commit() {
    if (::fsync(fd_) != 0) fail("flush to disk failed");
    if (::close(fd_) != 0) {
      fd_ = -1;
      fail("close failed");
    }
    fd_ = -1;
    if (::rename(tmp_.c_str(), final_.c_str()) != 0) fail("rename into place failed");
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    const int e = errno;
    throw Error(final_ + ": " + what + " (" + std::strerror(e) + ")" +
                (e == ENOSPC ? "; the disk is full: nothing was replaced, free space and retry" : ""));
  }
  std::string final_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    check(t.defined() && t.is_contiguous(), path + ": tensor '" + name + "' must be contiguous to be saved");
    const char* dt = safetensors_dtype(t.dtype());
    check(dt != nullptr, path + ": tensor '" + name + "' has a dtype safetensors cannot hold");
    header[name] = {{"dtype", dt}, {"shape", t.shape()}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));
  TempFile out(path);
  out.write(len, 8);
  out.write(text.data(), text.size());
  // A GPU's tensors (a model trained there: weights, AdamW moments) pass through host memory one
  // at a time, so that saving needs no host copy of the whole model.
  for (const auto& [name, t] : tensors) {
    const Tensor host = t.on(Device::cpu(), MemoryCategory::workspace);
    out.write(host.raw(), host.nbytes());
  }
  out.commit();
}

void write_file_atomically(const std::string& path, const std::string& text) {
  TempFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

void write_directory_atomically(const std::string& dir, const std::function<void(const std::string& tmp)>& fill) {
  const fs::path target = fs::absolute(dir);
  const fs::path tmp = target.string() + ".tmp-" + std::to_string(::getpid());
  const fs::path old = target.string() + ".old-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  check(!ec, tmp.string() + ": cannot create (" + ec.message() + ")");
  try {
    fill(tmp.string());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  const bool replacing = fs::exists(target);
  if (replacing) {
    fs::rename(target, old, ec);
    check(!ec, target.string() + ": cannot move the previous version aside (" + ec.message() + ")");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    if (replacing) fs::rename(old, target);
    throw Error(target.string() + ": cannot rename the new version into place (" + ec.message() + ")");
  }
  if (replacing) fs::remove_all(old, ec);
}

void copy_tokenizer_files(const std::string& src_dir, const std::string& dst_dir) {
  namespace fs = std::filesystem;
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                           "vocab.json", "merges.txt"}) {
    const fs::path src = fs::path(src_dir) / name;
    std::error_code ec;
    if (!fs::exists(src)) continue;
    fs::copy_file(src, fs::path(dst_dir) / name, fs::copy_options::overwrite_existing, ec);
    check(!ec, (fs::path(dst_dir) / name).string() + ": cannot copy the tokenizer file (" + ec.message() + ")");
  }
}

}  // namespace tach::model
