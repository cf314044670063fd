// The profiler: op- and module-level spans from inside the engine, a schedule (skip_first,
// wait, warmup, active, repeat, as torch.profiler's), Chrome/Perfetto traces, op tables,
// collapsed stacks, machine ceilings, roofline verdicts, step accounting and leak verdicts.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tach/dtype.h"
#include "tach/memory.h"

namespace tach {

// Counted in steps (Profiler::step() ends one). After skip_first steps, cycles of wait (nothing
// recorded), warmup (recording on, events discarded) and active (kept), repeat times (0 = until
// stop()). The same meaning as torch.profiler.schedule.
struct ProfileSchedule {
  int skip_first = 0, wait = 0, warmup = 1, active = 3, repeat = 1;
  enum class Phase { skip, wait, warmup, active, done };
  Phase phase(int64_t step) const;  // the phase of step `step` (0-based)
  std::string describe() const;
};

struct ProfilerOptions {
  ProfileSchedule schedule;
  size_t max_events = 2'000'000;  // a cap on kept events; more are dropped, counted and reported
  bool memory_logging = true;     // allocator and RSS samples at step ends
  int memory_log_steps = 1;       // ... every N steps
  // With the CUDA backend and a GPU: every kernel, copy and memset from CUPTI's Activity API,
  // each put under the op whose launch queued it (ProfileData::gpu_activity, ProfileEvent::gpu_ns).
  bool gpu_activity = true;
  Device memory_device = Device::cpu();  // whose allocator books the step samples read
};

enum class EventKind : uint8_t { op, module, scope };

struct ProfileEvent {
  EventKind kind = EventKind::op;
  std::string name;    // "linear", "layers.3", "forward"
  std::string path;    // enclosing modules and scopes, outermost first, '.'-joined ("model.layers.3.self_attn")
  std::string stack;   // the same spans ';'-joined, for collapsed stacks
  std::string detail;  // shapes and dtype of an op
  uint32_t thread = 0;
  uint16_t depth = 0;
  int64_t step = 0;
  int64_t start_ns = 0, end_ns = 0;  // steady clock
  double flops = 0, bytes = 0;
  int64_t allocated_bytes = 0, freed_bytes = 0;
  double self_ns = 0;  // end - start minus the children's (filled by the profiler)
  // GPU time of the kernels, copies and memsets this op's launches queued (CUPTI), summed; 0 on
  // the CPU. An op's span times its launch on the host; this is its work on the device.
  double gpu_ns = 0;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// One kernel, copy or memset on a GPU, from CUPTI, on the steady clock of the spans.
struct GpuActivityEvent {
  std::string name;  // the kernel's (mangled) name, "memcpy HtoD", "memset"
  std::string kind;  // kernel | memcpy | memset
  uint32_t device = 0, stream = 0;
  int64_t start_ns = 0, end_ns = 0;
  int64_t launch_ns = -1;  // host time of the runtime call that queued it; -1 unknown
  int64_t bytes = 0;
  int64_t step = -1;  // the active step it was launched in; -1 outside them (discarded)
  int64_t op = -1;    // index in ProfileData::events of the op that launched it; -1 none
};

struct StepSample {
  int64_t step = 0;
  bool active = false;
  int64_t start_ns = 0, end_ns = 0;
  std::array<int64_t, kMemoryCategoryCount> allocator_bytes{};  // current at the step's end
  int64_t allocator_total_bytes = 0, rss_bytes = 0;
  double cpu_energy_j = -1;  // RAPL since the profiler started; -1 when unavailable
};

// The job a data-parallel rank's profile belongs to: the trace says it as Kineto does
// (distributedInfo), so trace analysers (Holistic Trace Analysis) line the ranks up.
struct DistributedInfo {
  std::string backend = "none";
  int rank = 0, world_size = 1;
};

struct ProfileData {
  std::vector<ProfileEvent> events;  // kept events of active steps, by start time
  std::vector<StepSample> steps;     // every step seen, active or not
  int64_t dropped_events = 0;
  int64_t origin_ns = 0;  // the profiler's start: trace timestamps count from here
  ProfileSchedule schedule;
  std::vector<GpuActivityEvent> gpu_activity;  // launched in active steps, by start time
  std::string gpu_activity_note;               // why there is none, or what was lost; "" otherwise
  DistributedInfo distributed;                 // world_size 1: one process
};

class Profiler {
 public:
  explicit Profiler(ProfilerOptions options = {});
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  void start();  // begins step 0
  void step();   // ends the current step and begins the next
  void stop();
  ProfileData data() const;  // events with paths and self times filled in
  bool recording() const;    // in a warmup or active step now

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A user scope ("forward", "tokenize", "optimizer"): an RAII object, not a macro, so that no
// hidden local is declared (house style). Nests module and op spans inside it.
class ProfileScope {
 public:
  explicit ProfileScope(const char* name);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// What the machine can do, measured once and cached per machine (~/.cache/tach/).
struct MachineCeilings {
  double gemm_f32_flops = 0;           // FLOP/s, oneDNN sgemm 1024^3 (best of repetitions)
  double gemm_bf16_flops = 0;          // FLOP/s, oneDNN bf16 matmul (emulated where the CPU lacks bf16)
  double gemm_int8_ops = 0;            // multiply-adds x 2 per second: --dtype int8's GEMM (s8 x s8 -> s32)
  double gemm_f16_flops = 0;           // FLOP/s, a GPU's f16 GEMM (0 on a CPU: no f16 GEMM there)
  double memory_bytes_per_s = 0;       // STREAM triad, all threads, arrays well past the caches
  double memory_read_bytes_per_s = 0;  // a read-only sum over 384 MiB, all threads: a GEMV's traffic
  int threads = 0;
  std::string cpu, measured_at, cache_file, method;
  // The load while it was measured: CPU time other processes used during the measurement, in
  // cores (tach/monitor.h CpuLoadWindow: /proc/stat minus this process's own time), and the
  // 1-minute load average. A measurement taken while others held more than kMaxOtherCores, or
  // whose load could not be read, is under_load and never cached; a cache that does not record
  // its load, or records more than kMaxOtherCores, is measured again.
  double other_cores = 0, load_average = 0;
  bool load_measured = false;
  bool under_load = false;
  bool from_cache = false;  // read from cache_file rather than measured by this call
  double age_s = 0;         // seconds since measured_at
};
inline constexpr double kMaxOtherCores = 0.25;
MachineCeilings machine_ceilings(bool remeasure = false);
// The cached ceilings of this machine and thread count, without measuring; nullopt when none.
std::optional<MachineCeilings> cached_machine_ceilings();
std::string machine_ceilings_cache_file();  // where they are cached, for this machine and thread count
// The memory bandwidth alone: from the cache when there is one, else STREAM measured now (about
// a second; not cached, and the method says so), once per process: later calls (each decoding
// point of a sweep) get the same figure, or this process's full measurement under load if it took one.
// For decoding's bandwidth limit.
MachineCeilings memory_bandwidth_ceiling();
// Where `c` came from, its age and the load it was measured under, in one line.
std::string describe_ceilings_provenance(const MachineCeilings& c);

// What a GPU can do, measured now (about two seconds; not cached: a GPU's clocks move with its
// temperature and power limit, and a reading is cheap). FLOP/s of cuBLASLt GEMMs of 8192^3 (f32:
// 4096^3) per precision, best of 10 timed with CUDA events after 3 warm-ups; memory: a
// device-to-device copy of 1 GiB, bytes read plus written, best of 10. An error without a GPU.
struct GpuCeilings {
  std::string device, name, method, measured_at;
  double gemm_f32_flops = 0, gemm_tf32_flops = 0, gemm_bf16_flops = 0, gemm_f16_flops = 0;
  double memory_bytes_per_s = 0;
};
GpuCeilings measure_gpu_ceilings(Device device);
// A GPU's ceilings in the roofline's terms (f32 and bf16 GEMM FLOP/s, memory bandwidth), so
// that op tables and verdicts of a GPU profile are judged against the GPU. tf32: the f32 GEMMs
// ran on TF32 tensor cores (--allow-tf32), so the f32 ceiling is the TF32 GEMM's.
MachineCeilings as_machine_ceilings(const GpuCeilings& g, bool tf32 = false);

// Decoding's floor: a step reads every weight and the key/value cache, so it takes at least
// their bytes over the memory bandwidth: the CPU's STREAM triad (the figure roofline tools quote)
// and its read-only stream (what a GEMV does, and on some machines far less), or the GPU's
// device copy. Fractions are limit / median step (1: at the limit).
struct DecodeLimit {
  double bytes_per_step = 0;  // weights + the cache's mean over the steps
  double bandwidth = 0, limit_s = 0, fraction = 0;
  double read_bandwidth = 0, read_limit_s = 0, read_fraction = 0;  // the CPU's read-only stream; 0 on a GPU
  std::string method;                                              // where the bandwidth came from
  std::string warning;  // the steps beat a limit by more than 10%: its bandwidth figure is too low for this run
};
// The bandwidth from the cached ceilings (or STREAM measured now) on the CPU, measured now on a GPU.
DecodeLimit decode_limit(double bytes_per_step, Device device, double median_step_s);

enum class Bound { compute, memory, overhead };
const char* bound_name(Bound b);
struct RooflineVerdict {
  Bound bound = Bound::overhead;
  double achieved_fraction = 0;  // of the ceiling that binds: time at the ceiling / time taken
  double intensity = 0;          // FLOP per byte
  // Faster than the ceiling allows, by more than measurement noise (kCeilingTolerance): the
  // ceiling is wrong (measured under load, or on another setting), not the op.
  bool above_ceiling = false;
};
inline constexpr double kCeilingTolerance = 1.10;
// The compute ceiling of a precision: c's GEMM FLOP/s at it (int8: its ops per second).
double gemm_ceiling(const MachineCeilings& c, DType compute);
// The precision an op's detail says its multiplies ran at, for the ceiling that judges it: bf16 or
// f16 where it names them (a linear's "]ᵀ bf16", attention's "cudnn fused (f16)"), int8 (bf16 on a
// GPU, whose int8 and nf4 are weight-only with bf16 activations), else f32.
DType ceiling_dtype_of(const std::string& detail, bool on_gpu);
// overhead-bound: the time is more than `overhead_factor` times what either ceiling allows.
// compute: the GEMM precision the op ran at (f32, bf16, f16 or i8), which picks the compute ceiling.
RooflineVerdict roofline(double flops, double bytes, double seconds, const MachineCeilings& c,
                         DType compute = DType::f32, double overhead_factor = 10);

struct OpTableRow {
  std::string key;  // op name, module path, or "op | detail"
  int64_t calls = 0;
  double total_ns = 0, self_ns = 0, flops = 0, bytes = 0;
  int64_t allocated_bytes = 0, freed_bytes = 0;
  double percent_of_steps = 0;  // self time over the active steps' wall time
  // GPU time of the kernels the rows' launches queued (CUPTI); 0 on the CPU. Where it is there,
  // the roofline verdict judges it (the host span times only the launch).
  double gpu_ns = 0;
  RooflineVerdict verdict;
  // A CPU row that beats the DRAM bandwidth ceiling (and not the compute one) with bytes per call
  // that fit in the last-level cache: its operands stay in the cache between calls, so the DRAM
  // ceiling does not bind it. Its verdict is then not above_ceiling: the ceiling is not wrong.
  bool cache_resident = false;
};
// group_by: op | module | shape (op and its detail).  sort_by: self | total | memory | flops
// last_level_cache_bytes: the CPU's, for cache_resident; -1 reads it from sysfs, 0 means unknown.
std::vector<OpTableRow> op_table(const ProfileData& data, const std::string& group_by, const std::string& sort_by,
                                 const MachineCeilings& ceilings, int64_t last_level_cache_bytes = -1);
// Why a cache_resident row beats the DRAM ceiling, in words (its bytes per call, the cache's size).
std::string cache_resident_note(const OpTableRow& row, int64_t last_level_cache_bytes);
std::string op_table_text(const std::vector<OpTableRow>& rows, size_t limit);
std::string op_table_csv(const std::vector<OpTableRow>& rows);
std::string op_table_json(const std::vector<OpTableRow>& rows);

// Chrome trace event format (JSON; opens in ui.perfetto.dev and chrome://tracing): complete
// events nested per thread, thread names, counter tracks for allocator memory per category and RSS.
std::string chrome_trace_json(const ProfileData& data);
// Writes the trace to path; gzip-compressed (zlib) when path ends in ".gz" (Perfetto opens both).
void write_chrome_trace(const ProfileData& data, const std::string& path);
// Collapsed stacks ("model;layers.0;self_attn;linear 1234", self time in µs) for flame graphs.
std::string collapsed_stacks(const ProfileData& data);

// Step time against the ops inside it: the gap is named.
struct StepAccounting {
  double step_ns = 0;            // median wall time of the active steps
  double ops_ns = 0;             // median per step of the outermost ops' time
  double inside_modules_ns = 0;  // per step: in model modules but between ops (checks, buffers, copies)
  double outside_ns = 0;         // per step: outside every module (the caller: inputs, the loop)
  double profiler_ns_per_event = 0;
};
StepAccounting step_accounting(const ProfileData& data);

// What recording one span costs on this machine (ns): spans recorded into a throwaway profiler
// in a tight loop (median of several batches). Times events per step gives the profiler's
// overhead without the machine's step-to-step noise.
double profiler_ns_per_event();

struct LeakVerdict {
  bool leak = false;
  std::vector<std::string> growing_categories;  // "activations: +4.0 MiB per step"
  std::vector<std::string> growing_scopes;      // module paths whose allocations outlive them
  double bytes_per_step = 0;
  std::string explanation;
};
// Steady growth of the allocator across steps beyond threshold_bytes in all (least squares).
LeakVerdict detect_leak(const ProfileData& data, int64_t threshold_bytes = 1 << 20);

// Ops whose achieved rate exceeds the ceiling by more than kCeilingTolerance, in words; empty when
// the ceilings are consistent with what was measured. A non-empty answer means every verdict is
// suspect: the ceilings should be measured again.
std::vector<std::string> ceiling_violations(const ProfileData& data, const MachineCeilings& ceilings);

// The top bottlenecks in words, with what would move them.
std::vector<std::string> bottlenecks(const ProfileData& data, const MachineCeilings& ceilings, size_t top = 3);

// profile.json (schema tach.profile/1): the ceilings the verdicts used (and where they came from),
// the step accounting (the op-sum against the step's wall time), the top bottlenecks in words,
// the leak verdict and the ops table by op; what tach report draws the roofline and gap from.
std::string profile_summary_json(const ProfileData& data, const MachineCeilings& ceilings);

}  // namespace tach
