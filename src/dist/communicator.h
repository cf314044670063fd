// The data-parallel job this process belongs to, and the collectives its ranks run. MPI (Open MPI
// from Debian) supplies the ranks and moves the bytes; tach adds what a training job needs around
// it: a deadline on every collective, a rank that stopped named by its heartbeat, and the time
// each collective took.
//
// Every MPI call after start-up runs on one worker thread, in the order the collectives were
// submitted, so a gradient bucket's all-reduce proceeds while the backward computes the next
// layer (MPI_THREAD_SERIALIZED is all that needs). The caller waits for a collective with a
// deadline: MPI's own blocking calls have none, and a rank that hangs (stopped, swapping, stuck
// in I/O) would otherwise hang every other rank with it. A rank that dies is seen by the launcher
// (mpirun, srun), which ends the job; the deadline covers the rank that is alive but stuck.
//
// Without a launcher (a plain `tach train`), the world is rank 0 of 1, MPI is never initialised
// and every collective returns at once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tach::dist {

// Whether the environment says an MPI launcher started this process with other ranks
// (Open MPI's mpirun, or a PMIx/PMI launcher such as srun).
bool launched_with_ranks();

// A collective on its way: done once the worker has run it.
struct Collective {
  std::string what;            // "all_reduce bucket 3 (25.0 MB)", for the deadline's message
  std::function<void()> work;  // the MPI calls, run on the worker
  double bytes = 0;            // payload, for the bandwidth figures
  bool done = false;
  std::string error;                 // what MPI said, when it failed
  int64_t start_ns = 0, end_ns = 0;  // steady clock, on the worker
};
using CollectivePtr = std::shared_ptr<Collective>;

class Communicator {
 public:
  // The process's communicator: initialises MPI on first use when launched with ranks.
  static Communicator& world();
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_size() const { return local_size_; }  // ranks on this machine
  bool distributed() const { return size_ > 1; }
  std::string backend() const { return size_ > 1 ? "mpi" : "none"; }

  // How long a collective may take before the job is ended (default 300 s).
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  double timeout() const { return timeout_s_; }
  // Where every rank writes its heartbeat (a shared directory: the run directory's ranks/).
  void set_heartbeat_dir(const std::string& dir);
  // This rank has reached `where` (e.g. "step 12"): written to its heartbeat file.
  void heartbeat(const std::string& where);

  // Queues a collective on the worker (in order); wait() for it.
  CollectivePtr submit(std::string what, double bytes, std::function<void()> work);
  // Waits for it, at most the timeout; past it, ends the job naming the ranks behind.
  void wait(const CollectivePtr& c);

  // Blocking collectives through the worker, each under the deadline.
  void sum(double* values, int count, const std::string& what);  // in place, every rank gets the sums
  void sum(float* values, int64_t count, const std::string& what);
  // The sum itself, for a collective's work (it runs on the worker): no queue, no deadline.
  void sum_now(float* values, int64_t count);
  std::string broadcast(const std::string& text, const std::string& what);  // rank 0's text to every rank
  void barrier(const std::string& what);

  // Prints "rank R of N: why", the other ranks' last heartbeats, and ends every rank of the job.
  [[noreturn]] void abort_job(const std::string& why, int exit_code = 1);

 private:
  Communicator();
  void run_worker();
  std::string heartbeats_text() const;

  int rank_ = 0, size_ = 1, local_size_ = 1;
  double timeout_s_ = 300;
  std::string heartbeat_dir_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<CollectivePtr> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tach::dist
