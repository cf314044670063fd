// Result tables: a terminal table, Markdown (llama-bench's shape), CSV, JSON and JSONL. One
// data model, several views.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "report/engine_report.h"
#include "report/number_text.h"
#include "tach/error.h"
#include "tach/report.h"

namespace tach {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string mib(int64_t bytes) { return fmt("%.1f", double(bytes) / (1024.0 * 1024.0)); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// Columns padded to their widest cell; numbers right-aligned.
std::string aligned(const std::vector<std::vector<std::string>>& rows, bool markdown) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  std::ostringstream out;
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    const auto& r = rows[ri];
    if (markdown) out << "|";
    for (size_t i = 0; i < r.size(); ++i) {
      const bool left = i == 0 || ri == 0;
      // The last column is not padded on a terminal: no trailing blanks.
      const std::string pad(markdown || i + 1 < r.size() || !left ? width[i] - r[i].size() : 0, ' ');
      out << (markdown ? " " : (i ? "  " : ""));
      if (left) out << r[i] << pad;
      else out << pad << r[i];
      out << (markdown ? " |" : "");
    }
    out << "\n";
    if (markdown && ri == 0) {
      out << "|";
      // Numbers right-aligned (---:), the first column left.
      for (size_t i = 0; i < r.size(); ++i)
        out << ' ' << std::string(width[i] - (i ? 1 : 0), '-') << (i ? ":" : "") << " |";
      out << "\n";
    }
  }
  return out.str();
}

// Training points: the step and its phases, throughput, MFU and memory.
std::string train_table(const std::vector<PointResult>& results, bool md) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"device", "dtype",     "thr",         "method", "exec",           "ckpt",         "batch",
                  "seq",    "steps",     "ms/step med", "p95",    "data",           "fwd",          "bwd",
                  "opt",    "samples/s", "tokens/s",    "MFU",    "alloc peak MiB", "RSS peak MiB", "stopped by"});
  for (const auto& p : results) {
    const auto& k = p.key;
    std::vector<std::string> r = {k.device,
                                  k.dtype,
                                  threads_label(p),
                                  k.method,
                                  k.exec,
                                  k.gradient_checkpointing ? "on" : "off",
                                  std::to_string(k.batch),
                                  std::to_string(k.seq_len)};
    if (p.status != "ok") {
      r.push_back(p.status + ": " + p.reason.substr(0, 70));
      rows.push_back(r);
      continue;
    }
    const auto& t = p.train;
    const auto alloc = p.allocator.count("total") ? p.allocator.at("total").peak : 0;
    for (const std::string& v :
         {std::to_string(p.measured_runs), fmt("%.1f", p.batch_latency_ms.median), fmt("%.1f", p.batch_latency_ms.p95),
          fmt("%.1f", t.data_ms.median), fmt("%.1f", t.forward_ms.median), fmt("%.1f", t.backward_ms.median),
          fmt("%.1f", t.optimizer_ms.median), fmt("%.1f", p.samples_per_s), fmt("%.0f", p.tokens_per_s),
          report::of_ceiling(t.mfu, t.ceiling_under_load, "%.1f%%"), mib(alloc), mib(p.peak_rss_bytes),
          p.stopped_by.substr(0, p.stopped_by.find(':')) + (p.load.contended ? ", CONTENDED" : "")})
      r.push_back(v);
    rows.push_back(r);
  }
  return aligned(rows, md);
}

}  // namespace

