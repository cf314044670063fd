// The diagnosis of a training sweep's curves (tach bench --train): per series, where throughput
// peaks, the fixed per-step cost from a fit of step time against batch, whether and why
// throughput falls at large batches, the largest batch that fits with and without gradient
// checkpointing, and what to do. Every sentence carries its numbers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report/number_text.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "tach/report.h"

namespace tach {

namespace {

using report::fmt;

std::string pct(double fraction) { return fmt("%.0f%%", 100 * fraction); }
std::string mib(double bytes) { return fmt("%.0f MiB", bytes / 1048576.0); }

std::string series_of(const PointKey& k) {
  // Another engine's points (bench --train --engine) form their own series.
  return (k.engine == "tach" ? std::string() : k.engine + " ") + k.device + " " + k.dtype + " threads " +
         (k.threads ? std::to_string(k.threads) : std::string("default")) + " seq " + std::to_string(k.seq_len) + " " +
         k.method + " " + k.exec + " " + (k.gradient_checkpointing ? "gc-on" : "gc-off");
}

double allocator_peak(const PointResult& p) {
  const auto it = p.allocator.find("total");
  return it == p.allocator.end() ? 0 : double(it->second.peak);
}

// The relative standard deviation of a point's step times.
double noise(const PointResult& p) {
  return p.batch_latency_ms.median > 0 ? p.batch_latency_ms.std / p.batch_latency_ms.median : 0;
}

// The points of `pts` measured while other processes took the cores their threads needed.
int contended_count(const std::vector<const PointResult*>& pts) {
  return int(std::count_if(pts.begin(), pts.end(), [](const PointResult* p) { return p->load.contended; }));
}

// Least squares of y = a + b x; r2 the fit's coefficient of determination.
void fit_line(const std::vector<double>& x, const std::vector<double>& y, double* a, double* b, double* r2) {
  const double n = double(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i)
    sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i], syy += y[i] * y[i];
  const double den = n * sxx - sx * sx;
  if (den <= 0) {
    *a = sy / n, *b = 0, *r2 = 0;
    return;
  }
  *b = (n * sxy - sx * sy) / den;
  *a = (sy - *b * sx) / n;
  const double cov = n * sxy - sx * sy, vy = n * syy - sy * sy;
  *r2 = vy > 0 ? cov * cov / (den * vy) : 1;
}

// The largest batch whose estimate, scaled by `ratio` (measured over estimated), stays within
// what is available. -1 when there is no estimate.
int64_t largest_fitting(const TrainEstimator& estimate, const PointKey& key, bool checkpointing, double ratio) {
  const auto fits = [&](int64_t b) {
    const auto e = estimate(key, b, checkpointing);
    return e && double(e->total_bytes) * ratio <= double(e->available_bytes);
  };
  if (!estimate(key, 1, checkpointing)) return -1;
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = 2;
  while (hi < (int64_t(1) << 24) && fits(hi)) lo = hi, hi *= 2;
  if (hi >= (int64_t(1) << 24)) return lo;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

// The same series with one axis changed, at the given batch (null when not measured).
const PointResult* sibling(const std::vector<PointResult>& all, const PointKey& key, int64_t batch,
                           const std::function<void(PointKey&)>& change) {
  PointKey want = key;
  want.batch = batch;
  change(want);
  for (const auto& p : all)
    if (p.status == "ok" && p.key.id() == want.id()) return &p;
  return nullptr;
}

// Peak, sweet spot and the fixed per-step cost.
void curve_findings(TrainDiagnosis& d, const std::vector<const PointResult*>& pts) {
  for (const PointResult* p : pts)
    if (p->samples_per_s > d.peak_samples_per_s) d.peak_samples_per_s = p->samples_per_s, d.peak_batch = p->key.batch;
  for (const PointResult* p : pts)
    if (p->samples_per_s >= 0.95 * d.peak_samples_per_s) {
      d.sweet_spot_batch = p->key.batch;
      break;
    }
  d.findings.push_back("Throughput peaks at batch " + std::to_string(d.peak_batch) + " with " +
                       fmt("%.1f", d.peak_samples_per_s) + " samples/s" +
                       (d.sweet_spot_batch != d.peak_batch
                            ? "; batch " + std::to_string(d.sweet_spot_batch) + " already reaches 95% of it"
                            : std::string()) +
                       ".");
  d.smallest_batch = pts.front()->key.batch;
  if (pts.size() < 2) return;
  std::vector<double> x, y;
  for (const PointResult* p : pts) x.push_back(double(p->key.batch)), y.push_back(p->batch_latency_ms.median);
  fit_line(x, y, &d.fixed_ms, &d.per_sample_ms, &d.fit_r2);
  // A cost model only from points that can carry one: a step that gets cheaper with more samples,
  // or times measured while others took the cores, measure the load, not the step.
  const int contended = contended_count(pts);
  if (contended > 0 || d.per_sample_ms <= 0 || d.fixed_ms < 0) {
    const std::string why =
        contended > 0 ? std::to_string(contended) + " of the " + std::to_string(pts.size()) +
                            " points were measured while other processes took the cores (CONTENDED)"
                      : "the fit of the median step time against batch gives " + fmt("%.1f", d.fixed_ms) +
                            " ms fixed and " + fmt("%.2f", d.per_sample_ms) +
                            " ms per sample, which no step costs (the points' times do not grow with the batch)";
    d.findings.push_back("No fixed and per-sample cost of a step from this series: " + why + ".");
    d.fixed_ms = d.per_sample_ms = 0;
    return;
  }
  const double fixed = std::max(0.0, d.fixed_ms);
  d.fixed_share_at_smallest = fixed / pts.front()->batch_latency_ms.median;
  d.overhead_bound = d.fixed_share_at_smallest >= 0.3;
  d.findings.push_back("A step costs " + fmt("%.1f", fixed) + " ms fixed plus " + fmt("%.2f", d.per_sample_ms) +
                       " ms per sample (least-squares fit of the median step time against batch over " +
                       std::to_string(pts.size()) + " points, R^2 " + fmt("%.3f", d.fit_r2) + "); at batch " +
                       std::to_string(d.smallest_batch) + " the fixed part is " + pct(d.fixed_share_at_smallest) +
                       " of the step" +
                       (d.overhead_bound ? ": small batches are bound by fixed per-step overhead (the optimizer over "
                                           "every parameter, per-op launches)."
                                         : "."));
}

// Whether throughput falls after the peak by more than the noise, and why.
void decline_findings(TrainDiagnosis& d, const std::vector<const PointResult*>& pts) {
  const PointResult* peak = nullptr;
  for (const PointResult* p : pts)
    if (p->key.batch == d.peak_batch) peak = p;
  for (const PointResult* p : pts) {
    if (p->key.batch <= d.peak_batch) continue;
    const double drop = 1 - p->samples_per_s / d.peak_samples_per_s;
    const double limit = std::max(0.05, 2 * std::hypot(noise(*p), noise(*peak)));
    if (drop > limit && drop > d.decline_fraction)
      d.declines = true, d.decline_fraction = drop, d.decline_batch = p->key.batch;
  }
  if (!d.declines) {
    if (d.peak_batch == pts.back()->key.batch && pts.size() >= 2)
      d.findings.push_back("Throughput still rises at the largest batch measured (" + std::to_string(d.peak_batch) +
                           "): no decline in this sweep.");
    return;
  }
  const PointResult* low = nullptr;
  for (const PointResult* p : pts)
    if (p->key.batch == d.decline_batch) low = p;
  const PointResult::Train& t = low->train;
  if (t.available_bytes > 0) {
    const double used = std::max(allocator_peak(*low), double(low->peak_rss_bytes));
    const double share = used / double(t.available_bytes);
    if (share >= 0.8)
      d.decline_reasons.push_back("memory pressure: the step's peak (" + mib(used) + ") is " + pct(share) + " of the " +
                                  mib(double(t.available_bytes)) + " that were available");
  }
  const double e_peak = peak->train.gemm_efficiency, e_low = t.gemm_efficiency;
  if (e_peak > 0 && e_low > 0 && e_low < 0.9 * e_peak)
    d.decline_reasons.push_back("the GEMMs run at " + pct(e_low) + " of the ceiling at batch " +
                                std::to_string(d.decline_batch) + " against " + pct(e_peak) + " at batch " +
                                std::to_string(d.peak_batch));
  const double s_peak = peak->train.gemm_time_share, s_low = t.gemm_time_share;
  if (d.decline_reasons.empty() && s_peak > 0 && s_low > 0)
    d.decline_reasons.push_back("neither memory nor the GEMMs' efficiency explains it (GEMMs " + pct(s_peak) + " → " +
                                pct(s_low) + " of the op time, at " + pct(e_peak) + " → " + pct(e_low) +
                                " of the ceiling): the non-GEMM ops (attention, norms, the optimizer) grow faster than "
                                "the batch; tach profile --train at both batches shows which");
  std::string why;
  for (const auto& r : d.decline_reasons) why += (why.empty() ? "" : "; ") + r;
  d.findings.push_back("Throughput falls by " + pct(d.decline_fraction) + " from batch " +
                       std::to_string(d.peak_batch) + " to batch " + std::to_string(d.decline_batch) + " (" +
                       fmt("%.1f", low->samples_per_s) + " samples/s, beyond the noise of both points)" +
                       (why.empty() ? "." : ": " + why + "."));
}

// The largest batch that fits, from the estimate calibrated by the measured peaks.
void fit_findings(TrainDiagnosis& d, const std::vector<const PointResult*>& pts, const TrainEstimator& estimate) {
  std::vector<double> ratios;
  for (const PointResult* p : pts)
    if (p->train.estimate_bytes > 0 && allocator_peak(*p) > 0)
      ratios.push_back(allocator_peak(*p) / double(p->train.estimate_bytes));
  if (ratios.empty() || !estimate) {
    d.findings.push_back("No memory estimate for this model, so no largest batch: tach estimate says why.");
    return;
  }
  std::sort(ratios.begin(), ratios.end());
  d.measured_over_estimate = ratios[ratios.size() / 2];
  const double r = std::max(1.0, d.measured_over_estimate);  // never trust the estimate to be too high
  d.largest_fit = largest_fitting(estimate, d.key, false, r);
  d.largest_fit_checkpointed = largest_fitting(estimate, d.key, true, r);
  if (d.largest_fit < 0) return;
  d.findings.push_back("The measured peaks (tach's allocator) are " + pct(d.measured_over_estimate) +
                       " of tach estimate's figure (median over the points); with that correction the largest batch "
                       "that fits at seq " +
                       std::to_string(d.key.seq_len) + " is " + std::to_string(d.largest_fit) +
                       " without gradient checkpointing and " + std::to_string(d.largest_fit_checkpointed) +
                       " with it.");
}

// --dtype: what the sweep measured decides; without a measurement, whether the CPU multiplies
// bf16 in hardware (AVX512_BF16 or AMX). oneDNN emulates a bf16 matmul on other AVX-512 CPUs,
// slower than f32 there, so "oneDNN has a bf16 matmul" is no reason to advise it.
void precision_advice(TrainDiagnosis& d, const std::vector<PointResult>& all, const PointResult& peak, bool bf16_gemm) {
  const std::string other = d.key.dtype == "f32" ? "bf16" : d.key.dtype == "bf16" ? "f32" : "";
  if (other.empty()) return;
  const std::string at = " at batch " + std::to_string(d.peak_batch);
  if (const PointResult* o = sibling(all, d.key, d.peak_batch, [&](PointKey& k) { k.dtype = other; })) {
    const double ratio = o->samples_per_s / peak.samples_per_s;
    const std::string measured = other + " was measured at " + fmt("%.2f", ratio) + "x " + d.key.dtype +
                                 "'s throughput" + at + " (" + fmt("%.1f", o->batch_latency_ms.median) +
                                 " ms against " + fmt("%.1f", peak.batch_latency_ms.median) + " ms per step)";
    // The measurement decides only when it can: neither point contended, and a difference beyond
    // both points' noise (as a decline must be).
    const double limit = std::max(0.05, 2 * std::hypot(noise(*o), noise(peak)));
    if (o->load.contended || peak.load.contended) {
      d.advice.push_back(measured + ", but the comparison is inconclusive: " +
                         (o->load.contended && peak.load.contended
                              ? std::string("both points were")
                              : "the " + (o->load.contended ? other : d.key.dtype) + " point was") +
                         " measured while other processes took the cores (CONTENDED); measure both again on a quiet "
                         "machine before choosing --dtype.");
      return;
    }
    if (std::fabs(ratio - 1) <= limit) {
      d.advice.push_back(measured + ": within the points' noise (" + pct(limit) +
                         "), so the comparison is inconclusive; either --dtype trains at the same speed here.");
      return;
    }
    d.advice.push_back(ratio > 1 ? measured + ": train with --dtype " + other + "."
                                 : measured + ": stay in " + d.key.dtype + ".");
    return;
  }
  if (d.key.dtype != "f32") return;
  const double share = peak.train.gemm_time_share;
  d.advice.push_back(
      bf16_gemm ? "This CPU multiplies bf16 in hardware (tach info lists avx512_bf16 or amx_bf16): --dtype bf16 (f32 "
                  "masters, bf16 GEMM inputs) should speed up the GEMMs, which are " +
                      (share > 0 ? pct(share) : std::string("most")) + " of the op time" + at +
                      "; tach bench --train --dtype f32,bf16 measures it."
                : "This CPU does not multiply bf16 in hardware (no avx512_bf16 or amx_bf16 in tach info): --dtype "
                  "bf16 would round the inputs and run an emulated or f32 GEMM, as slow or slower; stay in f32 here.");
}

void advice(TrainDiagnosis& d, const std::vector<PointResult>& all, const std::vector<const PointResult*>& pts,
            bool bf16_gemm) {
  const PointResult* peak = nullptr;
  for (const PointResult* p : pts)
    if (p->key.batch == d.peak_batch) peak = p;
  if (d.overhead_bound && d.per_sample_ms > 0) {
    const double b10 = 9 * d.fixed_ms / d.per_sample_ms;  // fixed / (fixed + b·per) < 10%
    const auto want = int64_t(std::ceil(b10));
    // Past what fits, the batch is reached by accumulating micro-batches that do fit.
    const bool fits = d.largest_fit < 0 || want <= d.largest_fit;
    d.advice.push_back("Train at batch " + std::to_string(want) + " or more, where the fixed " +
                       fmt("%.1f", d.fixed_ms) + " ms falls under 10% of a step" +
                       (fits ? std::string(".")
                             : "; only " + std::to_string(d.largest_fit) + " fit at seq " +
                                   std::to_string(d.key.seq_len) + ", so accumulate: tach train -b " +
                                   std::to_string(d.largest_fit) + " --gradient-accumulation-steps " +
                                   std::to_string((want + d.largest_fit - 1) / d.largest_fit) +
                                   " (the optimizer's share of the fixed cost is paid once per accumulated step)."));
  }
  d.advice.push_back(
      "For an effective batch larger than " + std::to_string(d.peak_batch) + ", accumulate gradients: tach train -b " +
      std::to_string(d.peak_batch) + " --gradient-accumulation-steps 4 gives " + std::to_string(4 * d.peak_batch) +
      " samples per optimizer step at about the peak's " + fmt("%.1f", d.peak_samples_per_s) + " samples/s.");
  if (!d.key.gradient_checkpointing && d.largest_fit_checkpointed > d.largest_fit && d.largest_fit >= 0) {
    const PointResult* gc = sibling(all, d.key, d.peak_batch, [](PointKey& k) { k.gradient_checkpointing = true; });
    d.advice.push_back("Gradient checkpointing lets batch " + std::to_string(d.largest_fit_checkpointed) +
                       " fit instead of " + std::to_string(d.largest_fit) +
                       "; it recomputes every layer's forward in "
                       "the backward, " +
                       (gc ? "measured here at +" +
                                 pct(gc->batch_latency_ms.median / peak->batch_latency_ms.median - 1) +
                                 " step time at batch " + std::to_string(d.peak_batch)
                           : std::string("not measured here (tach bench --train --gradient-checkpointing off,on "
                                         "measures it)")) +
                       ".");
  }
  precision_advice(d, all, *peak, bf16_gemm);
  if (d.key.exec == "eager") {
    const PointResult* f = sibling(all, d.key, d.peak_batch, [](PointKey& k) { k.exec = "fused"; });
    d.advice.push_back(f ? "Fused execution is measured at " + fmt("%.2f", f->samples_per_s / peak->samples_per_s) +
                               "x eager's throughput at batch " + std::to_string(d.peak_batch) + " (" +
                               mib(allocator_peak(*f)) + " peak against " + mib(allocator_peak(*peak)) + ")."
                         : "Try --exec fused (tach bench --train --exec eager,fused measures both): it keeps no "
                           "attention probabilities (the backward recomputes them) and fuses bias and "
                           "GELU, dropout with the residual and LayerNorm, and AdamW into single passes.");
  }
}

}  // namespace

TrainEstimator estimator_for(const std::string& model_spec) {
  return [model_spec](const PointKey& key, int64_t batch, bool checkpointing) -> std::optional<TrainEstimate> {
    EstimateInput in;
    in.model = model_spec;
    in.dtype = key.dtype;
    in.batch = batch;
    in.seq_len = key.seq_len;
    in.device = key.device;
    in.mode = "train-" + key.method;
    in.gradient_checkpointing = checkpointing;
    // LoRA on the estimate's default targets: every linear, as tach train and bench --train adapt.
    in.margin = 0.05;
    try {
      const MemoryEstimate e = estimate_memory(in);
      return TrainEstimate{e.total_bytes, e.available_bytes};
    } catch (const Error&) { return std::nullopt; }
  };
}

std::vector<TrainDiagnosis> diagnose_training(const std::vector<PointResult>& results, const TrainEstimator& estimate,
                                              bool bf16_gemm) {
  std::map<std::string, std::vector<const PointResult*>> by_series;
  std::vector<std::string> order;
  for (const auto& p : results) {
    if (p.status != "ok" || p.key.kind != "train") continue;
    const std::string s = series_of(p.key);
    if (!by_series.count(s)) order.push_back(s);
    by_series[s].push_back(&p);
  }
  std::vector<TrainDiagnosis> out;
  for (const auto& s : order) {
    auto& pts = by_series[s];
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->key.batch < b->key.batch; });
    TrainDiagnosis d;
    d.series = s;
    d.points = int(pts.size());
    curve_findings(d, pts);
    d.key = pts.front()->key;
    d.key.batch = d.peak_batch;
    decline_findings(d, pts);
    fit_findings(d, pts, estimate);
    advice(d, results, pts, bf16_gemm);
    out.push_back(std::move(d));
  }
  return out;
}

