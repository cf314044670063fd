#include "model/compute_note.h"

#include "tach/system_info.h"

namespace tach::model {

std::string bf16_compute_note(DType compute, Device device) {
  if (device.kind != DeviceKind::cpu || compute != DType::bf16 || detect_isa().avx512_bf16 || detect_isa().amx_bf16)
    return "";
  return "bf16 compute on a CPU without AVX512_BF16 or AMX: oneDNN emulates the bf16 GEMMs, which run slower than "
         "f32 here (docs/perf.md); bf16 weights load and run fastest with f32 compute on this machine";
}

}  // namespace tach::model