std::string results_table(const std::vector<PointResult>& results, const std::string& format,
                          const std::string& model_name) {
  if (format == "jsonl") {
    std::string out;
    for (const auto& p : results) out += point_to_json(p) + "\n";
    return out;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& p : results) arr.push_back(nlohmann::json::parse(point_to_json(p)));
    return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  if (format == "csv") return detailed_metrics_csv(results);
  check(format == "table" || format == "md",
        "output format '" + format + "' is not one of table, md, csv, json, jsonl");
  const bool md = format == "md";
  if (!results.empty() && results.front().key.kind == "train") return train_table(results, md);
  std::vector<std::vector<std::string>> rows;
  // On a GPU the host's latency (until the result is back) and the GPU's own time (CUDA events
  // around the forward) stand side by side; energy where a counter measured it.
  const bool gpu =
      std::any_of(results.begin(), results.end(), [](const PointResult& p) { return p.gpu_time_ms.n > 0; });
  const bool energy = std::any_of(results.begin(), results.end(), [](const PointResult& p) { return p.energy_j > 0; });
  // A causal LM's decoding after its prefill: median per step, tokens/s, the median against the limit.
  const bool decode =
      std::any_of(results.begin(), results.end(), [](const PointResult& p) { return p.decode.step_ms.n > 0; });
  const auto decode_cells = [](const PointResult& p) -> std::vector<std::string> {
    const PointResult::Decode& d = p.decode;
    if (d.step_ms.n == 0) return {"-", "-", "-"};
    return {fmt("%.2f", d.step_ms.median), fmt("%.1f", d.tokens_per_s), fmt("%.0f%%", 100 * d.fraction_of_limit)};
  };
  if (md) {
    rows.push_back({"model", "device", "dtype", "threads", "batch", "seq", "ms/batch (median ± std)",
                    "samples/s (batch / median)", "tokens/s", "status"});
  } else {
    rows.push_back({"device", "dtype", "thr", "batch", "seq", "runs", "ms/batch med", "p95", "±std", "ms/sample",
                    "samples/s", "tokens/s", "GFLOP/s", "tokenize ms", "alloc peak MiB", "RSS peak MiB", "stopped by"});
    if (gpu) rows.back().insert(rows.back().begin() + 9, "GPU ms med");
    if (energy) rows.back().insert(rows.back().end() - 1, "mJ/sample");
  }
  if (decode) {  // before the status (md) or the stopping rule (table)
    const std::vector<std::string> head = {"decode ms/step", "decode tok/s", "of BW limit"};
    rows.back().insert(rows.back().end() - 1, head.begin(), head.end());
  }
  for (const auto& p : results) {
    const std::string thr = threads_label(p);
    if (p.status != "ok") {
      if (md)
        rows.push_back({model_name, p.key.device, p.key.dtype, thr, std::to_string(p.key.batch),
                        std::to_string(p.key.seq_len), "-", "-", "-", p.status + ": " + p.reason.substr(0, 60)});
      else {  // every measured column "-", the reason last
        rows.push_back({p.key.device, p.key.dtype, thr, std::to_string(p.key.batch), std::to_string(p.key.seq_len)});
        rows.back().resize(rows.front().size() - 1, "-");
        rows.back().push_back(p.status + ": " + p.reason.substr(0, 70));
      }
      if (md && decode) rows.back().insert(rows.back().end() - 1, 3, "-");  // the table's row is already full width
      continue;
    }
    const auto& l = p.batch_latency_ms;
    if (md) {
      rows.push_back({model_name, p.key.device, p.key.dtype, thr, std::to_string(p.key.batch),
                      std::to_string(p.key.seq_len), fmt("%.2f", l.median) + " ± " + fmt("%.2f", l.std),
                      fmt("%.2f", p.samples_per_s), fmt("%.0f", p.tokens_per_s), "ok"});
    } else {
      const auto alloc = p.allocator.count("total") ? p.allocator.at("total").peak : 0;
      // A contended point's rule is no verdict on the model: the table says so beside it.
      const std::string rule = p.stopped_by.substr(0, p.stopped_by.find(':')) + (p.load.contended ? ", CONTENDED" : "");
      rows.push_back({p.key.device, p.key.dtype, thr, std::to_string(p.key.batch), std::to_string(p.key.seq_len),
                      std::to_string(p.measured_runs), fmt("%.2f", l.median), fmt("%.2f", l.p95), fmt("%.2f", l.std),
                      fmt("%.2f", p.sample_latency_ms.median), fmt("%.1f", p.samples_per_s),
                      fmt("%.0f", p.tokens_per_s), fmt("%.1f", p.achieved_gflops_per_s),
                      p.tokenize_ms_per_batch.n ? fmt("%.2f", p.tokenize_ms_per_batch.median) : "-", mib(alloc),
                      mib(p.peak_rss_bytes), rule});
      if (gpu) rows.back().insert(rows.back().begin() + 9, p.gpu_time_ms.n ? fmt("%.2f", p.gpu_time_ms.median) : "-");
      if (energy)
        rows.back().insert(rows.back().end() - 1, p.energy_j > 0 ? fmt("%.1f", p.energy_j_per_sample * 1e3) : "-");
    }
    if (decode) {
      const std::vector<std::string> cells = decode_cells(p);
      rows.back().insert(rows.back().end() - 1, cells.begin(), cells.end());
    }
  }
  // Other engines' points (tach bench --engine) beside tach's: the engine first, one row per point.
  if (std::any_of(results.begin(), results.end(), [](const PointResult& p) { return p.key.engine != "tach"; })) {
    rows.front().insert(rows.front().begin() + (md ? 1 : 0), "engine");
    for (size_t i = 0; i < results.size(); ++i)
      rows[i + 1].insert(rows[i + 1].begin() + (md ? 1 : 0), results[i].key.engine);
  }
  return aligned(rows, md);
}

