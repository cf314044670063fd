// Profiling a user program's own phases with tach: a user scope around each forward, the
// schedule, and the outputs tach profile writes (a Perfetto trace and an op table).
#include <fstream>
#include <iostream>

#include "tach/model.h"
#include "tach/profile.h"

int main() {
  auto model = tach::load_model("preset:bert-tiny");
  const tach::TokenBatch batch = tach::TokenBatch::from_rows({{101, 2023, 3185, 102}}, 0);
  tach::ProfilerOptions options;
  options.schedule = {0, 1, 1, 3, 1};  // skip_first, wait, warmup, active, repeat
  tach::Profiler profiler(options);
  profiler.start();
  for (int step = 0; step < 5; ++step) {
    {
      tach::ProfileScope scope("my_forward");
      (void)model->classify(batch);
    }
    profiler.step();
  }
  profiler.stop();
  const tach::ProfileData data = profiler.data();
  std::ofstream("classify_trace.json") << tach::chrome_trace_json(data);
  const auto rows = tach::op_table(data, "op", "self", tach::machine_ceilings());
  std::cout << tach::op_table_text(rows, 10) << "wrote classify_trace.json (open it in ui.perfetto.dev)\n";
  return data.events.empty() ? 1 : 0;
}
