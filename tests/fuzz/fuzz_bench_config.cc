// Any text given as a bench YAML config yields a config or a tach::Error. Nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tach/bench.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto c =
        tach::bench_config_from_yaml_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
    (void)tach::bench_config_from_json(tach::bench_config_to_json(c), "round trip");  // must round-trip
  } catch (const tach::Error&) {}
  return 0;
}