std::string detailed_metrics_csv(const std::vector<PointResult>& results) {
  std::ostringstream out;
  const bool train =
      std::any_of(results.begin(), results.end(), [](const PointResult& p) { return p.key.kind == "train"; });
  const bool gpu =
      std::any_of(results.begin(), results.end(), [](const PointResult& p) { return p.gpu_time_ms.n > 0; });
  out << "id,device,dtype,threads,threads_requested,batch_size,seq_len,status,reason,input,warmup_runs,measured_runs,"
         "stopped_by";
  if (train) out << ",kind,method,exec,gradient_checkpointing";
  for (const char* q : {"batch_latency_ms", "sample_latency_ms", "tokenize_ms_per_batch"})
    for (const char* s : {"median", "mean", "std", "min", "max", "p90", "p95", "p99"}) out << "," << q << "_" << s;
  out << ",samples_per_s,tokens_per_s,batches_per_s,padded_tokens_per_batch,real_tokens_per_batch,flops_per_batch,"
         "achieved_gflops_per_s,rss_bytes,peak_rss_bytes,peak_rss_is_per_point";
  std::vector<std::string> cats;
  if (!results.empty())
    for (const auto& [c, _] : results.front().allocator) cats.push_back(c);
  for (const auto& c : cats) out << ",allocator_" << c << "_current_bytes,allocator_" << c << "_peak_bytes";
  if (train) {
    for (const char* q : {"data_ms", "forward_ms", "backward_ms", "optimizer_ms"})
      for (const char* s : {"median", "mean", "p90"}) out << ",step_" << q << "_" << s;
    out << ",loss_first,loss_last,parameters,trainable_parameters,model_flops_per_step,hardware_flops_per_step,mfu,"
           "ceiling_gflops_per_s,gemm_time_share,gemm_efficiency,estimate_bytes,available_bytes,precision";
  }
  if (gpu) {
    for (const char* st : {"median", "mean", "std", "min", "max", "p90", "p95", "p99"}) out << ",gpu_time_ms_" << st;
    out << ",device_memory_used_bytes";
  }
  const bool decode =
      std::any_of(results.begin(), results.end(), [](const PointResult& p) { return !p.decode.method.empty(); });
  if (decode) {
    for (const char* st : {"median", "mean", "std", "min", "max", "p90", "p95", "p99"}) out << ",decode_step_ms_" << st;
    out << ",decode_tokens_per_s,decode_time_to_first_token_ms,decode_weight_bytes_per_step,decode_cache_bytes_per_"
           "step,decode_memory_bytes_per_s,decode_limit_ms,decode_median_fraction_of_limit,decode_memory_read_bytes_"
           "per_s,decode_read_limit_ms,decode_median_fraction_of_read_limit,decode_method";
  }
  out << ",energy_j,energy_j_per_sample,energy_j_per_token,measured_wall_s,timer_overhead_ns,bookkeeping_ms,finished_"
         "at\n";
  for (const auto& p : results) {
    out << p.key.id() << "," << p.key.device << "," << p.key.dtype << "," << p.threads_used << "," << p.key.threads
        << "," << p.key.batch << "," << p.key.seq_len << "," << p.status << "," << csv_field(p.reason) << ","
        << csv_field(p.input) << "," << p.warmup_runs << "," << p.measured_runs << "," << csv_field(p.stopped_by);
    if (train)
      out << "," << p.key.kind << "," << p.key.method << "," << p.key.exec << ","
          << (p.key.gradient_checkpointing ? "true" : "false");
    for (const Distribution* d : {&p.batch_latency_ms, &p.sample_latency_ms, &p.tokenize_ms_per_batch})
      for (double v : {d->median, d->mean, d->std, d->min, d->max, d->p90, d->p95, d->p99}) out << "," << v;
    out << "," << p.samples_per_s << "," << p.tokens_per_s << "," << p.batches_per_s << "," << p.padded_tokens_per_batch
        << "," << p.real_tokens_per_batch << "," << p.flops_per_batch << "," << p.achieved_gflops_per_s << ","
        << p.rss_bytes << "," << p.peak_rss_bytes << "," << (p.peak_rss_is_per_point ? "true" : "false");
    for (const auto& c : cats) {
      const auto it = p.allocator.find(c);
      out << "," << (it == p.allocator.end() ? 0 : it->second.current) << ","
          << (it == p.allocator.end() ? 0 : it->second.peak);
    }
    if (train) {
      const auto& t = p.train;
      for (const Distribution* d : {&t.data_ms, &t.forward_ms, &t.backward_ms, &t.optimizer_ms})
        for (double v : {d->median, d->mean, d->p90}) out << "," << v;
      out << "," << t.loss_first << "," << t.loss_last << "," << t.parameters << "," << t.trainable_parameters << ","
          << t.model_flops_per_step << "," << t.hardware_flops_per_step << "," << t.mfu << "," << t.ceiling_gflops_per_s
          << "," << t.gemm_time_share << "," << t.gemm_efficiency << "," << t.estimate_bytes << "," << t.available_bytes
          << "," << csv_field(t.precision);
    }
    if (gpu) {
      const Distribution& d = p.gpu_time_ms;
      for (double v : {d.median, d.mean, d.std, d.min, d.max, d.p90, d.p95, d.p99}) out << "," << v;
      out << "," << p.device_memory_used_bytes;
    }
    if (decode) {
      const PointResult::Decode& d = p.decode;
      for (double v : {d.step_ms.median, d.step_ms.mean, d.step_ms.std, d.step_ms.min, d.step_ms.max, d.step_ms.p90,
                       d.step_ms.p95, d.step_ms.p99})
        out << "," << v;
      out << "," << d.tokens_per_s << "," << d.time_to_first_token_ms << "," << d.weight_bytes_per_step << ","
          << d.cache_bytes_per_step << "," << d.memory_bytes_per_s << "," << d.limit_ms << "," << d.fraction_of_limit
          << "," << d.memory_read_bytes_per_s << "," << d.read_limit_ms << "," << d.fraction_of_read_limit << ","
          << csv_field(d.method);
    }
    out << "," << p.energy_j << "," << p.energy_j_per_sample << "," << p.energy_j_per_token;
    out << "," << p.measured_wall_s << "," << p.timer_overhead_ns << "," << p.bookkeeping_ms << "," << p.finished_at
        << "\n";
  }
  return out.str();
}

