// tach info: the machine, as tach sees it, and anything about it that would skew numbers.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "format.h"
#include "head_option.h"
#include "tach/parameter_count.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "tach/model.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/runtime.h"
#include "tach/system_info.h"
#include "usage.h"

namespace tach::cli {

namespace {
struct InfoOptions {
  bool json = false;
  std::string model;
  std::string compute = "f32";
  std::string head = "auto";
  bool ceilings = false, remeasure = false;
};

// What loading a model costs in memory: the file, tach's packed copies, the mapping, and what
// the kernel says is resident (RSS before and after, so the cost is the model's alone).
int run_model_info(const InfoOptions& opt) {
  check_dtype_on_device(opt.compute, "cpu");  // the model is loaded on the CPU
  LoadOptions lo;
  lo.compute = parse_compute_dtype(opt.compute);
  lo.head = head_to_load(opt.head, HeadUse::as_published);
  const ProcessMemory before = read_process_memory();
  const auto t0 = std::chrono::steady_clock::now();
  auto model = load_model(opt.model, lo);
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ProcessMemory after = read_process_memory();
  const MemoryStats m = memory_stats(Device::cpu());
  const ModelInfo& i = model->info();
  const int64_t resident = after.rss_bytes - before.rss_bytes;
  if (opt.json) {
    nlohmann::json j = {{"spec", i.spec},
                        {"source", i.source},
                        {"architecture", i.architecture},
                        {"parameters", i.parameters},
                        {"weights_dtype", i.weights_dtype},
                        {"compute_dtype", opt.compute},
                        {"layers", i.num_layers},
                        {"hidden", i.hidden_size},
                        {"heads", i.num_heads},
                        {"kv_heads", i.num_kv_heads},
                        {"vocab", i.vocab_size},
                        {"head", head_name(i.head)},
                        {"checkpoint_head", head_name(i.checkpoint_head)},
                        {"labels", i.labels},
                        {"embedding", i.embedding ? nlohmann::json{{"pooling", i.pooling},
                                                                   {"normalized", i.normalized},
                                                                   {"dims", i.embedding_dim},
                                                                   {"max_seq_length", i.max_seq_length}}
                                                  : nlohmann::json(nullptr)},
                        {"file_bytes", i.disk_bytes},
                        {"allocator_weights_bytes", m[MemoryCategory::weights].current},
                        {"mapped_bytes", m.mapped.current},
                        {"rss_added_by_load_bytes", resident},
                        {"peak_rss_bytes", after.peak_rss_bytes},
                        {"load_s", load_s},
                        {"notes", i.notes}};
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << "model      " << i.spec << ": " << i.architecture << ", " << parameter_count_text(i.parameters)
            << " parameters, weights " << i.weights_dtype << ", compute " << opt.compute << "\n"
            << "           " << i.source << "\n"
            << "shape      " << i.num_layers << " layers, hidden " << i.hidden_size << ", " << i.num_heads << " heads"
            << (i.num_kv_heads ? " (" + std::to_string(i.num_kv_heads) + " key/value)" : std::string()) << ", vocab "
            << i.vocab_size << ", positions " << i.positions << "\n";
  if (!i.causal_lm || i.head != Head::none)
    std::cout << "head       " << head_name(i.head)
              << (i.head == i.checkpoint_head
                      ? std::string(" (as published)")
                      : std::string(" (new; published with ") + head_name(i.checkpoint_head) + ")")
              << (i.head == Head::question_answering ? ": start and end logits per token"
                  : i.head == Head::masked_lm        ? ": vocabulary logits per token"
                                                     : "")
              << "\n";
  if (i.classifier) std::cout << "labels     " << i.labels.size() << " (" << i.problem_type << ")\n";
  if (i.head == Head::token_classification) {
    std::string list;
    for (const auto& l : i.labels) list += (list.empty() ? "" : " ") + l;
    std::cout << "labels     " << i.labels.size() << " per token (" << list << ")\n";
  }
  if (i.embedding)
    std::cout << "embedding  " << i.embedding_dim << " dims, " << i.pooling << " pooling"
              << (i.normalized ? ", L2-normalised" : "") << ", texts cut at " << i.max_seq_length << " tokens\n";
  std::cout << "load       " << fixed(load_s, 2) << " s\n"
            << "memory     file "
            << (i.disk_bytes ? human_bytes(double(i.disk_bytes)) : std::string("none (synthetic)"))
            << "; tach's packed weights " << human_bytes(double(m[MemoryCategory::weights].current)) << "; file mapped "
            << human_bytes(double(m.mapped.current)) << " (read in place, pages dropped after "
            << "packing)\n"
            << "resident   RSS grew by " << human_bytes(double(resident)) << " while loading (procfs VmRSS before "
            << "and after; peak " << human_bytes(double(after.peak_rss_bytes)) << " for the process)";
  if (i.disk_bytes) std::cout << ", " << fixed(double(resident) / double(i.disk_bytes), 2) << "x the file";
  std::cout << "\n";
  for (const auto& n : i.notes) std::cout << "note       " << n << "\n";
  return 0;
}

int run_info(const InfoOptions& opt) {
  if (!opt.model.empty()) return run_model_info(opt);
  if (opt.ceilings) {
    const MachineCeilings c = machine_ceilings(opt.remeasure);
    std::cout << "ceilings   GEMM f32 " << fixed(c.gemm_f32_flops * 1e-9, 1) << " GFLOP/s, GEMM bf16 "
              << fixed(c.gemm_bf16_flops * 1e-9, 1) << " GFLOP/s, GEMM int8 " << fixed(c.gemm_int8_ops * 1e-9, 1)
              << " GOP/s, memory " << fixed(c.memory_bytes_per_s * 1e-9, 1) << " GB/s (triad), "
              << fixed(c.memory_read_bytes_per_s * 1e-9, 1) << " GB/s (read only)\n           " << c.method
              << "\n           on " << c.cpu << ", " << describe_ceilings_provenance(c) << "\n";
    for (int i = 0; i < cuda_device_count(); ++i) {
      const GpuCeilings g = measure_gpu_ceilings(Device::cuda(i));
      std::cout << g.device << "     GEMM f32 " << fixed(g.gemm_f32_flops * 1e-12, 1) << " TFLOP/s, tf32 "
                << fixed(g.gemm_tf32_flops * 1e-12, 1) << ", bf16 " << fixed(g.gemm_bf16_flops * 1e-12, 1) << ", f16 "
                << fixed(g.gemm_f16_flops * 1e-12, 1) << " TFLOP/s, memory " << fixed(g.memory_bytes_per_s * 1e-9, 0)
                << " GB/s\n           " << g.method << "\n           on " << g.name << ", measured now ("
                << g.measured_at << ", not cached)\n";
    }
    return 0;
  }
  const SystemInfo s = system_info();
  if (opt.json) {
    nlohmann::json j;
    j["cpu_model"] = s.cpu_model;
    j["logical_cores"] = s.logical_cores;
    j["threads"] = s.threads;
    j["threads_default"] = default_threads_reason();
    j["isa"] = s.isa.summary();
    j["memory_total_bytes"] = s.memory_total_bytes;
    j["memory_available_bytes"] = s.memory_available_bytes;
    j["gemm_library"] = s.gemm_library;
    j["onednn_version"] = s.onednn_version;
    j["openblas"] = {{"config", s.openblas_config}, {"core", s.openblas_core}, {"threads", s.openblas_threads}};
    j["warnings"] = s.warnings;
    j["cuda_devices"] = nlohmann::json::array();
    for (const auto& d : s.cuda)
      j["cuda_devices"].push_back(
          {{"index", d.index},
           {"name", d.name},
           {"compute_capability", std::to_string(d.sm_major) + "." + std::to_string(d.sm_minor)},
           {"multiprocessors", d.multiprocessors},
           {"total_bytes", d.total_bytes},
           {"free_bytes", d.free_bytes}});
    if (s.cuda.empty()) j["cuda_note"] = s.cuda_note;
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
  }
  std::cout << "cpu        " << s.cpu_model << "\n"
            << "cores      " << s.logical_cores << " logical, tach uses " << s.threads
            << (s.threads == 1 ? " thread" : " threads") << " by default (" << default_threads_reason()
            << "; -t chooses)\n"
            << "isa        " << s.isa.summary() << "\n"
            << "memory     " << human_bytes(double(s.memory_total_bytes)) << " total, "
            << human_bytes(double(s.memory_available_bytes)) << " available\n"
            << "gemm       " << s.gemm_library << " (oneDNN " << s.onednn_version << ")\n"
            << "openblas   " << s.openblas_config << "; kernels for '" << s.openblas_core << "', " << s.openblas_threads
            << " threads\n";
  if (s.isa.avx512f && !s.isa.avx512_bf16)
    std::cout << "bf16       no avx512_bf16 on this CPU: bf16 GEMMs are emulated and slower than f32\n";
  if (s.cuda.empty()) {
    std::cout << "cuda       none (" << s.cuda_note << ")\n";
  } else {
    for (const auto& d : s.cuda)
      std::cout << "cuda:" << d.index << "     " << d.name << ", sm_" << d.sm_major << d.sm_minor << ", "
                << d.multiprocessors << " SMs, " << human_bytes(double(d.total_bytes)) << " ("
                << human_bytes(double(d.free_bytes)) << " free)\n";
  }
  for (const auto& w : s.warnings) std::cout << "WARNING    " << w << "\n";
  return 0;
}
}  // namespace

Command add_info_command(CLI::App& app) {
  auto opt = std::make_shared<InfoOptions>();
  CLI::App* sub = app.add_subcommand("info",
                                     "Show the CPU, ISA, memory, GEMM libraries and CUDA devices; warn about "
                                     "settings that skew measurements");
  sub->add_flag("--json", opt->json, "Print machine-readable JSON");
  sub->add_option("-m,--model", opt->model,
                  "Describe a model instead: its shape, and the memory loading it takes "
                  "(file, packed weights, mapping, resident)");
  sub->add_option("--dtype", opt->compute, "With --model: compute dtype f32, bf16, int8 or nf4")->capture_default_str();
  add_head_option(sub, opt->head, HeadUse::as_published);
  sub->add_flag("--ceilings", opt->ceilings,
                "Show the machine's ceilings for the roofline: peak GEMM FLOP/s per dtype "
                "and STREAM bandwidth (measured once, then cached); with a GPU, its cuBLASLt GEMM FLOP/s per "
                "precision and copy bandwidth too (measured each time)");
  sub->add_flag("--remeasure", opt->remeasure, "With --ceilings: measure again instead of reading the cache");
  return {sub, [opt] { return run_info(*opt); }};
}

}  // namespace tach::cli
