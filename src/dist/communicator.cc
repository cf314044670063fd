#include "dist/communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/trace.h"
#include "tach/error.h"

#if TACH_HAS_MPI
// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace tach::dist {

namespace {

namespace fs = std::filesystem;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

#if TACH_HAS_MPI
void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string(call) + " failed: " + std::string(text, size_t(length)));
}
#endif

}  // namespace

bool launched_with_ranks() {
  // Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; PMIx launchers (srun --mpi=pmix, prterun) set
  // PMIX_RANK with the job's size in the PMIx store; older PMI launchers set PMI_SIZE.
  return env_int("OMPI_COMM_WORLD_SIZE", 1) > 1 || env_int("PMI_SIZE", 1) > 1 || std::getenv("PMIX_RANK") != nullptr;
}

Communicator& Communicator::world() {
  static Communicator c;
  return c;
}

Communicator::Communicator() {
  if (!launched_with_ranks()) return;
#if TACH_HAS_MPI
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  check(provided >= MPI_THREAD_SERIALIZED,
        "this MPI library gives no MPI_THREAD_SERIALIZED support, which tach needs to run the all-reduces on a thread "
        "of their own beside the backward");
  // Errors come back as codes (and become exceptions naming the call), not an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  worker_ = std::thread([this] { run_worker(); });
#else
  throw Error(
      "this process was started by an MPI launcher with several ranks, but this tach was built without MPI: "
      "install Open MPI (scripts/setup.sh installs libopenmpi-dev) and build again");
#endif
}

Communicator::~Communicator() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
#if TACH_HAS_MPI
  MPI_Finalize();
#endif
}

void Communicator::run_worker() {
  for (;;) {
    CollectivePtr c;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      c = queue_.front();
      queue_.pop_front();
    }
    c->start_ns = core::steady_ns();
    std::string error;
    {
      // The span puts every collective on the worker's own track of the trace, beside the backward.
      // Its name is the collective's ("all_reduce"), the first word of what it is.
      core::Span span(core::SpanKind::scope, c->what.substr(0, c->what.find(' ')));
      try {
        c->work();
      } catch (const std::exception& e) { error = e.what(); }
    }
    const int64_t end = core::steady_ns();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      c->end_ns = end;
      c->error = error;
      c->done = true;
    }
    finished_.notify_all();
  }
}

CollectivePtr Communicator::submit(std::string what, double bytes, std::function<void()> work) {
  auto c = std::make_shared<Collective>();
  c->what = std::move(what);
  c->bytes = bytes;
  c->work = std::move(work);
  if (!distributed()) {  // one rank: a sum is the value itself, a broadcast a no-op
    c->start_ns = c->end_ns = core::steady_ns();
    c->done = true;
    return c;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(c);
  }
  wake_.notify_all();
  return c;
}

void Communicator::wait(const CollectivePtr& c) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
  if (!finished_.wait_until(lock, deadline, [&] { return c->done; })) {
    lock.unlock();
    std::ostringstream why;
    why << c->what << " did not complete within " << timeout_s_
        << " s (--dist-timeout): another rank stopped taking part";
    abort_job(why.str(), 4);
  }
  if (!c->error.empty()) {
    const std::string error = c->error;
    lock.unlock();
    abort_job(c->what + ": " + error, 4);
  }
}

void Communicator::sum(double* values, int count, const std::string& what) {
#if TACH_HAS_MPI
  wait(submit(what, double(count) * 8, [values, count] {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }));
#else
  (void)values, (void)count, (void)what;
#endif
}

void Communicator::sum_now(float* values, int64_t count) {
#if TACH_HAS_MPI
  // MPI counts are int: a buffer beyond 2^30 elements goes in pieces.
  for (int64_t at = 0; at < count; at += int64_t(1) << 30) {
    const int n = int(std::min<int64_t>(count - at, int64_t(1) << 30));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values + at, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
#else
  (void)values, (void)count;
#endif
}

void Communicator::sum(float* values, int64_t count, const std::string& what) {
  wait(submit(what, double(count) * 4, [this, values, count] { sum_now(values, count); }));
}

std::string Communicator::broadcast(const std::string& text, const std::string& what) {
  std::string out = text;
#if TACH_HAS_MPI
  wait(submit(what, double(text.size()), [&out, this] {
    int64_t n = int64_t(out.size());
    check_mpi(MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (rank_ != 0) out.assign(size_t(n), '\0');
    check_mpi(MPI_Bcast(out.data(), int(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }));
#else
  (void)what;
#endif
  return out;
}

void Communicator::barrier(const std::string& what) {
#if TACH_HAS_MPI
  wait(submit(what, 0, [] { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }));
#else
  (void)what;
#endif
}

void Communicator::set_heartbeat_dir(const std::string& dir) {
  heartbeat_dir_ = dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
}

void Communicator::heartbeat(const std::string& where) {
  if (heartbeat_dir_.empty() || !distributed()) return;
  // Written beside and renamed over, so a reader never sees half a line.
  const std::string path = heartbeat_dir_ + "/rank-" + std::to_string(rank_) + ".heartbeat";
  {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out.precision(15);
    out << unix_seconds() << "\t" << where << "\n";
  }
  std::error_code ec;
  fs::rename(path + ".tmp", path, ec);
}

std::string Communicator::heartbeats_text() const {
  if (heartbeat_dir_.empty()) return "";
  std::ostringstream s;
  const double now = unix_seconds();
  for (int r = 0; r < size_; ++r) {
    std::ifstream in(heartbeat_dir_ + "/rank-" + std::to_string(r) + ".heartbeat");
    double when = 0;
    std::string where;
    if (in >> when) {
      in.get();
      std::getline(in, where);
      s << "\n  rank " << r << ": last reached " << where << ", " << int64_t(now - when) << " s ago";
    } else {
      s << "\n  rank " << r << ": no heartbeat yet";
    }
  }
  return s.str();
}

void Communicator::abort_job(const std::string& why, int exit_code) {
  std::cerr << "error: rank " << rank_ << " of " << size_ << ": " << why;
  const std::string beats = heartbeats_text();
  if (!beats.empty()) std::cerr << "; each rank's last heartbeat (" << heartbeat_dir_ << "):" << beats;
  std::cerr << "\nending the job; the last checkpoint in the run directory is kept" << std::endl;
#if TACH_HAS_MPI
  if (distributed()) MPI_Abort(MPI_COMM_WORLD, exit_code);
#endif
  std::_Exit(exit_code);
}

}  // namespace tach::dist
