# The suite's CPU-dependent tests again on every ISA path tach takes (below), and the fuzz build's
# checks (at the end).
#
# ISA paths: the suite's CPU-dependent tests again on every ISA path tach takes, forced on this CPU where it
# includes the path. DNNL_MAX_CPU_ISA caps oneDNN, and tach's view of the ISA with it
# (src/cpu/cpu_info.cc): int8's weight range (VNNI or 7-bit), bf16 in hardware, emulated by oneDNN,
# or widened by tach's own kernels, and the f32 panels for decoding all follow it. TACH_F32_GEMM
# picks the f32 kernels; tach's own AVX2 kernels need a build of their own. A path above this CPU
# (AMX on a CPU without it) skips, saying so (isa_path.cc): it would repeat this CPU's own path.
#
#   path                       DNNL_MAX_CPU_ISA     a CPU like
#   avx2                       AVX2                 Haswell to Zen 3: no AVX-512
#   avx512_without_vnni        AVX512_CORE          Skylake-SP: 7-bit int8 weights, bf16 emulated
#   avx512_vnni_without_bf16   AVX512_CORE_VNNI     Cascade Lake, Ice Lake: s8 int8, bf16 emulated
#   avx512_bf16                AVX512_CORE_BF16     Cooper Lake, Zen 4: bf16 in hardware
#   amx                        AVX512_CORE_AMX      Sapphire Rapids
set(TACH_ISA_PATHS avx2=AVX2 avx512_without_vnni=AVX512_CORE avx512_vnni_without_bf16=AVX512_CORE_VNNI
  avx512_bf16=AVX512_CORE_BF16 amx=AVX512_CORE_AMX)

tach_test(test_cpu_info unit)
foreach(_tach_target test_cpu_info test_int8_linear test_golden_decoders test_golden_qwen2 test_bf16_weight_linear
                     test_panel_linear test_ops)
  target_sources(${_tach_target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/isa_path.cc)
endforeach()

# tach_isa_path_test(NAME PATH_ISA LABEL TARGET [ARGS...]): TARGET's tests with DNNL_MAX_CPU_ISA=PATH_ISA.
function(tach_isa_path_test name isa label target)
  add_test(NAME ${name} COMMAND ${target} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS ${label} ENVIRONMENT DNNL_MAX_CPU_ISA=${isa}
    SKIP_REGULAR_EXPRESSION "is above this CPU")
endfunction()

foreach(_tach_path IN LISTS TACH_ISA_PATHS)
  string(REPLACE "=" ";" _tach_path "${_tach_path}")
  list(GET _tach_path 0 _path)
  list(GET _tach_path 1 _isa)
  # tach's ISA against oneDNN's; int8 (saturation without VNNI, the codes, the accuracy); the
  # linears at every dtype against f32 references; bf16 weights where oneDNN has no bf16 GEMM; the
  # panels' choice; and the bytes a decode step reads, exactly.
  tach_isa_path_test(cpu_info.${_path} ${_isa} unit test_cpu_info)
  tach_isa_path_test(int8_linear.${_path} ${_isa} unit test_int8_linear)
  tach_isa_path_test(ops_linear.${_path} ${_isa} unit test_ops --gtest_filter=*Linear*)
  tach_isa_path_test(bf16_weight_linear.${_path} ${_isa} unit test_bf16_weight_linear)
  tach_isa_path_test(panel_linear.${_path} ${_isa} unit test_panel_linear)
  tach_isa_path_test(decode_step_bytes.${_path} ${_isa} golden test_golden_decoders
    --gtest_filter=DecoderFamilies.DecodeStepBytes)
endforeach()
# Every decoder fixture against transformers on the CPU the issue came from (avx512_vnni, no
# avx512_bf16: s8 int8, bf16 emulated by oneDNN), and the Qwen2 fixtures with bf16 weights as an
# AVX2 CPU runs them (widened to f32 in tach's kernels) and as that CPU does.
tach_isa_path_test(golden_decoders.avx512_vnni_without_bf16 AVX512_CORE_VNNI golden test_golden_decoders)
tach_isa_path_test(golden_qwen2.avx2 AVX2 golden test_golden_qwen2)
tach_isa_path_test(golden_qwen2.avx512_vnni_without_bf16 AVX512_CORE_VNNI golden test_golden_qwen2)

# Decoding on a CPU where oneDNN's f32 matmul is `gemm:jit` (AVX2) runs f32 linears on tach's panel
# kernels: every encoder and decoder fixture against transformers with every f32 linear forced
# onto the panels (TACH_F32_GEMM=panels), whatever this CPU.
add_test(NAME golden_encoders.f32_panels COMMAND test_golden_encoders)
set_tests_properties(golden_encoders.f32_panels PROPERTIES LABELS golden ENVIRONMENT TACH_F32_GEMM=panels)
add_test(NAME golden_decoders.f32_panels COMMAND test_golden_decoders)
set_tests_properties(golden_decoders.f32_panels PROPERTIES LABELS golden ENVIRONMENT TACH_F32_GEMM=panels)

# tach's own NF4 kernel on AVX2, whatever this CPU's widest: nf4_linear.cc built again for Haswell
# into the executable, whose copy the linker takes before the library's.
add_executable(test_nf4_linear_avx2 test_nf4_linear.cc test_util.cc ${PROJECT_SOURCE_DIR}/src/cpu/nf4_linear.cc)
target_link_libraries(test_nf4_linear_avx2 PRIVATE tach_internal tach_warnings GTest::gtest)
target_compile_definitions(test_nf4_linear_avx2 PRIVATE TACH_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures"
  TACH_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared" TACH_BINARY_DIR="${PROJECT_BINARY_DIR}" TACH_NEEDS_AVX2=1)
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/cpu/nf4_linear.cc DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
  PROPERTIES COMPILE_OPTIONS "-march=haswell;-fno-trapping-math")
add_test(NAME nf4_linear.avx2 COMMAND test_nf4_linear_avx2)
set_tests_properties(nf4_linear.avx2 PROPERTIES LABELS unit SKIP_RETURN_CODE 77)

# The fuzz build (make fuzz, a separate clang build in build-fuzz): configured as the Makefile does,
# it leaves the Python module out by itself; and where it has been built, every committed corpus
# input, the regressions its campaigns found included, runs through its target cleanly.
add_test(NAME fuzz.configure_without_python COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/check_fuzz_configure.sh
  ${PROJECT_SOURCE_DIR})
add_test(NAME fuzz.corpus_replay COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay_corpus.sh ${PROJECT_SOURCE_DIR}/build-fuzz)
set_tests_properties(fuzz.configure_without_python fuzz.corpus_replay PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
