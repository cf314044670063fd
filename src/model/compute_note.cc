#include "model/compute_note.h"

#include "cpu/gemm.h"
#include "cpu/int8_quant.h"
#include "cpu/panel_linear.h"
#include "tach/system_info.h"

namespace tach::model {

namespace {

std::string bf16_compute_note(DType compute, Device device) {
  if (device.kind != DeviceKind::cpu || compute != DType::bf16) return "";
  if (!cpu::onednn_bf16_supported())  // AVX2, or oneDNN held below AVX-512 by DNNL_MAX_CPU_ISA
    return "bf16 on a CPU without a bf16 GEMM: every linear's weights are stored in bf16 (half of f32's bytes) and "
           "widened to f32 inside tach's kernels; the inputs and the arithmetic stay f32 (x · bf16(W))";
  if (detect_isa().avx512_bf16 || detect_isa().amx_bf16) return "";
  return "bf16 compute on a CPU without AVX512_BF16 or AMX: oneDNN emulates the bf16 GEMMs, which run slower than "
         "f32 here (docs/perf.md); bf16 weights load and run fastest with f32 compute on this machine";
}

std::string int8_compute_note(DType compute) {
  if (compute != DType::i8) return "";
  return "int8: every linear quantized dynamically (" + cpu::int8_scheme() +
         "); embeddings, norms, attention and softmax stay f32";
}

std::string f32_compute_note(DType compute, Device device, bool decoding) {
  if (device.kind != DeviceKind::cpu || compute != DType::f32 || !cpu::PanelLinear::chosen_for(decoding)) return "";
  return "f32 linears on tach's own AVX2 kernels over weights packed once into 16-column panels (chosen for decoding "
         "where oneDNN's f32 matmul, gemm:jit, packs its operands again at every call; TACH_F32_GEMM forces either)";
}

}  // namespace

const char* const kTf32Note =
    "f32 linears on TF32 tensor cores (--allow-tf32, as torch.backends.cuda.matmul.allow_tf32 = True): each GEMM "
    "rounds its inputs to TF32's 10 mantissa bits and accumulates in f32, so outputs differ from f32's at about "
    "1e-3 relative; attention, norms and the few-row GEMV of decoding stay f32";

std::string compute_note(DType compute, Device device, bool decoding, bool tf32) {
  if (tf32 && compute == DType::f32 && device.kind == DeviceKind::cuda) return kTf32Note;
  if (device.kind == DeviceKind::cuda && (compute == DType::i8 || compute == DType::nf4))
    return std::string(compute == DType::i8 ? "int8" : "nf4") +
           " on a GPU is weight-only: every linear's weights stored " +
           (compute == DType::i8 ? "in int8 with an f32 scale per output row"
                                 : "in 4-bit NormalFloat (blocks of 64, as bitsandbytes) with each block's absmax") +
           ", dequantized as they are read and multiplied with bf16 activations in f32 (the activations are not "
           "quantized); embeddings, norms and attention are not quantized";
  if (compute == DType::nf4)
    return "nf4: every linear's weights in 4-bit NormalFloat (blocks of 64, double-quantized absmax, as "
           "bitsandbytes), computed in f32; embeddings, norms and attention stay f32";
  if (compute == DType::i8) return int8_compute_note(compute);
  return compute == DType::f32 ? f32_compute_note(compute, device, decoding) : bf16_compute_note(compute, device);
}

}  // namespace tach::model
