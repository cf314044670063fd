// Linked into the tests that ctest runs again on each ISA path (tests/cmake/isa_paths.cmake). Under
// DNNL_MAX_CPU_ISA it checks that oneDNN knows the value (oneDNN ignores one it does not, and the
// run would quietly take this CPU's own path), and skips every test, saying so, where this CPU
// does not reach the path (AMX on a CPU without it): that run would only repeat this CPU's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <utility>

namespace {

constexpr std::pair<const char*, dnnl::cpu_isa> kPaths[] = {
    {"AVX2", dnnl::cpu_isa::avx2},
    {"AVX2_VNNI", dnnl::cpu_isa::avx2_vnni},
    {"AVX512_CORE", dnnl::cpu_isa::avx512_core},
    {"AVX512_CORE_VNNI", dnnl::cpu_isa::avx512_core_vnni},
    {"AVX512_CORE_BF16", dnnl::cpu_isa::avx512_core_bf16},
    {"AVX512_CORE_AMX", dnnl::cpu_isa::avx512_core_amx},
};

std::string name_of(dnnl::cpu_isa isa) {
  for (const auto& [name, value] : kPaths)
    if (value == isa) return name;
  return "ISA value " + std::to_string(static_cast<unsigned>(isa));
}

class IsaPath : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
    if (cap == nullptr || *cap == '\0') return;
    const auto* path =
        std::find_if(std::begin(kPaths), std::end(kPaths), [&](const auto& p) { return std::string(p.first) == cap; });
    ASSERT_NE(path, std::end(kPaths)) << "DNNL_MAX_CPU_ISA=" << cap << " is not an ISA path of these tests";
    const dnnl::cpu_isa effective = dnnl::get_effective_cpu_isa();
    if (effective != path->second)
      GTEST_SKIP() << "DNNL_MAX_CPU_ISA=" << cap << " is above this CPU (oneDNN runs " << name_of(effective)
                   << "): this path is tested on a CPU that has it";
  }
};

[[maybe_unused]] const ::testing::Environment* const kIsaPath = ::testing::AddGlobalTestEnvironment(new IsaPath);

}  // namespace
