// Op tables (like torch.profiler's key_averages): events grouped by op, by module, or by op and
// shapes; sorted by self time, total time, memory or FLOPs; with roofline verdicts.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "profile/cpu_caches.h"
#include "tach/error.h"
#include "tach/profile.h"

namespace tach {

namespace {

double active_step_ns(const ProfileData& d) {
  double ns = 0;
  for (const auto& s : d.steps)
    if (s.active) ns += double(s.end_ns - s.start_ns);
  return ns;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The time a row's rates are over: its kernels' GPU time where it queued GPU work (the rates and
// the verdict are then against the GPU's ceilings), else its host time.
double rate_seconds(const OpTableRow& r) { return (r.gpu_ns > 0 ? r.gpu_ns : r.total_ns) * 1e-9; }
double gflops_per_s(const OpTableRow& r) { return rate_seconds(r) > 0 ? r.flops / rate_seconds(r) * 1e-9 : 0; }
double gb_per_s(const OpTableRow& r) { return rate_seconds(r) > 0 ? r.bytes / rate_seconds(r) * 1e-9 : 0; }

// An op faster than DRAM allows is either cache-resident (its bytes per call fit in the
// last-level cache, so the calls after the first find them there) or judged against a wrong
// ceiling. Only the memory side can be explained so: a GEMM beating the compute ceiling cannot.
bool beats_dram_from_cache(const OpTableRow& r, const MachineCeilings& c, DType compute, int64_t llc_bytes) {
  if (r.gpu_ns > 0 || llc_bytes <= 0 || c.memory_bytes_per_s <= 0 || r.calls <= 0) return false;
  const double s = rate_seconds(r);
  if (s <= 0) return false;
  const double peak = gemm_ceiling(c, compute);
  const bool beats_dram = r.bytes / s > kCeilingTolerance * c.memory_bytes_per_s;
  const bool beats_compute = peak > 0 && r.flops / s > kCeilingTolerance * peak;
  return beats_dram && !beats_compute && r.bytes / double(r.calls) <= double(llc_bytes);
}

std::string bytes_text(double b) {
  return b >= 1048576 ? fmt("%.1f MiB", b / 1048576) : b >= 1024 ? fmt("%.0f KiB", b / 1024) : fmt("%.0f B", b);
}

}  // namespace

std::string cache_resident_note(const OpTableRow& r, int64_t last_level_cache_bytes) {
  const double per_call = r.calls > 0 ? r.bytes / double(r.calls) : 0;
  return "cache-resident: " + bytes_text(per_call) + " per call fit in the " +
         bytes_text(double(last_level_cache_bytes)) + " last-level cache, so it beats the DRAM bandwidth ceiling";
}

std::vector<OpTableRow> op_table(const ProfileData& d, const std::string& group_by, const std::string& sort_by,
                                 const MachineCeilings& ceilings, int64_t last_level_cache_bytes) {
  const int64_t llc = last_level_cache_bytes >= 0 ? last_level_cache_bytes : profile::last_level_cache_bytes();
  check(group_by == "op" || group_by == "module" || group_by == "shape",
        "op table: group by op, module or shape, not '" + group_by + "'");
  check(sort_by == "self" || sort_by == "total" || sort_by == "memory" || sort_by == "flops" || sort_by == "gpu",
        "op table: sort by self, total, memory, flops or gpu, not '" + sort_by + "'");
  std::map<std::string, OpTableRow> rows;
  for (const auto& e : d.events) {
    std::string key;
    if (group_by == "module") {
      if (e.kind == EventKind::op) continue;  // modules and scopes, with their full path
      key = e.path.empty() ? e.name : e.path + "." + e.name;
    } else {
      if (e.kind != EventKind::op) continue;
      key = group_by == "op" ? e.name : e.name + " | " + e.detail;
    }
    OpTableRow& r = rows[key];
    r.key = key;
    ++r.calls;
    r.total_ns += double(e.duration_ns());
    r.self_ns += e.self_ns;
    r.flops += e.flops;
    r.bytes += e.bytes;
    r.allocated_bytes += e.allocated_bytes;
    r.freed_bytes += e.freed_bytes;
    r.gpu_ns += e.gpu_ns;
  }
  // Modules carry no cost of their own: theirs is the sum of the ops inside them.
  if (group_by == "module")
    for (const auto& e : d.events) {
      if (e.kind != EventKind::op) continue;
      std::string path = e.path;
      while (!path.empty()) {
        if (auto it = rows.find(path); it != rows.end()) {
          it->second.flops += e.flops;
          it->second.bytes += e.bytes;
          it->second.gpu_ns += e.gpu_ns;
        }
        const size_t dot = path.rfind('.');
        path = dot == std::string::npos ? "" : path.substr(0, dot);
      }
    }
  const double steps_ns = active_step_ns(d);
  std::vector<OpTableRow> out;
  for (auto& [k, r] : rows) {
    r.percent_of_steps = steps_ns > 0 ? 100.0 * r.self_ns / steps_ns : 0;
    // The op's detail names the GEMM's dtype ("... ]ᵀ bf16", "cudnn fused (f16)"); that dtype's
    // ceiling judges it.
    const DType compute = ceiling_dtype_of(r.key, r.gpu_ns > 0);
    r.verdict = roofline(r.flops, r.bytes, (r.gpu_ns > 0 ? r.gpu_ns : r.total_ns) * 1e-9, ceilings, compute);
    if (r.verdict.above_ceiling && beats_dram_from_cache(r, ceilings, compute, llc)) {
      r.cache_resident = true;
      r.verdict.above_ceiling = false;
    }
    out.push_back(r);
  }
  const auto metric = [&](const OpTableRow& r) {
    if (sort_by == "self") return r.self_ns;
    if (sort_by == "total") return r.total_ns;
    if (sort_by == "memory") return double(r.allocated_bytes);
    if (sort_by == "gpu") return r.gpu_ns;  // the kernels' time on the GPU under the row (0 on the CPU)
    return r.flops;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const OpTableRow& a, const OpTableRow& b) { return metric(a) > metric(b); });
  return out;
}

std::string op_table_text(const std::vector<OpTableRow>& rows, size_t limit) {
  std::ostringstream s;
  size_t w = 4;
  for (size_t i = 0; i < rows.size() && i < limit; ++i) w = std::max(w, std::min<size_t>(rows[i].key.size(), 72));
  // A GPU profile gets a GPU-time column, and its rates are over GPU time.
  const bool gpu = std::any_of(rows.begin(), rows.end(), [](const OpTableRow& r) { return r.gpu_ns > 0; });
  s << std::string(w, ' ').replace(0, 4, "name") << "  calls    self ms   total ms    avg ms"
    << (gpu ? "    gpu ms" : "") << "  % steps  GFLOP/s   GB/s  alloc MiB  verdict\n";
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const auto& r = rows[i];
    std::string key = r.key.size() > 72 ? r.key.substr(0, 69) + "..." : r.key;
    key.resize(w, ' ');
    s << key << fmt("%7.0f", double(r.calls)) << fmt("%11.2f", r.self_ns * 1e-6) << fmt("%11.2f", r.total_ns * 1e-6)
      << fmt("%10.3f", r.total_ns * 1e-6 / double(r.calls)) << (gpu ? fmt("%10.3f", r.gpu_ns * 1e-6) : std::string())
      << fmt("%9.1f", r.percent_of_steps) << fmt("%9.1f", gflops_per_s(r)) << fmt("%7.1f", gb_per_s(r))
      << fmt("%11.1f", double(r.allocated_bytes) / 1048576.0) << "  " << bound_name(r.verdict.bound)
      << fmt(" %.0f%%", r.verdict.achieved_fraction * 100)
      << (r.cache_resident          ? " (cache-resident: beats the DRAM ceiling from the cache)"
          : r.verdict.above_ceiling ? " (ABOVE THE CEILING: the ceiling is wrong)"
                                    : "")
      << "\n";
  }
  return s.str();
}

std::string op_table_csv(const std::vector<OpTableRow>& rows) {
  std::ostringstream s;
  s << "name,calls,self_ms,total_ms,avg_us,percent_of_steps,flops,bytes,gflops_per_s,gb_per_s,allocated_bytes,"
       "freed_bytes,verdict,achieved_fraction,gpu_ms,cache_resident\n";
  for (const auto& r : rows) {
    std::string key = r.key;
    if (key.find_first_of(",\"") != std::string::npos) {
      std::string q = "\"";
      for (char c : key) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      key = q + "\"";
    }
    s << key << "," << r.calls << "," << r.self_ns * 1e-6 << "," << r.total_ns * 1e-6 << ","
      << r.total_ns * 1e-3 / double(r.calls) << "," << r.percent_of_steps << "," << r.flops << "," << r.bytes << ","
      << gflops_per_s(r) << "," << gb_per_s(r) << "," << r.allocated_bytes << "," << r.freed_bytes << ","
      << bound_name(r.verdict.bound) << "," << r.verdict.achieved_fraction << "," << r.gpu_ns * 1e-6 << ","
      << (r.cache_resident ? "true" : "false") << "\n";
  }
  return s.str();
}

std::string op_table_json(const std::vector<OpTableRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows)
    arr.push_back({{"name", r.key},
                   {"calls", r.calls},
                   {"self_ms", r.self_ns * 1e-6},
                   {"total_ms", r.total_ns * 1e-6},
                   {"avg_us", r.total_ns * 1e-3 / double(r.calls)},
                   {"percent_of_steps", r.percent_of_steps},
                   {"flops", r.flops},
                   {"bytes", r.bytes},
                   {"gflops_per_s", gflops_per_s(r)},
                   {"gb_per_s", gb_per_s(r)},
                   {"allocated_bytes", r.allocated_bytes},
                   {"freed_bytes", r.freed_bytes},
                   {"verdict", bound_name(r.verdict.bound)},
                   {"achieved_fraction", r.verdict.achieved_fraction},
                   {"intensity_flops_per_byte", r.verdict.intensity},
                   {"above_ceiling", r.verdict.above_ceiling},
                   {"cache_resident", r.cache_resident},
                   {"gpu_ms", r.gpu_ns * 1e-6}});
  return nlohmann::json{{"schema", "tach.profile.op_table/1"}, {"rows", arr}}.dump(
      2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tach
