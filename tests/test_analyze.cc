// tach analyze: the streaming trace reader (errors for what is not a whole trace) and the op table
// against torch's own key_averages() on the same profiling cycle (tests/fixtures/analyze/,
// written by scripts/golden/make_torch_traces.py with torch.profiler in the development
// virtualenv).
#include <gtest/gtest.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analyze/op_averages.h"
#include "analyze/trace.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::analyze {
namespace {

using nlohmann::json;

const std::string kFixtures = std::string(TACH_FIXTURES) + "/analyze/";

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
  gzclose(f);
  return out;
}

std::string contents(const Trace& t);

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}

TEST(TraceReader, ReadsEveryCategoryAndTheHeaderOfARealTrace) {
  const Trace t = load_trace(kFixtures + "train/trainer.0.pt.trace.json.gz");
  ASSERT_TRUE(t.rank.has_value());  // distributedInfo of a one-rank gloo group
  EXPECT_EQ(*t.rank, 0);
  EXPECT_EQ(t.world_size, 1);
  EXPECT_EQ(t.backend, "gloo");
  EXPECT_TRUE(t.with_flops && t.record_shapes && t.profile_memory && t.with_stack);
  std::map<Category, int> by_category;
  for (const auto& e : t.cpu) by_category[t.category(e)]++;
  EXPECT_EQ(by_category[Category::cpu_op], 2048);
  EXPECT_EQ(by_category[Category::user_annotation], 32);
  EXPECT_EQ(by_category[Category::python_function], 2294);
  EXPECT_EQ(t.memory.size(), 857u);
  EXPECT_TRUE(t.device.empty());  // a CPU-only session
  int steps = 0;
  for (const auto& e : t.cpu) steps += t.name(e).rfind("ProfilerStep#", 0) == 0;
  EXPECT_EQ(steps, 2);
}

TEST(TraceReader, PlainAndGzippedJsonReadTheSame) {
  test::TempDir dir;
  write_bytes(dir.file("t.json"), gunzip(kFixtures + "infer/server.0.pt.trace.json.gz"));
  const Trace a = load_trace(kFixtures + "infer/server.0.pt.trace.json.gz");
  const Trace b = load_trace(dir.file("t.json"));
  EXPECT_EQ(a.cpu.size(), b.cpu.size());
  EXPECT_EQ(a.memory.size(), b.memory.size());
  EXPECT_FALSE(a.rank.has_value());  // no process group: no distributedInfo
}

TEST(TraceReader, TruncatedGzipIsSaid) {
  test::TempDir dir;
  const std::string gz = read_bytes(kFixtures + "infer/server.0.pt.trace.json.gz");
  write_bytes(dir.file("cut.json.gz"), gz.substr(0, gz.size() / 2));
  const std::string e = error_of([&] { load_trace(dir.file("cut.json.gz")); });
  EXPECT_NE(e.find("cut.json.gz"), std::string::npos) << e;
  EXPECT_NE(e.find("gzip stream is truncated"), std::string::npos) << e;
}

// text as one gzip member (zlib's gzip writer, as torch's gzip.open).
std::string gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return read_bytes(path);
}

// Members one after another read as one stream (as zlib's gzread reads them), bytes after the last
// member are ignored as zlib ignores them, and a member whose data does not match its CRC-32 is
// refused.
TEST(TraceReader, GzipMembersTrailingBytesAndCorruptStreams) {
  test::TempDir dir;
  const std::string text = gunzip(kFixtures + "infer/server.0.pt.trace.json.gz");
  const std::string whole = contents(load_trace_text("t.json", text));
  const size_t half = text.size() / 2 + 7;
  write_bytes(dir.file("two.json.gz"),
              gzip(dir.file("a.gz"), text.substr(0, half)) + gzip(dir.file("b.gz"), text.substr(half)));
  EXPECT_EQ(contents(load_trace(dir.file("two.json.gz"))), whole);
  write_bytes(dir.file("tail.json.gz"), gzip(dir.file("c.gz"), text) + "\n\n");
  EXPECT_EQ(contents(load_trace(dir.file("tail.json.gz"))), whole);
  std::string bad = gzip(dir.file("d.gz"), text);
  bad[bad.size() - 6] ^= 0x55;  // the CRC-32, 8 bytes from the end
  write_bytes(dir.file("crc.json.gz"), bad);
  const std::string e = error_of([&] { load_trace(dir.file("crc.json.gz")); });
  EXPECT_NE(e.find("crc.json.gz: the gzip stream is corrupt (its CRC-32 does not match its data)"), std::string::npos)
      << e;
}