namespace {

// A per-token head's pass: "cpu/f32: 12 sentences (seqeval, conlleval tags): entity F1 0.8123, ...; 0.05
// s in all (tokenize 0.00 s, model 0.04 s), 240.0 sentences/s".
std::string task_accuracy_line(const AccuracyResult& r) {
  const bool tokens = r.task == "token-classification";
  const std::string unit = tokens ? "sentences" : "questions";
  std::string s = (r.dtype.empty() ? "" : r.device + "/" + r.dtype + ": ") + std::to_string(r.examples) + " " + unit +
                  " (" + (tokens ? "seqeval, " + r.scheme + " tags" : r.scheme) +
                  "): " + report::task_scores_text(r.task, r.scores) + "; " + fmt("%.2f", r.total_s) + " s in all";
  if (tokens) s += " (tokenize " + fmt("%.2f", r.tokenize_s) + " s, model " + fmt("%.2f", r.model_s) + " s)";
  s += ", " + fmt("%.1f", r.samples_per_s) + " " + unit + "/s";
  if (r.warmup_batches > 0) s += tokens ? " (after 1 untimed warm-up batch)" : " (after 1 untimed warm-up question)";
  if (r.load.contended)
    s += "; CONTENDED: other processes used " + fmt("%.2f", r.load.other_cores_mean) +
         " cores beside it, so this rate is the shared machine's";
  return s;
}

}  // namespace

