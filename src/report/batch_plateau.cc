#include "report/batch_plateau.h"

#include <algorithm>
#include <cmath>

#include "report/number_text.h"

namespace tach::report {

namespace {

bool on_gpu(const PointResult& p) { return p.key.device.rfind("cuda", 0) == 0; }

// The GEMM ceiling of the precision the point's linears multiplied in: TF32's for a GPU f32 point
// run with --allow-tf32; on a CPU f32's for nf4 (its weights are dequantized and multiplied in
// f32); on a GPU bf16's for int8 and nf4 (weight-only there: bf16 activations and GEMMs).
double ceiling_for(const PointResult& p, const DeviceLimits& d) {
  const std::string& t = p.key.dtype;
  if (t == "bf16" || (on_gpu(p) && (t == "int8" || t == "nf4"))) return d.gemm_bf16_flops;
  if (t == "f16") return d.gemm_f16_flops;
  if (t == "int8") return d.gemm_int8_ops;
  if (t == "f32" && p.gemm_tf32) return d.gemm_tf32_flops;
  return d.gemm_f32_flops;
}

std::string precision_of(const PointResult& p) {
  if (on_gpu(p) && (p.key.dtype == "int8" || p.key.dtype == "nf4")) return "bf16";
  return p.key.dtype == "f32" && p.gemm_tf32 ? std::string("TF32") : p.key.dtype;
}

// The memory the point held at its peak: a GPU point's allocator peak (the device's own books), a
// CPU point's peak RSS (0 where the kernel could not reset it per point: unknown).
double memory_peak(const PointResult& p) {
  if (on_gpu(p)) {
    const auto it = p.allocator.find("total");
    return it != p.allocator.end() ? double(it->second.peak) : 0;
  }
  return p.peak_rss_is_per_point ? double(p.peak_rss_bytes) : 0;
}

bool ran_out_of_memory(const PointResult& p) {
  return p.status == "failed" && p.reason.find("out of memory") != std::string::npos;
}

double gain_per_doubling(const PointResult& a, const PointResult& b) {
  if (a.samples_per_s <= 0 || b.key.batch <= a.key.batch) return 0;
  const double doublings = std::log2(double(b.key.batch) / double(a.key.batch));
  return std::pow(b.samples_per_s / a.samples_per_s, 1 / doublings) - 1;
}

std::string pct(double x) { return fmt("%.0f%%", 100 * x); }

// The verdict at the plateau point p (next: the batch after it, or null where larger ones failed).
void judge(BatchFinding& f, const PointResult& p, const PointResult* next, const PointResult* oom,
           const DeviceLimitsLookup& limits) {
  const DeviceLimits d = limits ? limits(p.key.device) : DeviceLimits{};
  const double ceiling = ceiling_for(p, d);
  const double achieved = p.achieved_gflops_per_s * 1e9;
  if (ceiling > 0 && achieved > 0) f.plateau_ceiling_fraction = achieved / ceiling;
  const double peak = memory_peak(p);
  if (d.memory_bytes > 0 && peak > 0) f.plateau_memory_fraction = peak / d.memory_bytes;
  const std::string compute_text =
      f.plateau_ceiling_fraction >= 0
          ? fmt("%.1f", achieved / 1e9) + " GFLOP/s is " + pct(f.plateau_ceiling_fraction) + " of the " +
                precision_of(p) + " GEMM ceiling (" + fmt("%.1f", ceiling / 1e9) + " GFLOP/s, " + d.source + ")"
          : "no " + precision_of(p) + " GEMM ceiling for " + p.key.device +
                (d.source.empty() ? std::string() : " (" + d.source + ")");
  const std::string memory_text = f.plateau_memory_fraction >= 0
                                      ? "its memory peak " + fmt("%.0f", peak / 1048576) + " MiB is " +
                                            pct(f.plateau_memory_fraction) + " of the device's"
                                      : std::string("its share of the device's memory is unknown");
  // Under load the throughput measures the other processes as much as the batch.
  if (p.load.contended || (next && next->load.contended)) {
    const PointResult& loaded = p.load.contended ? p : *next;
    f.plateau_bound = "contention";
    f.plateau_why = "measured under contention: batch " + std::to_string(loaded.key.batch) +
                    " was timed while other processes took the cores, so where growth stops is the load's, not the "
                    "model's; measure again on a quiet machine";
  } else if (f.plateau_ceiling_fraction >= kComputeBoundFraction) {
    f.plateau_bound = "compute";
    f.plateau_why = "compute-bound: " + compute_text + "; a larger batch has little left to gain";
  } else if (oom || f.plateau_memory_fraction >= kMemoryBoundFraction) {
    f.plateau_bound = "memory";
    f.plateau_why = "memory-bound: " + memory_text +
                    (oom ? "; batch " + std::to_string(oom->key.batch) + " ran out of memory" : std::string()) + " (" +
                    compute_text + ")";
  } else if (f.plateau_ceiling_fraction < 0) {
    f.plateau_bound = "unknown";
    f.plateau_why = "not judged: " + compute_text + "; " + memory_text;
  } else {
    f.plateau_bound = "neither";
    f.plateau_why = "neither compute- nor memory-bound: " + compute_text + ", and " + memory_text +
                    ": fixed costs per batch (kernel launches, the host's work, synchronisation) or the forward's "
                    "parts that are not GEMMs (attention, softmax, norms) set the pace";
  }
}

}  // namespace

void find_plateau(BatchFinding& f, std::vector<const PointResult*> ok, const std::vector<const PointResult*>& others,
                  const DeviceLimitsLookup& limits) {
  std::sort(ok.begin(), ok.end(),
            [](const PointResult* a, const PointResult* b) { return a->key.batch < b->key.batch; });
  if (ok.empty()) return;
  for (size_t i = 0; i + 1 < ok.size(); ++i) {
    const double gain = gain_per_doubling(*ok[i], *ok[i + 1]);
    if (gain < kPlateauGainPerDoubling) {
      f.plateau_batch = ok[i]->key.batch;
      f.plateau_next_gain = gain;
      judge(f, *ok[i], ok[i + 1], nullptr, limits);
      return;
    }
  }
  // Still growing at the largest batch that ran: a plateau only where the next one ran out of memory.
  const PointResult* oom = nullptr;
  for (const PointResult* p : others)
    if (ran_out_of_memory(*p) && p->key.batch > ok.back()->key.batch && (!oom || p->key.batch < oom->key.batch))
      oom = p;
  if (!oom) return;
  f.plateau_batch = ok.back()->key.batch;
  f.plateau_next_gain = 0;
  judge(f, *ok.back(), nullptr, oom, limits);
}

}  // namespace tach::report
