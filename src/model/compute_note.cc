#include "model/compute_note.h"

#include "cpu/int8_quant.h"
#include "tach/system_info.h"

namespace tach::model {

namespace {

std::string bf16_compute_note(DType compute, Device device) {
  if (device.kind != DeviceKind::cpu || compute != DType::bf16 || detect_isa().avx512_bf16 || detect_isa().amx_bf16)
    return "";
  return "bf16 compute on a CPU without AVX512_BF16 or AMX: oneDNN emulates the bf16 GEMMs, which run slower than "
         "f32 here (docs/perf.md); bf16 weights load and run fastest with f32 compute on this machine";
}

std::string int8_compute_note(DType compute) {
  if (compute != DType::i8) return "";
  return "int8: every linear quantized dynamically (" + cpu::int8_scheme() +
         "); embeddings, norms, attention and softmax stay f32";
}

}  // namespace

std::string compute_note(DType compute, Device device) {
  if (compute == DType::nf4)
    return "nf4: every linear's weights in 4-bit NormalFloat (blocks of 64, double-quantized absmax, as "
           "bitsandbytes), computed in f32; embeddings, norms and attention stay f32";
  return compute == DType::i8 ? int8_compute_note(compute) : bf16_compute_note(compute, device);
}

}  // namespace tach::model
