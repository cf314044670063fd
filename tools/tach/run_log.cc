#include "run_log.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

namespace tach::cli {

// A stream buffer that passes every byte to the stream's own buffer and to the log.
class RunLog::Tee : public std::streambuf {
 public:
  Tee(std::ostream& stream, RunLog& log) : stream_(stream), original_(stream.rdbuf()), log_(log) {
    stream_.rdbuf(this);
  }
  ~Tee() override { stream_.rdbuf(original_); }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = char(c);
    log_.take(&ch, 1);
    return original_->sputc(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    log_.take(s, n);
    return original_->sputn(s, n);
  }
  int sync() override { return original_->pubsync(); }

 private:
  std::ostream& stream_;
  std::streambuf* original_;
  RunLog& log_;
};

RunLog::RunLog(int argc, char** argv) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  header_ = std::string("=== ") + when + " tach";
  for (int i = 1; i < argc; ++i) header_ += std::string(" ") + argv[i];
  // The tasks of a SLURM job array share the run's log: each line says whose it is.
  const char* job = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task = std::getenv("SLURM_ARRAY_TASK_ID");
  if (job && task) {
    prefix_ = std::string("[job ") + job + " task " + task + "] ";
    header_ += std::string(" (") + prefix_.substr(1, prefix_.size() - 3) + ")";
  }
  out_ = std::make_unique<Tee>(std::cout, *this);
  err_ = std::make_unique<Tee>(std::cerr, *this);
}

RunLog::~RunLog() {
  err_.reset();
  out_.reset();
  std::lock_guard<std::mutex> lock(mu_);
  if (!line_.empty()) write_line(line_);
}

void RunLog::attach(const std::string& run_dir) {
  std::lock_guard<std::mutex> lock(mu_);
  if (attached_) return;
  attached_ = true;
  file_.open(std::filesystem::path(run_dir) / "run.log", std::ios::app);
  if (!file_) return;  // the run goes on without its log; its results are what matter
  file_ << header_ << "\n" << pending_ << std::flush;
  pending_.clear();
}

void RunLog::take(const char* s, std::streamsize n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::streamsize i = 0; i < n; ++i) {
    const char c = s[i];
    if (c == '\n') {
      write_line(line_);
      line_.clear();
    } else if (c == '\r') {
      line_.clear();  // the line is redrawn: keep what it shows last
    } else if (c == '\033' && i + 2 < n && s[i + 1] == '[' && s[i + 2] == 'K') {
      i += 2;  // erase to the end of the line: the cursor is at line_'s end already
    } else {
      line_ += c;
    }
  }
}

void RunLog::write_line(const std::string& line) {
  if (!attached_) {
    // Held until a run directory appears; a command that never makes one (tach classify of a
    // large file) keeps at most this much.
    constexpr size_t kMaxPending = size_t(4) << 20;
    if (pending_.size() + line.size() < kMaxPending) pending_ += prefix_ + line + "\n";
  } else if (file_) {
    file_ << prefix_ + line + "\n" << std::flush;  // one write: lines of tasks appending at once stay whole
  }
}

}  // namespace tach::cli