std::string accuracy_text(const std::vector<AccuracyResult>& results, const std::string& dataset,
                          bool synthetic_weights) {
  std::ostringstream out;
  out << "Accuracy on " << dataset << "\n";
  if (synthetic_weights)
    out << "  The model has synthetic (random) weights: its accuracy is chance, and is shown as such.\n";
  for (const auto& r : results) {
    if (!r.task.empty()) {
      out << "  " << task_accuracy_line(r) << "\n";
      continue;
    }
    out << "  " << (r.dtype.empty() ? "" : r.device + "/" + r.dtype + ": ") << r.examples << " examples: accuracy "
        << fmt("%.4f", r.accuracy) << ", macro-F1 " << fmt("%.4f", r.macro_f1)
        << " (chance, always the majority label: " << fmt("%.4f", r.chance_accuracy) << "); " << fmt("%.2f", r.total_s)
        << " s in all (tokenize " << fmt("%.2f", r.tokenize_s) << " s, model " << fmt("%.2f", r.model_s) << " s), "
        << fmt("%.1f", r.samples_per_s) << " samples/s"
        << (r.warmup_batches > 0 ? " (after " + std::to_string(r.warmup_batches) + " untimed warm-up batch)" : "")
        << (r.load.contended ? "; CONTENDED: other processes used " + fmt("%.2f", r.load.other_cores_mean) +
                                   " cores beside it, so this rate is the shared machine's"
                             : "")
        << "\n";
  }
  // Per class and the confusion matrix for every device and dtype (each at its largest sample
  // size, the last it ran), each titled with its own: a pass's errors are its own.
  std::vector<const AccuracyResult*> last_of_group;
  for (const auto& r : results) {
    if (!r.task.empty()) continue;  // a per-token head's per-type scores: token_classification.json
    auto same = std::find_if(last_of_group.begin(), last_of_group.end(),
                             [&](const AccuracyResult* g) { return g->device == r.device && g->dtype == r.dtype; });
    if (same == last_of_group.end()) last_of_group.push_back(&r);
    else *same = &r;
  }
  for (const AccuracyResult* g : last_of_group) {
    const AccuracyResult& last = *g;
    const std::string which = last.dtype.empty() ? "" : ", " + last.device + "/" + last.dtype;
    std::vector<std::vector<std::string>> rows{{"label", "precision", "recall", "F1", "support"}};
    for (const auto& c : last.per_class)
      rows.push_back(
          {c.label, fmt("%.4f", c.precision), fmt("%.4f", c.recall), fmt("%.4f", c.f1), std::to_string(c.support)});
    out << "  Per class (" << last.examples << " examples" << which << "):\n" << aligned(rows, false);
    if (last.confusion.size() <= 12) {
      std::vector<std::vector<std::string>> cm{{"true \\ predicted"}};
      for (const auto& c : last.per_class) cm[0].push_back(c.label);
      for (size_t i = 0; i < last.confusion.size(); ++i) {
        cm.push_back({last.per_class[i].label});
        for (int64_t v : last.confusion[i]) cm.back().push_back(std::to_string(v));
      }
      out << "  Confusion matrix (" << last.examples << " examples" << which
          << "; rows: true label, columns: predicted):\n"
          << aligned(cm, false);
    } else {
      out << "  Confusion matrix" << (which.empty() ? "" : " (" + which.substr(2) + ")") << ": "
          << last.confusion.size() << "x" << last.confusion.size() << " labels, in accuracy.json and summary.json\n";
    }
  }
  return out.str();
}

}  // namespace tach
