// run.log: everything a command prints to std::cout and std::cerr, kept in the run directory the
// command creates or resumes. Output before the directory is known is held and written first.
// Progress lines redrawn with '\r' and erased with ESC[K are kept as their last state, so the log
// reads as a terminal showed it at the end. A resumed run appends under a new header.
#pragma once

#include <fstream>
#include <memory>
#include <mutex>
#include <streambuf>
#include <string>

namespace tach::cli {

class RunLog {
 public:
  RunLog(int argc, char** argv);  // starts capturing; the command line goes into the header
  ~RunLog();                      // stops capturing, writes the unfinished line
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;
  void attach(const std::string& run_dir);  // the first directory wins; later ones are ignored

 private:
  class Tee;
  friend class Tee;
  void take(const char* s, std::streamsize n);  // called by both streams' tees
  void write_line(const std::string& line);

  std::mutex mu_;
  std::string prefix_;                   // "[job J task T] " in a SLURM array task, else empty
  std::string header_, pending_, line_;  // lines before attach; the unfinished line
  std::ofstream file_;
  bool attached_ = false;
  std::unique_ptr<Tee> out_, err_;
};

}  // namespace tach::cli
