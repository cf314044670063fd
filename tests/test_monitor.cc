// Monitors and the memory estimate: procfs samples, RAPL and NVML reporting what they can (or
// why not), the background sampler, and the estimate against what tach measures.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tach/estimate.h"
#include "tach/memory.h"
#include "tach/model.h"
#include "tach/monitor.h"
#include "test_util.h"

namespace tach {
namespace {

using test::error_of;

TEST(Monitor, ProcessSampleOfThisProcess) {
  ProcessSample s;
  ASSERT_TRUE(read_process_sample(getpid(), &s));
  EXPECT_GT(s.rss_bytes, 0);
  EXPECT_GE(s.peak_rss_bytes, s.rss_bytes);
  EXPECT_GE(s.threads, 1);
  EXPECT_FALSE(read_process_sample(999999999, &s));
}

TEST(Monitor, EnergyAndGpuSayWhatTheyCan) {
  RaplEnergy rapl;
  if (rapl.available()) {
    EXPECT_GE(rapl.joules(), 0.0);
  } else {
    EXPECT_FALSE(rapl.unavailable_reason().empty());
    std::cout << "[ rapl ] " << rapl.unavailable_reason() << "\n";
  }
  GpuMonitor gpu;
  if (!gpu.available()) { EXPECT_NE(gpu.unavailable_reason().find("no GPU monitoring"), std::string::npos); }
}

// A command's peak: the kernel's figure counts the child's pre-exec copy of tach, so it is the
// command's own only above that copy; below it, the samples after exec say at least how much.
TEST(Monitor, CommandPeakIsNeverTachsPreExecCopy) {
  constexpr int64_t MiB = 1 << 20;
  CommandPeak p = command_peak_rss(96 * MiB, 96 * MiB, int64_t(1.6 * MiB));  // sleep under a 96 MiB tach
  EXPECT_EQ(p.bytes, int64_t(1.6 * MiB));
  EXPECT_FALSE(p.exact);
  EXPECT_NE(p.method.find("sampled after exec"), std::string::npos);
  p = command_peak_rss(96 * MiB, 400 * MiB, 390 * MiB);  // a command larger than tach
  EXPECT_EQ(p.bytes, 400 * MiB);
  EXPECT_TRUE(p.exact);
  p = command_peak_rss(96 * MiB, 96 * MiB + 4096, 0);  // exited before a sample (false)
  EXPECT_EQ(p.bytes, 0);
  EXPECT_NE(p.method.find("not measured"), std::string::npos);
}

TEST(Monitor, SamplerFollowsAChild) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char> buf(64 << 20, 1);  // 64 MiB resident
    usleep(300000);
    _exit(buf[100] == 1 ? 0 : 1);
  }
  ProcessSampler sampler(pid, 0.02);
  sampler.start();
  int status = 0;
  waitpid(pid, &status, 0);
  sampler.stop();
  const auto samples = sampler.samples();
  ASSERT_GE(samples.size(), 3u);
  int64_t peak = 0;
  for (const auto& m : samples) peak = std::max(peak, m.process.peak_rss_bytes);
  EXPECT_GT(peak, int64_t(60) << 20);
  EXPECT_LT(sampler.sampling_cost_s(), 0.01);
}

// The estimate's inference terms against the allocator's measured peak (aim: within 10%), in
// f32, with int8 linears and with NF4 weights.
TEST(Estimate, InferenceMatchesMeasurement) {
  for (const char* dtype : {"f32", "int8", "nf4"})
    for (const char* spec : {"preset:bert-tiny", "preset:qwen2-tiny"}) {
      SCOPED_TRACE(std::string(spec) + " " + dtype);
      LoadOptions lo;
      lo.compute = parse_compute_dtype(dtype);
      reset_memory_peaks(Device::cpu());
      auto model = load_model(spec, lo);
      std::vector<std::vector<int32_t>> rows(8, std::vector<int32_t>(64, 1000));
      const TokenBatch batch = TokenBatch::from_rows(rows, 0);
      (void)model->classify(batch);  // warm: the allocator's cache settles
      reset_memory_peaks(Device::cpu());
      (void)model->classify(batch);
      const MemoryStats m = memory_stats(Device::cpu());
      EstimateInput in;
      in.model = spec;
      in.batch = 8;
      in.seq_len = 64;
      in.dtype = dtype;
      const MemoryEstimate e = estimate_memory(in);
      EXPECT_EQ(e.parameters, model->info().parameters);
      int64_t est_act = 0;  // the forward's buffers, int8's codes, NF4's dequantized tile
      for (const auto& l : e.lines)
        if (l.name.rfind("activations", 0) == 0 || l.name == "int8 activation codes" ||
            l.name == "NF4 dequantization tile")
          est_act += l.bytes;
      const int64_t measured = m[MemoryCategory::activations].peak + m[MemoryCategory::workspace].peak;
      EXPECT_NEAR(double(est_act), double(measured), 0.10 * double(measured)) << "activations";
      EXPECT_NEAR(double(e.total_bytes), double(m.total.peak), 0.10 * double(m.total.peak)) << "total";
    }
}