TEST(TraceReader, TruncatedJsonIsSaid) {
  const std::string text = gunzip(kFixtures + "infer/server.0.pt.trace.json.gz");
  const std::string e = error_of([&] { load_trace_text("cut.json", text.substr(0, text.size() / 3)); });
  EXPECT_NE(e.find("cut.json: the JSON stops at byte"), std::string::npos) << e;
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(TraceReader, WhatIsNotATraceIsSaid) {
  EXPECT_NE(error_of([] {
              load_trace_text("a.json", "{\"model\": 1}");
            }).find("a.json: not a trace: a JSON document without traceEvents"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_trace_text("b.json", "hello"); }).find("b.json: not a trace: malformed JSON at byte"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_trace_text("c.json", "42"); }).find("not a trace"), std::string::npos);
  EXPECT_NE(error_of([] { load_trace_text("e.json", ""); }).find("e.json: not a trace: the file is empty"),
            std::string::npos);
  EXPECT_NE(error_of([] { load_trace_text("f.json", " \n"); }).find("f.json: not a trace"), std::string::npos);
  // An array of values that are not events is not Chrome's array layout.
  for (const char* values : {"[1, 2]", R"({"traceEvents": [1, "x", null]})"})
    EXPECT_NE(error_of([&] { load_trace_text("g.json", values); }).find("g.json: not a trace: its event array holds "),
              std::string::npos)
        << values;
  test::TempDir dir;
  EXPECT_NE(error_of([&] { load_trace(dir.file("absent.json")); }).find("absent.json: cannot open"), std::string::npos);
  // A bare array of events is Chrome's other layout.
  const Trace t = load_trace_text("d.json", R"([{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":1,"dur":2,"tid":1}])");
  EXPECT_EQ(t.cpu.size(), 1u);
}

TEST(TraceReader, EscapesNumbersAndMalformedInput) {
  const Trace t = load_trace_text(
      "e.json", R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a\"b\\ \u00e9\ud83d\ude00","ts":1.5e1,)"
                R"("dur":2,"tid":"7","args":{"Input Dims":[[2,3],[[1],[2]],[]],"Ignored":{"x":[1,{"y":null}]}}}]})");
  ASSERT_EQ(t.cpu.size(), 1u);
  EXPECT_EQ(t.name(t.cpu[0]), "a\"b\\ \xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(t.cpu[0].start_ns, 15000);
  EXPECT_EQ(t.tid(t.cpu[0]), 7);
  EXPECT_EQ(t.strings.str(t.signature(t.cpu[0]).shapes), "[[2, 3], [], []]");  // a list of tensors shows as []
  for (const char* bad : {R"({"traceEvents":[]} x)", R"({"traceEvents":[{"name":"\q"}]})",
                          R"({"traceEvents":[{"ts":1e}]})", R"({"traceEvents":[{"name":"\ud800"}]})"})
    EXPECT_NE(error_of([&] { load_trace_text("bad.json", bad); }).find("not a trace: malformed JSON at byte"),
              std::string::npos)
        << bad;
  // Nesting too deep for any trace is an error, not a stack overflow.
  const std::string deep = "{\"traceEvents\":[{\"args\":" + std::string(100000, '[');
  EXPECT_NE(error_of([&] { load_trace_text("deep.json", deep); }).find("deep.json"), std::string::npos);
}

// Everything a Trace keeps, as text, to compare two reads of one trace.
std::string contents(const Trace& t) {
  std::ostringstream o;
  for (const auto& e : t.cpu)
    o << "cpu " << e.start_ns << ' ' << e.end_ns << ' ' << e.id << ' ' << t.name(e) << ' '
      << t.strings.str(t.signature(e).shapes) << ' ' << t.strings.str(t.signature(e).types) << ' '
      << t.signature(e).flops << ' ' << int(t.category(e)) << ' ' << t.tid(e) << '\n';
  for (const auto& d : t.device)
    o << "gpu " << d.start_ns << ' ' << d.end_ns << ' ' << d.external_id << ' ' << d.correlation << ' '
      << t.strings.str(d.name) << ' ' << t.streams[d.stream].first << ' ' << t.streams[d.stream].second << ' '
      << int(d.category) << '\n';
  for (const auto& m : t.memory) o << "mem " << m.ts_ns << ' ' << m.bytes << ' ' << m.total_allocated << '\n';
  for (const auto& [tid, name] : std::map<int64_t, std::string>(t.thread_names.begin(), t.thread_names.end()))
    o << "thread " << tid << ' ' << name << '\n';
  o << t.device_properties.dump() << t.distributed_info.dump() << t.flow_events << t.base_time_ns << t.schema_version
    << t.with_flops << t.record_shapes << t.profile_memory << t.with_stack;
  return o.str();
}

