// A bench point's figures as TensorBoard scalars (RunStore::append writes them as points finish).
#include "bench/bench_internal.h"

namespace tach::bench {

void write_point_scalars(TensorBoardWriter& writer, const PointResult& p) {
  const std::string series = p.key.id_without("batch");
  const int64_t step = p.key.batch;
  const auto put = [&](const std::string& metric, double value) { writer.scalar(metric + "/" + series, value, step); };
  put("batch_latency_ms_p50", p.batch_latency_ms.median);
  put("batch_latency_ms_p90", p.batch_latency_ms.p90);
  put("batch_latency_ms_p95", p.batch_latency_ms.p95);
  put("batch_latency_ms_p99", p.batch_latency_ms.p99);
  put("sample_latency_ms_p50", p.sample_latency_ms.median);
  put("samples_per_s", p.samples_per_s);
  put("tokens_per_s", p.tokens_per_s);
  if (p.gpu_time_ms.n > 0) put("gpu_time_ms_p50", p.gpu_time_ms.median);
  if (p.energy_j_per_sample >= 0) put("energy_j_per_sample", p.energy_j_per_sample);
  if (p.peak_rss_bytes > 0) put("peak_rss_bytes", double(p.peak_rss_bytes));
  if (auto it = p.allocator.find("total"); it != p.allocator.end())
    put("allocator_peak_bytes", double(it->second.peak));
  if (p.key.kind != "train") return;
  put("data_ms_p50", p.train.data_ms.median);
  put("forward_ms_p50", p.train.forward_ms.median);
  put("backward_ms_p50", p.train.backward_ms.median);
  put("optimizer_ms_p50", p.train.optimizer_ms.median);
  if (p.train.mfu >= 0) put("mfu", p.train.mfu);
}

}  // namespace tach::bench