TEST(Estimate, Int8ShrinksTheLinearsAndIsInferenceOnly) {
  EstimateInput in;
  in.model = "preset:distilbert-base-uncased";
  const MemoryEstimate f32 = estimate_memory(in);
  in.dtype = "int8";
  const MemoryEstimate i8 = estimate_memory(in);
  int64_t linears = 0, embeddings = 0;
  for (const auto& l : i8.lines) {
    if (l.name == "weights (int8 linears)") linears = l.bytes;
    if (l.name == "weights (embeddings, f32)") embeddings = l.bytes;
  }
  // DistilBERT-base: 42.5M linear parameters at 1 B (+ scales), 23.4M embedding values at 4 B.
  EXPECT_NEAR(double(linears), 43.1e6, 0.6e6);
  EXPECT_EQ(embeddings, int64_t(30522) * 768 * 4);
  EXPECT_LT(i8.total_bytes, f32.total_bytes * 0.6);
  in.dtype = "nf4";
  const MemoryEstimate nf4 = estimate_memory(in);
  EXPECT_LT(nf4.total_bytes, i8.total_bytes);
  in.dtype = "int8";
  in.mode = "train-lora";
  EXPECT_NE(error_of([&] { estimate_memory(in); }).find("int8 quantizes inference"), std::string::npos);
}

TEST(Estimate, TrainingModesAndErrors) {
  EstimateInput in;
  in.model = "preset:distilbert-base-uncased";
  in.mode = "train-full";
  in.dtype = "bf16";
  const MemoryEstimate full = estimate_memory(in);
  // tach's bf16 training keeps weights, gradients and moments in f32 and rounds each GEMM's
  // inputs, so there is no second (master) copy and its memory is f32's.
  for (const auto& l : full.lines) EXPECT_NE(l.name.rfind("master", 0), 0u) << l.name;
  EstimateInput f32 = in;
  f32.dtype = "f32";
  EXPECT_EQ(full.total_bytes, estimate_memory(f32).total_bytes);
  in.mode = "train-lora";
  const MemoryEstimate lora = estimate_memory(in);
  // The adapters (q, v at r 8) and the head trained in full (DistilBERT's pre_classifier is most
  // of it): about 1.1%, as peft's print_trainable_parameters counts them.
  EXPECT_LT(lora.trainable_parameters, full.trainable_parameters / 50);
  EXPECT_LT(lora.total_bytes, full.total_bytes);
  in.mode = "train-qlora";
  EXPECT_LT(estimate_memory(in).total_bytes, lora.total_bytes);
  in.gradient_checkpointing = true;
  in.batch = 32;
  const int64_t ckpt = estimate_memory(in).total_bytes;
  in.gradient_checkpointing = false;
  EXPECT_LT(ckpt, estimate_memory(in).total_bytes);
  in.mode = "pretraining";
  EXPECT_NE(error_of([&] { estimate_memory(in); }).find("not one of inference"), std::string::npos);
  in.mode = "inference";
  in.margin = 0.5;
  in.batch = 1 << 22;
  const MemoryEstimate huge = estimate_memory(in);
  EXPECT_FALSE(huge.fits);
  EXPECT_GT(huge.largest_batch_that_fits, 0);
  EXPECT_LT(huge.largest_batch_that_fits, 1 << 22);
}

}  // namespace
}  // namespace tach
