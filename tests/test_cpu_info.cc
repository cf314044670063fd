// The ISA tach reports is the one its kernels run: under DNNL_MAX_CPU_ISA (ctest runs this on every
// ISA path, tests/cmake/isa_paths.cmake) tach's view is capped with oneDNN's, so that the choices
// and notes that follow the ISA agree with the kernels, and `tach info` says that it is capped.
#include <cpuid.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "cpu/int8_quant.h"
#include "tach/system_info.h"

namespace tach {
namespace {

bool onednn_runs(dnnl::cpu_isa wanted) {
  const auto e = static_cast<unsigned>(dnnl::get_effective_cpu_isa()), w = static_cast<unsigned>(wanted);
  return (e & w) == w;
}

bool capped() {
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  return cap != nullptr && *cap != '\0';
}

// cpuid leaf 7 sub-leaf 1, EAX bit 5: this CPU's own avx512_bf16, whatever the cap.
bool cpu_has_avx512_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 5) & 1u);
}

TEST(CpuInfo, TheIsaIsTheOneOneDnnRuns) {
  const CpuIsa isa = detect_isa();
  // oneDNN never runs what the CPU lacks.
  if (onednn_runs(dnnl::cpu_isa::avx512_core)) EXPECT_TRUE(isa.avx512f && isa.avx512bw && isa.avx512vl);
  if (onednn_runs(dnnl::cpu_isa::avx512_core_vnni)) EXPECT_TRUE(isa.avx512_vnni);
  if (onednn_runs(dnnl::cpu_isa::avx512_core_bf16)) EXPECT_TRUE(isa.avx512_bf16);
  if (!capped()) return;
  // Under a cap, what oneDNN does not run reads as absent (the CPU, avx512_vnni without
  // avx512_bf16, is DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI on any newer one).
  EXPECT_EQ(isa.avx512f, onednn_runs(dnnl::cpu_isa::avx512_core)) << isa.summary();
  EXPECT_EQ(isa.avx512_vnni, onednn_runs(dnnl::cpu_isa::avx512_core_vnni)) << isa.summary();
  EXPECT_EQ(isa.avx512_bf16, onednn_runs(dnnl::cpu_isa::avx512_core_bf16)) << isa.summary();
  EXPECT_EQ(isa.amx_tile, onednn_runs(dnnl::cpu_isa::avx512_core_amx)) << isa.summary();
}

TEST(CpuInfo, Int8TakesFullRangeWeightsExactlyWhereTheIsaHasVnni) {
  const CpuIsa isa = detect_isa();
  if (isa.avx512_vnni) EXPECT_EQ(cpu::int8_weight_code_limit(), 127) << cpu::int8_scheme();
  if (!isa.avx512_vnni && !onednn_runs(dnnl::cpu_isa::avx2_vnni))
    EXPECT_EQ(cpu::int8_weight_code_limit(), 63) << cpu::int8_scheme();
}

TEST(CpuInfo, InfoSaysWhenTheIsaIsCapped) {
  if (!capped() || !cpu_has_avx512_bf16() || detect_isa().avx512_bf16)
    GTEST_SKIP() << "needs DNNL_MAX_CPU_ISA below this CPU's avx512_bf16";
  bool said = false;
  for (const std::string& w : system_info().warnings)
    said |= w.find("DNNL_MAX_CPU_ISA=") != std::string::npos && w.find("avx512_bf16") != std::string::npos;
  EXPECT_TRUE(said) << "tach info must say that the ISA it lists is capped, and what this CPU has";
}

}  // namespace
}  // namespace tach
