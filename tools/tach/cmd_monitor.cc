// tach monitor -- CMD ARGS: runs a command and writes a CSV timeline of its CPU, memory, threads,
// the GPUs and energy, like `nvidia-smi --query-gpu ... -l` for the whole machine's view of one run.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "format.h"
#include "tach/error.h"
#include "tach/monitor.h"

namespace tach::cli {

namespace {

struct MonitorFlags {
  std::vector<std::string> command;
  double interval_s = 0.5;
  std::string output = "monitor.csv";
};

int run_monitor(const MonitorFlags& f) {
  check(!f.command.empty(), "tach monitor needs a command: tach monitor -- CMD ARGS");
  check(f.interval_s >= 0.01, "--interval must be at least 0.01 s");
  std::ofstream csv(f.output);
  check(static_cast<bool>(csv), f.output + ": cannot write");
  // The child says `ready` once fork's child handlers have run (they fault in library pages), and
  // waits on `go` until its pre-exec copy of tach has been read (its pages count in the kernel's
  // peak for it); then it execs. `exec_failed` closes on a successful exec (close-on-exec) or
  // carries exec's errno. Sampling starts after exec, so no sample is of tach's copy.
  int go[2], ready[2], exec_failed[2];
  check(pipe2(go, O_CLOEXEC) == 0 && pipe2(ready, O_CLOEXEC) == 0 && pipe2(exec_failed, O_CLOEXEC) == 0,
        std::string("pipe failed: ") + std::strerror(errno));
  std::vector<char*> argv;
  for (const auto& a : f.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  check(pid >= 0, std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    close(go[1]);
    close(ready[0]);
    close(exec_failed[0]);
    char c = 'r';
    (void)!write(ready[1], &c, 1);
    while (read(go[0], &c, 1) < 0 && errno == EINTR) {}
    execvp(argv[0], argv.data());
    const int e = errno;
    (void)!write(exec_failed[1], &e, sizeof e);
    _exit(127);
  }
  close(go[0]);
  close(ready[1]);
  close(exec_failed[1]);
  ProcessSampler sampler(pid, f.interval_s);  // NVML and RAPL opened now, not between exec and the first sample
  char c = 0;
  while (read(ready[0], &c, 1) < 0 && errno == EINTR) {}
  close(ready[0]);
  ProcessSample before_exec;
  read_process_sample(pid, &before_exec);
  (void)!write(go[1], "x", 1);
  close(go[1]);
  int exec_errno = 0;
  ssize_t n = 0;
  while ((n = read(exec_failed[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {}
  close(exec_failed[0]);
  if (n == ssize_t(sizeof exec_errno)) {
    waitpid(pid, nullptr, 0);
    std::cerr << "tach monitor: cannot run '" << f.command[0] << "': " << std::strerror(exec_errno) << "\n";
    return 127;
  }
  sampler.start();
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {}
  sampler.stop();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto samples = sampler.samples();

  csv << "t_s,rss_bytes,peak_rss_bytes,cpu_percent,user_s,system_s,threads,cpu_energy_j";
  const int gpus = sampler.gpus().count();
  for (int g = 0; g < gpus; ++g)
    csv << ",gpu" << g << "_util_percent,gpu" << g << "_mem_used_bytes,gpu" << g << "_power_w,gpu" << g
        << "_energy_j,gpu" << g << "_sm_mhz,gpu" << g << "_temp_c,gpu" << g << "_throttle";
  csv << "\n";
  double peak_rss = 0, cpu_sum = 0, cpu_max = 0;
  int alive_samples = 0;
  int n_cpu = 0;
  for (const auto& m : samples) {
    if (!m.process.alive && m.process.rss_bytes == 0) continue;
    const auto& p = m.process;
    csv << p.t_s << "," << p.rss_bytes << "," << p.peak_rss_bytes << "," << p.cpu_percent << "," << p.user_s << ","
        << p.system_s << "," << p.threads << "," << m.cpu_energy_j;
    for (const auto& g : m.gpus)
      csv << "," << g.utilization_percent << "," << g.memory_used_bytes << "," << g.power_w << "," << g.energy_j << ","
          << g.sm_clock_mhz << "," << g.temperature_c << "," << g.throttle_reasons;
    csv << "\n";
    peak_rss = std::max(peak_rss, double(p.peak_rss_bytes));
    if (p.alive) ++alive_samples;
    if (p.t_s > 0) cpu_sum += p.cpu_percent, ++n_cpu, cpu_max = std::max(cpu_max, p.cpu_percent);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // The first sample is taken as the command starts, before it has touched its memory: alone, it
  // says nothing of the peak.
  const CommandPeak peak = command_peak_rss(before_exec.peak_rss_bytes, int64_t(usage.ru_maxrss) * 1024,
                                            alive_samples >= 2 ? int64_t(peak_rss) : 0);
  std::cerr << "tach monitor: '" << f.command[0] << "' exited with " << code << " after " << fixed(wall, 2) << " s\n"
            << "  samples     " << samples.size() << " every " << fixed(f.interval_s, 2) << " s (one sample took "
            << fixed(sampler.sampling_cost_s() * 1e6, 0) << " µs, on its own thread) -> " << f.output << "\n"
            << "  memory      peak RSS "
            << (peak.bytes > 0 ? human_bytes(double(peak.bytes)) + (peak.exact ? " (" : " or more (") : "unknown (")
            << peak.method << ")\n"
            << "  cpu         mean " << fixed(n_cpu ? cpu_sum / n_cpu : 0, 0) << "%, max " << fixed(cpu_max, 0)
            << "% (100% = one core)\n";
  if (sampler.rapl().available())
    std::cerr << "  cpu energy  " << fixed(samples.empty() ? 0 : samples.back().cpu_energy_j, 2) << " J (RAPL: ";
  else std::cerr << "  cpu energy  unavailable: " << sampler.rapl().unavailable_reason() << "\n";
  if (sampler.rapl().available()) {
    for (const auto& d : sampler.rapl().domains()) std::cerr << d << " ";
    std::cerr << ")\n";
  }
  if (gpus > 0 && !samples.empty() && !samples.back().gpus.empty() && !samples.front().gpus.empty())
    for (int g = 0; g < gpus; ++g)
      std::cerr << "  gpu " << g << "       energy "
                << fixed(samples.back().gpus[size_t(g)].energy_j - samples.front().gpus[size_t(g)].energy_j, 1)
                << " J (NVML total-energy counter)\n";
  else std::cerr << "  gpu         " << sampler.gpus().unavailable_reason() << "\n";
  return code;
}

}  // namespace

Command add_monitor_command(CLI::App& app) {
  auto f = std::make_shared<MonitorFlags>();
  CLI::App* sub = app.add_subcommand("monitor",
                                     "Run a command and write a CSV timeline of its RSS, CPU, threads, "
                                     "the GPUs (NVML) and CPU energy (RAPL), plus a summary");
  sub->add_option("-i,--interval", f->interval_s, "Seconds between samples")->capture_default_str();
  sub->add_option("-o,--output", f->output, "CSV timeline")->capture_default_str();
  sub->add_option("command", f->command, "The command and its arguments (after --)")->required();
  return {sub, [f] { return run_monitor(*f); }};
}

}  // namespace tach::cli
