// The run directory. results.jsonl is append-only: each point is one line, written with a
// single write() and fsync()ed, so a kill leaves every finished point and at most one torn line.
// A SLURM array task appends to its own results.d/<plan>-task-<T>.jsonl instead, so that tasks on
// several nodes never share a file; reading merges them all.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "tach/error.h"
#include "tach/metrics.h"
#include "tach/runtime.h"

namespace fs = std::filesystem;

namespace tach::bench {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), path + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// config.json and run.log, and nothing a run measured or wrote after its start.
bool holds_only_a_failed_start(const std::string& dir) {
  std::error_code ec;
  bool config = false;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name == "config.json") config = true;
    else if (name != "run.log") return false;
  }
  return config && !ec;
}

// Holds DIR for this process until it exits (an exclusive flock on the directory, released by the
// kernel however the process ends), so that two runs started at once under one --run-id cannot
// both pass the checks below and mix their files. A directory this process holds already (a
// second run from one Python session) is held still.
void hold_run_dir(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, int> held;
  const std::lock_guard<std::mutex> lock(mutex);
  const std::string key = fs::weakly_canonical(dir).string();
  if (held.count(key)) return;
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  check(fd >= 0, dir + ": cannot open the run directory");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    throw Error(dir + " is in use by another tach run started under the same --run-id; choose another --run-id");
  }
  held[key] = fd;
}

// config.json: bench_config_to_json's settings, and the engines (written only where another
// engine than tach's runs, so that a tach-only run's config.json is as it was).
std::string config_json(const BenchConfig& config) {
  const std::string text = bench_config_to_json(config);
  if (config.engines == std::vector<std::string>{"tach"} && config.python.empty()) return text;
  nlohmann::json j = nlohmann::json::parse(text);
  j["engines"] = config.engines;
  j["python"] = config.python;
  return j.dump(2);
}

BenchConfig config_from_json(const std::string& text, const std::string& where) {
  BenchConfig c = bench_config_from_json(text, where);
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.contains("engines")) c.engines = j.at("engines").get<std::vector<std::string>>();
    c.python = j.value("python", "");
  } catch (const nlohmann::json::exception& e) { throw Error(where + ": " + e.what()); }
  return c;
}

}  // namespace

RunStore RunStore::create(const std::string& dir, const BenchConfig& config) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec, dir + ": cannot create the run directory: " + ec.message());
  hold_run_dir(dir);
  // A directory that holds a run (a sweep's, an eval's, a training run's) is never written into
  // afresh: its files would then disagree (one run's config.json beside another's accuracy.json).
  // One that holds only a start that failed before measuring anything (config.json and run.log)
  // is taken afresh, so that the same command, corrected, can run under its --run-id.
  if (holds_only_a_failed_start(dir)) fs::remove(fs::path(dir) / "config.json", ec);
  refuse_run_dir_in_use(dir, {"results.jsonl", "config.json", "accuracy.json", "steps.jsonl"},
                        "choose another --run-id" + (fs::exists(fs::path(dir) / "results.jsonl")
                                                         ? ", or continue its sweep with tach bench --resume " + dir
                                                         : std::string()));
  announce_run_dir(dir);
  RunStore s;
  s.dir_ = dir;
  s.config_ = config;
  s.write_text("config.json", config_json(config) + "\n");
  return s;
}

RunStore RunStore::open(const std::string& dir, const std::string& results_file) {
  const fs::path config_path = fs::path(dir) / "config.json";
  check(fs::exists(config_path), dir + ": no config.json, so this is not a tach run directory");
  if (!results_file.empty()) announce_run_dir(dir);  // a reader (tach report, another rank) is not the run's log
  RunStore s;
  s.dir_ = dir;
  s.results_file_ = results_file;
  s.config_ = config_from_json(slurp(config_path.string()), config_path.string());
  // This store's own file is written by this process alone: a torn last line (a kill, a requeued
  // task) is cut, so that the point runs again and appends cleanly. Other tasks' files may be
  // mid-write: their last line is left alone.
  const fs::path own = fs::path(dir) / results_file;
  size_t torn = 0;
  if (!results_file.empty()) (void)read_results_file(own.string(), &torn);
  if (torn) {
    s.notes.push_back(results_file + " ended in a torn line (" + std::to_string(torn) +
                      " bytes, from an interrupted write); cut it, and that point runs again");
    fs::resize_file(own, fs::file_size(own) - torn);
  }
  s.finished_ = read_run_results(dir);
  for (const auto& p : s.finished_) s.finished_ids_.insert(p.key.id());
  return s;
}

