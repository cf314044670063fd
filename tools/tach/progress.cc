#include "progress.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "format.h"
#include "tach/runtime.h"

namespace tach::cli {

namespace {

ProgressStyle style_for(bool no_progress) { return no_progress ? ProgressStyle::Quiet : progress_style(); }

// A bar of `width` cells, `done` of `total` filled, drawn over the current line.
std::string bar_text(double done, double total, int width) {
  const int filled = total > 0 ? std::min(width, int(double(width) * done / total)) : 0;
  return "\r\033[K[" + std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.') + "] ";
}

}  // namespace

std::string clock_text(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%d:%02d", int(seconds) / 60, int(seconds) % 60);
  return buf;
}

BenchObserver bench_progress(bool no_progress, const BenchConfig& config) {
  BenchObserver o;
  const ProgressStyle style = style_for(no_progress);
  const bool bar = style == ProgressStyle::Bar, lines = style == ProgressStyle::Lines;
  struct State {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    double done_weight = 0, total_weight = 0;
  };
  auto st = std::make_shared<State>();
  // ETA: the time so far per unit of work (batch x seq) over the work left.
  double per_grid = double(config.devices.size() * config.dtypes.size() * config.threads.size());
  if (config.train.enabled)
    per_grid *=
        double(config.train.methods.size() * config.train.execs.size() * config.train.gradient_checkpointing.size());
  for (int64_t b : config.batch_sizes)
    for (int64_t s : config.seq_lens) st->total_weight += per_grid * double(b * s);
  o.on_note = [bar](const std::string& m) { std::cerr << (bar ? "\r\033[K" : "") << "tach: " << m << "\n"; };
  o.on_point_start = [st, bar, lines](const PointKey& k, size_t i, size_t total) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - st->start).count();
    const double eta =
        st->done_weight > 0 ? elapsed / st->done_weight * std::max(0.0, st->total_weight - st->done_weight) : 0;
    if (bar)
      std::cerr << bar_text(double(i), double(total), 24) << i << "/" << total << " " << k.id() << "  elapsed "
                << clock_text(elapsed) << (st->done_weight > 0 ? "  ETA " + clock_text(eta) : std::string())
                << std::flush;
    else if (lines) std::cerr << "point " << i + 1 << "/" << total << " " << k.id() << " ...\n";
  };
  o.on_point_done = [st, bar, lines](const PointResult& r, size_t, size_t) {
    st->done_weight += double(r.key.batch * r.key.seq_len);
    if (r.status != "ok") {
      std::cerr << (bar ? "\r\033[K" : "") << "  " << r.key.id() << " " << r.status << ": " << r.reason << "\n";
      return;
    }
    if (lines)
      std::cerr << "  " << r.key.id() << ": " << fixed(r.batch_latency_ms.median, 2)
                << (r.key.kind == "train" ? " ms/step median over " : " ms/batch median over ") << r.measured_runs
                << " runs, " << fixed(r.samples_per_s, 1) << " samples/s (" << r.stopped_by << ")\n";
  };
  return o;
}

void end_bench_progress(bool no_progress) {
  if (style_for(no_progress) == ProgressStyle::Bar) std::cerr << "\r\033[K" << std::flush;
}

TrainObserver train_progress(bool no_progress) {
  const ProgressStyle style = style_for(no_progress);
  const bool bar = style == ProgressStyle::Bar, lines = style == ProgressStyle::Lines;
  TrainObserver obs;
  obs.on_note = [bar](const std::string& m) { std::cerr << (bar ? "\r\033[K" : "") << "tach: " << m << "\n"; };
  auto last_line = std::make_shared<std::chrono::steady_clock::time_point>();
  obs.on_step = [bar, lines, last_line](const TrainStepReport& r) {
    char buf[256], task[48] = "";
    // Distilled: the loss is the mix of the teacher's term and the task's; the task's beside it.
    if (r.task_loss >= 0) std::snprintf(task, sizeof task, "  task loss %.4f", r.task_loss);
    std::snprintf(buf, sizeof buf, "step %lld/%lld  epoch %lld  %s %.4f%s  lr %.3g  %.0f tok/s  ETA %s",
                  (long long)r.step, (long long)r.total_steps, (long long)r.epoch + 1,
                  r.task_loss >= 0 ? "mix loss" : "loss", r.loss, task, r.lr, r.tokens_per_s,
                  clock_text(r.eta_s).c_str());
    if (bar) {
      std::cerr << bar_text(double(r.step), double(r.total_steps), 20) << buf << std::flush;
    } else if (lines) {
      const auto now = std::chrono::steady_clock::now();
      if (r.step == r.total_steps || now - *last_line > std::chrono::seconds(10)) {
        std::cerr << buf << "\n";
        *last_line = now;
      }
    }
  };
  return obs;
}

void end_train_progress(bool no_progress) {
  if (style_for(no_progress) == ProgressStyle::Bar) std::cerr << "\n";
}

}  // namespace tach::cli