// The scanner looks at keys and numbers where they lie in its buffer: a trace cut anywhere between
// two reads (a key, a number, an escape split in two) reads the same, and malformed JSON fails at
// the same byte.
TEST(TraceReader, TextCutAnywhereBetweenReadsReadsTheSame) {
  for (const char* trace : {"infer/server.0.pt.trace.json.gz",
                            "hta_real/alexnet_a100/"
                            "benchmark_result_2869224_1695835535_trace.json.gz"}) {
    const std::string text = gunzip(kFixtures + trace);
    const std::string whole = contents(load_trace_text("t.json", text));
    ASSERT_GT(whole.size(), 1000u);
    for (const size_t chunk : {1, 2, 3, 5, 8, 13, 63, 64, 65, 255, 256, 257, 4093})
      EXPECT_EQ(contents(load_trace_text("t.json", text, chunk)), whole) << trace << " read " << chunk << " at a time";
  }
  const std::string escapes =
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a\"b\\ \u00e9\ud83d\ude00","ts":1.5e1,"dur":2.0004,)"
      R"("tid":"7","args":{"Input Dims":[[2,3],[[1],[2]],[]],"Input type":["float","Scalar"],"External id":-12,)"
      R"("A key longer than the window the scanner keeps ahead of a key, which is 256 bytes: it is read as any other )"
      R"(string and compared as any other key, though no analysis reads it, so that a long key is just another key, )"
      R"(whatever its length.":1}}]})";
  const std::string whole = contents(load_trace_text("e.json", escapes));
  for (size_t chunk = 1; chunk < 40; ++chunk) EXPECT_EQ(contents(load_trace_text("e.json", escapes, chunk)), whole);
  const std::string long_number = R"({"traceEvents":[{"ts":)" + std::string(70, '1') + "}]}";
  for (const std::string& bad :
       {std::string(R"({"traceEvents":[{"name":"\q"}]})"), std::string(R"({"traceEvents":[{"ts":1e}]})"),
        std::string(R"({"traceEvents":[{"na\me":1}]})"), long_number})
    for (const size_t chunk : {1, 2, 3, 7, 100})
      EXPECT_EQ(error_of([&] { load_trace_text("bad.json", bad, chunk); }),
                error_of([&] { load_trace_text("bad.json", bad); }))
          << bad << " read " << chunk << " at a time";
}

// torch's rows, as the generator saved them beside each trace.
struct Reference {
  std::string key;
  int64_t count;
  double self_cpu, cpu, self_device, device;
  int64_t flops, self_memory, memory;
  std::string shapes;
  bool user_annotation;
};

std::vector<Reference> reference_rows(const std::string& trace, const char* grouping) {
  const std::string path =
      trace.substr(0, trace.size() - std::string(".pt.trace.json.gz").size()) + ".key_averages.json";
  const json j = json::parse(read_bytes(path));
  std::vector<Reference> out;
  for (const auto& r : j.at(grouping))
    out.push_back({r.at("key"), r.at("count"), r.at("self_cpu_time_total"), r.at("cpu_time_total"),
                   r.at("self_device_time_total"), r.at("device_time_total"), r.at("flops"),
                   r.at("self_cpu_memory_usage"), r.at("cpu_memory_usage"), r.at("input_shapes"),
                   r.at("is_user_annotation")});
  return out;
}

// Calls and FLOPs exact, times within 1% (or 0.01 µs: torch sums float µs), memory exact.
void expect_equal_to_torch(const std::string& trace, GroupBy group_by) {
  const Trace t = load_trace(trace);
  const std::vector<OpRow> rows = op_averages(t, group_by);
  const auto ref = reference_rows(trace, group_by == GroupBy::shape ? "by_shape" : "by_name");
  std::map<std::tuple<std::string, std::string, bool>, const OpRow*> mine;
  for (const auto& r : rows) {
    // torch prints no shapes as an empty list; the generator saved those as "".
    const std::string shapes = group_by == GroupBy::shape && r.shapes != "[]" ? r.shapes : "";
    mine[{r.name, shapes, r.kind == RowKind::user_annotation}] = &r;
  }
  EXPECT_EQ(rows.size(), ref.size()) << trace;
  auto near = [](double got_us, double want_us) {
    return std::fabs(got_us - want_us) <= 0.01 * std::fabs(want_us) + 0.01;
  };
  for (const auto& want : ref) {
    const auto it = mine.find({want.key, want.shapes, want.user_annotation});
    ASSERT_NE(it, mine.end()) << "missing row " << want.key << " " << want.shapes;
    const OpRow& got = *it->second;
    SCOPED_TRACE(want.key + " " + want.shapes);
    EXPECT_EQ(got.calls, want.count);
    EXPECT_PRED2(near, got.self_cpu_ns * 1e-3, want.self_cpu);
    EXPECT_PRED2(near, got.cpu_ns * 1e-3, want.cpu);
    EXPECT_PRED2(near, got.self_device_ns * 1e-3, want.self_device);
    EXPECT_PRED2(near, got.device_ns * 1e-3, want.device);
    EXPECT_EQ(got.flops, want.flops);
    EXPECT_EQ(got.self_cpu_memory, want.self_memory);
    EXPECT_EQ(got.cpu_memory, want.memory);
  }
}