std::string performance_report_md(const std::string& model, const std::vector<PointResult>& results,
                                  const std::vector<TrainDiagnosis>& diagnoses) {
  std::ostringstream md;
  md << "# Training performance: " << model << "\n\n"
     << "Per series (every axis but the batch). Step time is the whole optimizer step (data, forward, backward, "
        "optimizer), wall clock, median over the measured steps; throughput: "
     << kThroughputDefinition
     << " (a batch is a step's); "
        "MFU is the step's model FLOPs (the ops' declared FLOPs, without a checkpointed layer's recomputation) over "
        "the median step, against the measured GEMM ceiling of the precision; memory is tach's allocator peak.\n";
  // Contention qualifies every figure below, so it comes first.
  std::string contended;
  int n_ok = 0, n_contended = 0;
  for (const auto& p : results) {
    if (p.status != "ok" || p.key.kind != "train") continue;
    ++n_ok;
    if (!p.load.contended) continue;
    ++n_contended;
    contended += (contended.empty() ? "" : ", ") + p.key.id() + " (" + fmt("%.1f", p.load.other_cores_mean) + ")";
  }
  if (n_contended)
    md << "\n**CONTENDED:** " << n_contended << " of " << n_ok
       << " points were measured while other processes took the cores their threads needed (other processes' "
          "cores in brackets): "
       << contended
       << ". Their times measure the load as much as the training, so no comparison or advice below rests on them; "
          "measure again on a quiet machine.\n";
  for (const auto& d : diagnoses) {
    md << "\n## " << d.series << "\n\n";
    for (const auto& f : d.findings) md << "- " << f << "\n";
    if (!d.advice.empty()) {
      md << "\nWhat to do:\n\n";
      for (const auto& a : d.advice) md << "- " << a << "\n";
    }
    md << "\n| batch | step ms | data | forward | backward | optimizer | samples/s | MFU | GEMM share | GEMM eff. | "
          "allocator peak MiB | estimate MiB |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& p : results) {
      if (p.status != "ok" || p.key.kind != "train" || series_of(p.key) != d.series) continue;
      const auto& t = p.train;
      const auto opt = [](double v) { return v >= 0 ? pct(v) : std::string("-"); };
      md << "| " << p.key.batch << " | " << fmt("%.1f", p.batch_latency_ms.median) << " | "
         << fmt("%.1f", t.data_ms.median) << " | " << fmt("%.1f", t.forward_ms.median) << " | "
         << fmt("%.1f", t.backward_ms.median) << " | " << fmt("%.1f", t.optimizer_ms.median) << " | "
         << fmt("%.1f", p.samples_per_s) << " | " << report::of_ceiling(t.mfu, t.ceiling_under_load) << " | "
         << opt(t.gemm_time_share) << " | " << report::of_ceiling(t.gemm_efficiency, t.ceiling_under_load) << " | "
         << fmt("%.0f", allocator_peak(p) / 1048576.0) << " | "
         << (t.estimate_bytes > 0 ? fmt("%.0f", double(t.estimate_bytes) / 1048576.0) : std::string("-")) << " |\n";
    }
  }
  std::string skipped;
  for (const auto& p : results)
    if (p.status != "ok") skipped += "- " + p.key.id() + " " + p.status + ": " + p.reason + "\n";
  if (!skipped.empty()) md << "\n## Points not measured\n\n" << skipped;
  if (diagnoses.empty()) md << "\nNo training point finished, so there is nothing to diagnose.\n";
  return md.str();
}

}  // namespace tach