double RunStore::append(const PointResult& point) {
  check(!results_file_.empty(), dir_ + " was opened to read: no point is appended to it");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string line = point_to_json(point) + "\n";
  const fs::path file = fs::path(dir_) / results_file_;
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  const std::string path = file.string();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  check(fd >= 0, path + ": cannot open for appending");
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0) {
      ::close(fd);
      throw Error(path + ": write failed");
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (point.status == "ok" && tensorboard()) write_point_scalars(*tensorboard(), point);
  finished_ids_.insert(point.key.id());
  finished_.push_back(point);
  return ms;
}

TensorBoardWriter* RunStore::tensorboard() {
  if (!tensorboard_ && config_.tensorboard)
    tensorboard_ = std::make_unique<TensorBoardWriter>((fs::path(dir_) / "tensorboard").string());
  return tensorboard_.get();
}

void RunStore::write_text(const std::string& name, const std::string& text) const {
  write_file((fs::path(dir_) / name).string(), text);
}

void RunStore::write_file(const std::string& path, const std::string& text) {
  const fs::path target(path);
  // The pid in the temporary's name: tasks of a job array may write the same file at once.
  const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    check(static_cast<bool>(out), tmp.string() + ": cannot write");
    out << text;
    out.flush();
    check(static_cast<bool>(out), tmp.string() + ": write failed (disk full?)");
  }
  fs::rename(tmp, target);
}

SweepOutcome outcome_of_store(const RunStore& store, const BenchObserver& observer) {
  SweepOutcome out;
  out.run_dir = store.dir();
  out.config = store.config();
  out.notes = store.notes;
  for (const auto& n : store.notes)
    if (observer.on_note) observer.on_note(n);
  return out;
}

}  // namespace tach::bench

namespace tach {

std::vector<PointResult> read_results_file(const std::string& path, size_t* torn_bytes) {
  if (torn_bytes) *torn_bytes = 0;
  std::vector<PointResult> out;
  if (!fs::exists(path)) return out;
  std::string text = bench::slurp(path);
  // A kill during a write can leave a last line without its newline: not a result.
  const size_t end = text.rfind('\n');
  const size_t keep = end == std::string::npos ? 0 : end + 1;
  if (torn_bytes) *torn_bytes = text.size() - keep;
  text.resize(keep);
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    out.push_back(point_from_json(line, path + ":" + std::to_string(lineno)));
  }
  return out;
}

std::vector<std::string> run_results_files(const std::string& run_dir) {
  std::vector<std::string> files;
  const fs::path main = fs::path(run_dir) / "results.jsonl";
  if (fs::exists(main)) files.push_back(main.string());
  const fs::path tasks = fs::path(run_dir) / "results.d";
  std::vector<std::string> task_files;
  if (fs::is_directory(tasks))
    for (const auto& e : fs::directory_iterator(tasks))
      if (e.is_regular_file() && e.path().extension() == ".jsonl") task_files.push_back(e.path().string());
  std::sort(task_files.begin(), task_files.end());
  files.insert(files.end(), task_files.begin(), task_files.end());
  return files;
}

std::vector<PointResult> read_run_results(const std::string& run_dir, size_t* torn_bytes) {
  if (torn_bytes) *torn_bytes = 0;
  std::vector<PointResult> out;
  std::set<std::string> seen;  // a point found twice (a task requeued after it wrote) counts once: the first
  for (const auto& file : run_results_files(run_dir)) {
    size_t torn = 0;
    for (auto& p : read_results_file(file, &torn))
      if (seen.insert(p.key.id()).second) out.push_back(std::move(p));
    if (torn_bytes) *torn_bytes += torn;
  }
  return out;
}

}  // namespace tach