TEST(OpAverages, TrainingCyclesEqualTorchKeyAverages) {
  expect_equal_to_torch(kFixtures + "train/trainer.0.pt.trace.json.gz", GroupBy::name);
  expect_equal_to_torch(kFixtures + "train/trainer.1.pt.trace.json.gz", GroupBy::name);
}

TEST(OpAverages, InferenceCycleEqualsTorchKeyAverages) {
  expect_equal_to_torch(kFixtures + "infer/server.0.pt.trace.json.gz", GroupBy::name);
}

TEST(OpAverages, GroupByShapeEqualsTorchGroupByInputShape) {
  expect_equal_to_torch(kFixtures + "train/trainer.0.pt.trace.json.gz", GroupBy::shape);
  expect_equal_to_torch(kFixtures + "infer/server.0.pt.trace.json.gz", GroupBy::shape);
}

TEST(OpAverages, GroupByStackKeysOpsByTheirPythonFrames) {
  // The frames are the enclosing python_function events (torch 2.x keeps them on its own events,
  // for its group_by_stack_n, only with _ExperimentalConfig(verbose=True)).
  const Trace t = load_trace(kFixtures + "infer/server.0.pt.trace.json.gz");
  const auto by_name = op_averages(t, GroupBy::name);
  const auto by_stack = op_averages(t, GroupBy::stack, 3);
  EXPECT_GT(by_stack.size(), by_name.size());
  int64_t mm_calls = 0;
  bool forward_frame = false;
  for (const auto& r : by_stack) {
    EXPECT_LE(r.stack.size(), 3u);
    if (r.name != "aten::addmm") continue;
    mm_calls += r.calls;
    for (const auto& f : r.stack)
      forward_frame |= f.find("Linear") != std::string::npos || f.find("linear") != std::string::npos;
  }
  int64_t want = 0;
  for (const auto& r : by_name) want += r.name == "aten::addmm" ? r.calls : 0;
  EXPECT_EQ(mm_calls, want);
  EXPECT_TRUE(forward_frame);
}

TEST(OpAverages, SortByColumnAndUnknownColumn) {
  const Trace t = load_trace(kFixtures + "infer/server.0.pt.trace.json.gz");
  auto rows = op_averages(t, GroupBy::name);
  sort_rows(rows, "calls");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].calls, rows[i].calls);
  sort_rows(rows, "self_cpu");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].self_cpu_ns, rows[i].self_cpu_ns);
  EXPECT_THROW(sort_rows(rows, "speed"), UsageError);
  EXPECT_THROW(parse_group_by("module"), UsageError);
}

TEST(OpAverages, KernelsCountUnderTheOpThatLaunchedThem) {
  // A hand-sized GPU trace in torch's layout: aten::mm (External id 7) launches one kernel
  // through cudaLaunchKernel; aten::linear holds it.
  const std::string text = R"({"traceEvents":[
    {"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":0,"dur":100,"args":{"External id":6}},
    {"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":50,"args":{"External id":7,"Input Dims":[[4,8],[8,2]]}},
    {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":10,"args":{"External id":7,"correlation":99}},
    {"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":40,"dur":30,"args":{"External id":7,"correlation":99,"device":0,"stream":7}}]})";
  const auto rows = op_averages(load_trace_text("gpu.json", text), GroupBy::name);
  std::map<std::string, OpRow> by;
  for (const auto& r : rows) by[r.name] = r;
  EXPECT_EQ(by["aten::mm"].self_device_ns, 30000);
  EXPECT_EQ(by["aten::mm"].self_cpu_ns, 40000);
  EXPECT_EQ(by["aten::mm"].flops, 2 * 4 * 8 * 2);
  EXPECT_EQ(by["aten::linear"].device_ns, 30000);
  EXPECT_EQ(by["aten::linear"].self_device_ns, 0);
  EXPECT_EQ(by["gemm_kernel"].kind, RowKind::device);
  EXPECT_EQ(by["gemm_kernel"].device_ns, 30000);
  EXPECT_EQ(by["cudaLaunchKernel"].cpu_ns, 10000);
}

}  // namespace
}  // namespace tach::analyze
