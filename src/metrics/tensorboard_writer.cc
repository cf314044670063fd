// TensorBoardWriter: one event file per writer, appended record by record.
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "metrics/tensorboard_records.h"
#include "tach/error.h"
#include "tach/metrics.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, dir + ": cannot create the TensorBoard directory: " + ec.message());
  const double now = unix_seconds();
  // The pid keeps two writers started in the same second (a sweep and its resume) apart.
  path_ = (fs::path(dir) / ("events.out.tfevents." + std::to_string(int64_t(now)) + "." + host_name() + "." +
                            std::to_string(::getpid()) + ".tach"))
              .string();
  file_ = std::fopen(path_.c_str(), "wb");
  check(file_ != nullptr, path_ + ": cannot create the TensorBoard event file");
  write(metrics::file_version_event(now));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::scalar(const std::string& tag, double value, int64_t step) {
  write(metrics::scalar_event(unix_seconds(), step, tag, float(value)));
}

void TensorBoardWriter::text(const std::string& tag, const std::string& markdown, int64_t step) {
  write(metrics::text_event(unix_seconds(), step, tag, markdown));
}

void TensorBoardWriter::restart_at(int64_t step) { write(metrics::session_start_event(unix_seconds(), step)); }

void TensorBoardWriter::write(const std::string& event) {
  const std::string record = metrics::tfrecord(event);
  std::lock_guard<std::mutex> lock(mu_);
  const bool ok = std::fwrite(record.data(), 1, record.size(), file_) == record.size() && std::fflush(file_) == 0;
  check(ok, path_ + ": write failed (disk full?)");
}

}  // namespace tach
