#include "analyze/roofline.h"

#include <algorithm>

#include "analyze/op_cost.h"

namespace tach::analyze {

std::optional<PeakFlops> published_peak(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  // {device, FP32, TF32, BF16} in TFLOP/s, dense; memory bandwidth in TB/s.
  auto gpu = [](const char* device, double f32, double tf32, double bf16, double tb_per_s, const char* sheet) {
    const std::string source = std::string("NVIDIA ") + sheet + " datasheet";
    return PeakFlops{device, f32, tf32, bf16, source + " (dense)", tb_per_s * 1e12, source};
  };
  if (has("H200")) return gpu("H200 SXM", 67e12, 494.7e12, 989.4e12, 4.8, "H200");
  if (has("H100") && (has("PCIe") || has("PCIE"))) return gpu("H100 PCIe", 51e12, 378e12, 756e12, 2.0, "H100");
  if (has("H100") && has("NVL")) return gpu("H100 NVL", 60e12, 417.5e12, 835.5e12, 3.9, "H100");
  if (has("H100")) return gpu("H100 SXM", 67e12, 494.7e12, 989.4e12, 3.35, "H100");
  if (has("A100")) {
    // 80 GB boards: 2.039 TB/s (SXM), 1.935 (PCIe); 40 GB boards: 1.555.
    const double tb = has("80GB") ? (has("PCIe") || has("PCIE") ? 1.935 : 2.039) : 1.555;
    return gpu("A100", 19.5e12, 156e12, 312e12, tb, "A100");
  }
  if (has("L40S")) return gpu("L40S", 91.6e12, 183e12, 362.05e12, 0.864, "L40S");
  if (has("L4")) return gpu("L4", 30.3e12, 60e12, 121e12, 0.3, "L4");
  if (has("A10") && !has("A100")) return gpu("A10", 31.2e12, 62.5e12, 125e12, 0.6, "A10");
  // Volta has no TF32 and no bf16: f32 GEMMs run at the FP32 peak, f16 at the tensor cores' (the
  // bf16 column stands for f16 and bf16); 900 GB/s on both boards.
  if (has("V100")) {
    PeakFlops v = has("PCIe") || has("PCIE") ? gpu("V100 PCIe", 14e12, 14e12, 112e12, 0.9, "V100")
                                             : gpu("V100 SXM2", 15.7e12, 15.7e12, 125e12, 0.9, "V100");
    v.half = "f16";
    return v;
  }
  return std::nullopt;
}

std::string gemm_precision(const std::string& types) {
  if (types.find("BFloat16") != std::string::npos) return "bf16";
  if (types.find("Half") != std::string::npos) return "f16";
  if (types.find("float") != std::string::npos) return "f32";
  return "";
}

double peak_at(const PeakFlops& peak, const std::string& precision) {
  return precision == "bf16" || precision == "f16" ? peak.bf16 : peak.f32;
}

void add_trace_costs(const Trace& t, std::map<std::string, NameCost>& costs) {
  // Events come sorted by start, the longer first where two start together, so a same-named call
  // nested in another on its thread comes after it and starts before its end.
  std::map<std::pair<uint32_t, uint32_t>, int64_t> open_until;  // (thread, name) → end of the last call
  // Signatures repeat over millions of events: each one asked of the model once (-1: not yet).
  std::vector<int8_t> known(t.signatures.size(), -1);
  std::vector<std::optional<OpCost>> cost(t.signatures.size());
  std::vector<NameCost*> by_signature(t.signatures.size(), nullptr);
  for (const CpuEvent& e : t.cpu) {
    const Signature& sig = t.signature(e);
    int8_t& k = known[e.signature];
    if (k < 0) {
      k = sig.category == Category::cpu_op && has_cost_model(t.strings.str(sig.name)) ? 1 : 0;
      if (k) {
        cost[e.signature] = op_cost(t.strings.str(sig.name), t.strings.str(sig.shapes), t.strings.str(sig.types));
        by_signature[e.signature] = &costs[t.strings.str(sig.name)];
      }
    }
    if (!k) continue;
    int64_t& until = open_until[{e.thread, sig.name}];
    if (e.start_ns < until) continue;  // inside a call of its own name: torch's one row
    until = e.end_ns;
    NameCost& c = *by_signature[e.signature];
    ++c.calls;
    const std::optional<OpCost>& oc = cost[e.signature];
    if (!oc) continue;
    ++c.costed_calls;
    c.flops += oc->flops;
    c.bytes += oc->bytes;
    if (c.precision.empty()) c.precision = gemm_precision(t.strings.str(sig.types));
  }
}

nlohmann::ordered_json roofline_ops(const std::vector<OpRow>& rows, const std::map<std::string, NameCost>& costs,
                                    const PeakFlops& peak) {
  using json = nlohmann::ordered_json;
  json out = json::array();
  if (peak.bytes_per_s <= 0) return out;
  struct Time {
    int64_t calls = 0, device_ns = 0, cpu_ns = 0;
  };
  std::map<std::string, Time> times;
  for (const auto& r : rows) {
    if (r.kind != RowKind::cpu) continue;
    Time& t = times[r.name];
    t.calls += r.calls;
    t.device_ns += r.device_ns;
    t.cpu_ns += r.cpu_ns;
  }
  struct Entry {
    std::string name;
    int64_t time_ns;
    json j;
  };
  std::vector<Entry> entries;
  for (const auto& [name, c] : costs) {
    const auto t = times.find(name);
    // Every call costed, so that bytes and FLOPs cover the time they are divided by.
    if (t == times.end() || c.costed_calls == 0 || c.costed_calls != c.calls || c.bytes <= 0) continue;
    const int64_t time_ns = t->second.device_ns > 0 ? t->second.device_ns : t->second.cpu_ns;
    if (time_ns <= 0) continue;
    const double ceiling = peak_at(peak, c.precision);
    const Bound b = roofline_bound(c.flops, c.bytes, ceiling, peak.bytes_per_s);
    const double seconds = double(time_ns) * 1e-9;
    const double flops_per_s = double(c.flops) / seconds, bytes_per_s = double(c.bytes) / seconds;
    entries.push_back({name, time_ns,
                       json{{"name", name},
                            {"calls", c.calls},
                            {"precision", c.precision},
                            {"time_us", double(time_ns) * 1e-3},
                            {"flops", c.flops},
                            {"bytes", c.bytes},
                            {"intensity", b.intensity},
                            {"ridge", b.ridge},
                            {"bound", b.memory_bound ? "memory" : "compute"},
                            {"flops_per_s", flops_per_s},
                            {"bytes_per_s", bytes_per_s},
                            {"peak_fraction", ceiling > 0 ? json(flops_per_s / ceiling) : json(nullptr)},
                            {"bandwidth_fraction", bytes_per_s / peak.bytes_per_s}}});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.name < b.name;
  });
  for (auto& e : entries) out.push_back(std::move(e.j));
  return out;
}

}  // namespace tach::analyze
