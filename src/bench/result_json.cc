// results.jsonl lines: one PointResult per line, schema "tach.bench.point/3" (docs/formats.md): /3
// added training points (kind, method, exec, gradient checkpointing, the train block), and later
// the engine (absent: tach) with another engine's block. /2 lines
// (inference only) and /1 lines (before the raw latencies were kept) are still read.
// Units are in the field names (_ms, _s, _bytes, _per_s).
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_internal.h"
#include "tach/error.h"

namespace tach {

namespace {

constexpr const char* kPointSchema = "tach.bench.point/3";
constexpr const char* kPointSchemaV2 = "tach.bench.point/2";
constexpr const char* kPointSchemaV1 = "tach.bench.point/1";

nlohmann::json dist_json(const Distribution& d) {
  return {{"n", d.n},     {"median", d.median}, {"mean", d.mean}, {"std", d.std}, {"min", d.min},
          {"max", d.max}, {"p90", d.p90},       {"p95", d.p95},   {"p99", d.p99}};
}

Distribution dist_from(const nlohmann::json& j) {
  Distribution d;
  d.n = j.at("n");
  d.median = j.at("median");
  d.mean = j.at("mean");
  d.std = j.at("std");
  d.min = j.at("min");
  d.max = j.at("max");
  d.p90 = j.at("p90");
  d.p95 = j.at("p95");
  d.p99 = j.at("p99");
  return d;
}

}  // namespace

std::string threads_label(const PointResult& p) {
  if (p.key.threads > 0) return std::to_string(p.key.threads);
  return p.threads_used > 0 ? std::to_string(p.threads_used) + " (default)" : "default";
}

const std::vector<std::string>& point_axes() {
  static const std::vector<std::string> axes = {"variant", "engine",  "device", "dtype", "threads",
                                                "batch",   "seq_len", "method", "exec",  "gradient_checkpointing"};
  return axes;
}

namespace {

std::string axes_list() {
  std::string s;
  for (const auto& a : point_axes()) s += (s.empty() ? "" : ", ") + a;
  return s;
}

}  // namespace

std::string PointKey::value_of(const std::string& axis) const {
  if (axis == "variant") return variant;
  if (axis == "engine") return engine == "tach" ? "" : engine;  // tach's points keep the ids they had
  if (axis == "device") return device;
  if (axis == "dtype") return dtype;
  // Appended rather than "t" + to_string(...): g++ 12 warns falsely (-Wrestrict) on the latter.
  const auto tagged = [](char tag, int64_t v) {
    std::string s(1, tag);
    s += std::to_string(v);
    return s;
  };
  if (axis == "threads") return tagged('t', threads);
  if (axis == "batch") return tagged('b', batch);
  if (axis == "seq_len") return tagged('s', seq_len);
  if (kind != "train") {
    check(axis == "method" || axis == "exec" || axis == "gradient_checkpointing", "no point axis '" + axis + "'");
    return "";
  }
  if (axis == "method") return method;
  if (axis == "exec") return exec;
  if (axis == "gradient_checkpointing") return gradient_checkpointing ? "gc-on" : "gc-off";
  throw Error("no point axis '" + axis + "' (axes: " + axes_list() + ")");
}

std::string PointKey::id_without(const std::string& skip) const {
  std::string id;
  bool found = false;
  for (const auto& axis : point_axes()) {
    if (axis == skip) {
      found = true;
      continue;
    }
    if (skip == "variant" && axis == "dtype" && !variant.empty()) continue;  // a variant fixes its dtype
    const std::string v = value_of(axis);
    if (!v.empty()) id += (id.empty() ? "" : "/") + v;
  }
  check(skip.empty() || found, "no point axis '" + skip + "' (axes: " + axes_list() + ")");
  return id;
}

std::string PointKey::id() const { return id_without(""); }

namespace {

nlohmann::json train_json(const PointResult::Train& t) {
  return {{"data_ms", dist_json(t.data_ms)},
          {"forward_ms", dist_json(t.forward_ms)},
          {"backward_ms", dist_json(t.backward_ms)},
          {"optimizer_ms", dist_json(t.optimizer_ms)},
          {"loss_first", t.loss_first},
          {"loss_last", t.loss_last},
          {"parameters", t.parameters},
          {"trainable_parameters", t.trainable_parameters},
          {"model_flops_per_step", t.model_flops_per_step},
          {"hardware_flops_per_step", t.hardware_flops_per_step},
          {"mfu", t.mfu},
          {"ceiling_gflops_per_s", t.ceiling_gflops_per_s},
          {"ceiling_load",
           {{"under_load", t.ceiling_under_load},
            {"other_cores", t.ceiling_other_cores},
            {"load_average", t.ceiling_load_average}}},
          {"gemm_time_share", t.gemm_time_share},
          {"gemm_efficiency", t.gemm_efficiency},
          {"estimate_bytes", t.estimate_bytes},
          {"available_bytes", t.available_bytes},
          {"precision", t.precision},
          {"world_size", t.world_size},
          {"communication_ms", dist_json(t.communication_ms)},
          {"communication_exposed_ms", dist_json(t.communication_exposed_ms)}};
}

PointResult::Train train_from(const nlohmann::json& j) {
  PointResult::Train t;
  t.data_ms = dist_from(j.at("data_ms"));
  t.forward_ms = dist_from(j.at("forward_ms"));
  t.backward_ms = dist_from(j.at("backward_ms"));
  t.optimizer_ms = dist_from(j.at("optimizer_ms"));
  t.loss_first = j.at("loss_first");
  t.loss_last = j.at("loss_last");
  t.parameters = j.at("parameters");
  t.trainable_parameters = j.at("trainable_parameters");
  t.model_flops_per_step = j.at("model_flops_per_step");
  t.hardware_flops_per_step = j.at("hardware_flops_per_step");
  t.mfu = j.at("mfu");
  t.ceiling_gflops_per_s = j.at("ceiling_gflops_per_s");
  if (j.contains("ceiling_load")) {  // absent in points written before it was recorded: unknown
    const auto& l = j.at("ceiling_load");
    t.ceiling_under_load = l.at("under_load");
    t.ceiling_other_cores = l.at("other_cores");
    t.ceiling_load_average = l.at("load_average");
  }
  t.gemm_time_share = j.at("gemm_time_share");
  t.gemm_efficiency = j.at("gemm_efficiency");
  t.estimate_bytes = j.at("estimate_bytes");
  t.available_bytes = j.at("available_bytes");
  t.precision = j.at("precision");
  // Points written before data-parallel sweeps: one process, no communication.
  t.world_size = j.value("world_size", 1);
  if (j.contains("communication_ms")) t.communication_ms = dist_from(j.at("communication_ms"));
  if (j.contains("communication_exposed_ms")) t.communication_exposed_ms = dist_from(j.at("communication_exposed_ms"));
  return t;
}

// Losses as JSON numbers, a non-finite one as null.
nlohmann::json losses_json(const std::vector<double>& losses) {
  nlohmann::json j = nlohmann::json::array();
  for (double v : losses) j.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
  return j;
}

std::vector<double> losses_from(const nlohmann::json& j) {
  std::vector<double> out;
  for (const auto& v : j) out.push_back(v.is_number() ? v.get<double>() : NAN);
  return out;
}

nlohmann::json engine_run_json(const PointResult::EngineRun& e) {
  nlohmann::json j = {
      {"versions", e.versions},
      {"task", e.task},
      {"one_time",
       {{"load_s", e.load_s},
        {"setup_kind", e.setup_kind},
        {"setup_s", e.setup_s},
        {"setup_cached", e.setup_cached},
        {"setup_cache_age_s", e.setup_cache_age_s},
        {"first_call_s", e.first_call_s}}},
      {"protocol",
       {{"ping_round_trip_us", e.ping_round_trip_us}, {"us_per_call", e.protocol_us_per_call}, {"chunks", e.chunks}}},
      {"outputs",
       {{"checked", e.outputs_checked},
        {"agree", e.outputs_agree},
        {"name", e.outputs_name},
        {"max_abs_diff", e.max_abs_diff},
        {"tolerance", e.tolerance},
        {"note", e.outputs_note}}},
      {"device_allocated_peak_bytes", e.device_allocated_peak_bytes},
      {"device_reserved_peak_bytes", e.device_reserved_peak_bytes},
      {"log", e.log}};
  if (!e.tach_losses.empty() || !e.engine_losses.empty())
    j["losses"] = {{"tach", losses_json(e.tach_losses)},
                   {"engine", losses_json(e.engine_losses)},
                   {"steps_compared", e.loss_steps_compared}};
  return j;
}

PointResult::EngineRun engine_run_from(const nlohmann::json& j) {
  PointResult::EngineRun e;
  e.versions = j.at("versions");
  e.task = j.at("task");
  const auto& o = j.at("one_time");
  e.load_s = o.at("load_s");
  e.setup_kind = o.at("setup_kind");
  e.setup_s = o.at("setup_s");
  e.setup_cached = o.at("setup_cached");
  e.setup_cache_age_s = o.at("setup_cache_age_s");
  e.first_call_s = o.at("first_call_s");
  const auto& p = j.at("protocol");
  e.ping_round_trip_us = p.at("ping_round_trip_us");
  e.protocol_us_per_call = p.at("us_per_call");
  e.chunks = p.at("chunks");
  const auto& out = j.at("outputs");
  e.outputs_checked = out.at("checked");
  e.outputs_agree = out.at("agree");
  e.outputs_name = out.at("name");
  e.max_abs_diff = out.at("max_abs_diff");
  e.tolerance = out.at("tolerance");
  e.outputs_note = out.at("note");
  e.device_allocated_peak_bytes = j.at("device_allocated_peak_bytes");
  e.device_reserved_peak_bytes = j.at("device_reserved_peak_bytes");
  e.log = j.at("log");
  if (const auto l = j.find("losses"); l != j.end()) {  // training points only
    e.tach_losses = losses_from(l->at("tach"));
    e.engine_losses = losses_from(l->at("engine"));
    e.loss_steps_compared = l->at("steps_compared");
  }
  return e;
}

// A causal-LM point's decoding; written when it ran or said why not (method set).
nlohmann::json decode_json(const PointResult::Decode& d) {
  nlohmann::json j = {{"step_ms", dist_json(d.step_ms)},
                      {"step_samples_ms", d.step_samples_ms},
                      {"tokens_per_s", d.tokens_per_s},
                      {"time_to_first_token_ms", d.time_to_first_token_ms},
                      {"weight_bytes_per_step", d.weight_bytes_per_step},
                      {"cache_bytes_per_step", d.cache_bytes_per_step},
                      {"memory_bytes_per_s", d.memory_bytes_per_s},
                      {"limit_ms", d.limit_ms},
                      {"median_fraction_of_limit", d.fraction_of_limit},
                      {"memory_read_bytes_per_s", d.memory_read_bytes_per_s},
                      {"read_limit_ms", d.read_limit_ms},
                      {"median_fraction_of_read_limit", d.fraction_of_read_limit},
                      {"bandwidth_method", d.bandwidth_method},
                      {"method", d.method}};
  if (!d.warning.empty()) j["warning"] = d.warning;
  return j;
}

PointResult::Decode decode_from(const nlohmann::json& j) {
  PointResult::Decode d;
  d.step_ms = dist_from(j.at("step_ms"));
  d.step_samples_ms = j.at("step_samples_ms").get<std::vector<double>>();
  d.tokens_per_s = j.at("tokens_per_s");
  d.time_to_first_token_ms = j.at("time_to_first_token_ms");
  d.weight_bytes_per_step = j.at("weight_bytes_per_step");
  d.cache_bytes_per_step = j.at("cache_bytes_per_step");
  d.memory_bytes_per_s = j.at("memory_bytes_per_s");
  d.limit_ms = j.at("limit_ms");
  d.fraction_of_limit = j.at("median_fraction_of_limit");
  d.memory_read_bytes_per_s = j.at("memory_read_bytes_per_s");
  d.read_limit_ms = j.at("read_limit_ms");
  d.fraction_of_read_limit = j.at("median_fraction_of_read_limit");
  d.bandwidth_method = j.at("bandwidth_method");
  d.method = j.at("method");
  d.warning = j.value("warning", "");
  return d;
}

}  // namespace

std::string point_to_json(const PointResult& p) {
  nlohmann::json allocator = nlohmann::json::object();
  for (const auto& [cat, b] : p.allocator) allocator[cat] = {{"current_bytes", b.current}, {"peak_bytes", b.peak}};
  nlohmann::json j = {
      {"schema", kPointSchema},
      {"id", p.key.id()},
      {"engine", p.key.engine},
      {"kind", p.key.kind},
      {"device", p.key.device},
      {"dtype", p.key.dtype},
      {"threads", p.threads_used},
      {"threads_requested", p.key.threads},
      {"batch_size", p.key.batch},
      {"seq_len", p.key.seq_len},
      {"status", p.status},
      {"reason", p.reason},
      {"input", p.input},
      {"warmup_runs", p.warmup_runs},
      {"measured_runs", p.measured_runs},
      {"stopped_by", p.stopped_by},
      {"batch_latency_ms", dist_json(p.batch_latency_ms)},
      {"sample_latency_ms", dist_json(p.sample_latency_ms)},
      {"batch_latency_samples_ms", p.batch_latency_samples_ms},
      {"tokenize_ms_per_batch", dist_json(p.tokenize_ms_per_batch)},
      {"gpu_time_ms", dist_json(p.gpu_time_ms)},
      {"throughput",
       {{"samples_per_s", p.samples_per_s}, {"tokens_per_s", p.tokens_per_s}, {"batches_per_s", p.batches_per_s}}},
      {"padded_tokens_per_batch", p.padded_tokens_per_batch},
      {"real_tokens_per_batch", p.real_tokens_per_batch},
      {"flops_per_batch", p.flops_per_batch},
      {"achieved_gflops_per_s", p.achieved_gflops_per_s},
      {"attention", p.attention},
      {"gemm_tf32", p.gemm_tf32},
      {"activations", p.activations},
      {"memory",
       {{"rss_bytes", p.rss_bytes},
        {"peak_rss_bytes", p.peak_rss_bytes},
        {"peak_rss_is_per_point", p.peak_rss_is_per_point},
        {"allocator", allocator},
        {"device_memory_used_bytes", p.device_memory_used_bytes}}},
      {"energy",
       {{"j", p.energy_j},
        {"j_per_sample", p.energy_j_per_sample},
        {"j_per_token", p.energy_j_per_token},
        {"source", p.energy_source}}},
      {"overhead",
       {{"measured_wall_s", p.measured_wall_s},
        {"timer_overhead_ns", p.timer_overhead_ns},
        {"bookkeeping_ms", p.bookkeeping_ms}}},
      {"finished_at", p.finished_at},
  };
  if (p.key.kind == "train") {
    j["method"] = p.key.method;
    j["exec"] = p.key.exec;
    j["gradient_checkpointing"] = p.key.gradient_checkpointing;
    j["train"] = train_json(p.train);
  }
  if (!p.decode.method.empty()) j["decode"] = decode_json(p.decode);
  if (p.key.engine != "tach") j["engine_run"] = engine_run_json(p.engine_run);
  if (p.load.measured) j["load"] = bench::load_json(p.load);
  if (!p.key.variant.empty()) j["variant"] = p.key.variant;
  if (p.accuracy.measured)
    j["accuracy"] = {{"accuracy", p.accuracy.accuracy},
                     {"macro_f1", p.accuracy.macro_f1},
                     {"examples", p.accuracy.examples},
                     {"dataset", p.accuracy.dataset}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json bench::load_json(const PointResult::Load& l) {
  return {{"other_cores_mean", l.other_cores_mean},
          {"other_cores_max", l.other_cores_max},
          {"load_average_1m", l.load_average_1m},
          {"contended", l.contended}};
}

// A load object is written only where the load was measured.
PointResult::Load bench::load_from(const nlohmann::json& j) {
  PointResult::Load l;
  l.measured = true;
  l.other_cores_mean = j.at("other_cores_mean");
  l.other_cores_max = j.at("other_cores_max");
  l.load_average_1m = j.at("load_average_1m");
  l.contended = j.at("contended");
  return l;
}

PointResult point_from_json(const std::string& line, const std::string& where) {
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    const std::string schema = j.value("schema", "");
    check(schema == kPointSchema || schema == kPointSchemaV2 || schema == kPointSchemaV1,
          where + ": not a " + std::string(kPointSchema) + " (or /2, /1) line (schema '" + schema + "')");
    PointResult p;
    p.key.variant = j.value("variant", "");  // tach shrink's rows only
    if (j.contains("accuracy")) {
      const auto& a = j.at("accuracy");
      p.accuracy.measured = true;
      p.accuracy.accuracy = a.at("accuracy");
      p.accuracy.macro_f1 = a.at("macro_f1");
      p.accuracy.examples = a.at("examples");
      p.accuracy.dataset = a.at("dataset");
    }
    p.key.engine = j.value("engine", "tach");  // absent in lines written before other engines
    if (j.contains("engine_run")) p.engine_run = engine_run_from(j.at("engine_run"));
    p.key.kind = j.value("kind", "inference");
    check(p.key.kind == "inference" || p.key.kind == "train",
          where + ": kind '" + p.key.kind + "' is not inference or train");
    if (p.key.kind == "train") {
      p.key.method = j.at("method");
      p.key.exec = j.at("exec");
      p.key.gradient_checkpointing = j.at("gradient_checkpointing");
      p.train = train_from(j.at("train"));
    }
    p.key.device = j.at("device");
    p.key.dtype = j.at("dtype");
    // "threads" is the count used and "threads_requested" the count asked for (0: the default);
    // a line written before the two were told apart holds the count asked for alone.
    if (j.contains("threads_requested")) {
      p.key.threads = j.at("threads_requested");
      p.threads_used = j.at("threads");
    } else {
      p.key.threads = j.at("threads");
      p.threads_used = p.key.threads;
    }
    p.key.batch = j.at("batch_size");
    p.key.seq_len = j.at("seq_len");
    p.status = j.at("status");
    p.reason = j.at("reason");
    p.input = j.at("input");
    p.warmup_runs = j.at("warmup_runs");
    p.measured_runs = j.at("measured_runs");
    p.stopped_by = j.at("stopped_by");
    p.batch_latency_ms = dist_from(j.at("batch_latency_ms"));
    p.sample_latency_ms = dist_from(j.at("sample_latency_ms"));
    p.tokenize_ms_per_batch = dist_from(j.at("tokenize_ms_per_batch"));
    if (j.contains("gpu_time_ms")) p.gpu_time_ms = dist_from(j.at("gpu_time_ms"));  // absent before the CUDA backend
    if (schema != kPointSchemaV1)
      p.batch_latency_samples_ms = j.at("batch_latency_samples_ms").get<std::vector<double>>();
    const auto& t = j.at("throughput");
    p.samples_per_s = t.at("samples_per_s");
    p.tokens_per_s = t.at("tokens_per_s");
    p.batches_per_s = t.at("batches_per_s");
    p.padded_tokens_per_batch = j.at("padded_tokens_per_batch");
    p.real_tokens_per_batch = j.at("real_tokens_per_batch");
    p.flops_per_batch = j.at("flops_per_batch");
    p.achieved_gflops_per_s = j.at("achieved_gflops_per_s");
    // Absent before GPU points recorded it.
    p.attention = j.value("attention", "");
    p.gemm_tf32 = j.value("gemm_tf32", false);      // absent before --allow-tf32: full f32
    p.activations = j.value("activations", "f32");  // absent before 16-bit activations on the GPU
    const auto& m = j.at("memory");
    p.rss_bytes = m.at("rss_bytes");
    p.peak_rss_bytes = m.at("peak_rss_bytes");
    p.peak_rss_is_per_point = m.at("peak_rss_is_per_point");
    for (auto it = m.at("allocator").begin(); it != m.at("allocator").end(); ++it)
      p.allocator[it.key()] = {it.value().at("current_bytes"), it.value().at("peak_bytes")};
    p.device_memory_used_bytes = m.value("device_memory_used_bytes", int64_t(-1));
    if (j.contains("energy")) {
      const auto& en = j.at("energy");
      p.energy_j = en.at("j");
      p.energy_j_per_sample = en.at("j_per_sample");
      p.energy_j_per_token = en.at("j_per_token");
      p.energy_source = en.at("source");
    }
    const auto& o = j.at("overhead");
    p.measured_wall_s = o.at("measured_wall_s");
    p.timer_overhead_ns = o.at("timer_overhead_ns");
    p.bookkeeping_ms = o.at("bookkeeping_ms");
    p.finished_at = j.at("finished_at");
    if (j.contains("decode")) p.decode = decode_from(j.at("decode"));  // causal LMs' decoding, when it ran
    if (j.contains("load")) {  // absent before other processes' CPU use was measured per point
      p.load = bench::load_from(j.at("load"));
    }
    // Lines written before throughput was per batch over the median held totals over the summed
    // time: every line is read under the one definition (the same numbers for a new line).
    if (p.status == "ok") set_throughput_from_median(p);
    check(j.at("id") == p.key.id(), where + ": id '" + j.at("id").get<std::string>() + "' does not match its fields");
    return p;
  } catch (const nlohmann::json::exception& e) { throw Error(where + ": " + e.what()); }
}

}  // namespace tach
