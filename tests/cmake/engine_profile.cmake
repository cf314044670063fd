# Other engines profiled and reported: tach profile --engine torch|torch-compile (refusals by name
# always; a torch.profiler trace that tach analyze reads with the development virtualenv, skipped
# without it), and the report's engine panel and findings (test_engine_report, from a committed
# two-engine run; the panel of a stand-in sweep, which needs only python3).
tach_test(test_engine_report unit)

set(_tach_eprof_model ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/bert-cls2-f32)
set(_tach_eprof_standin ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/engines/python)
set(_tach_eprof_work ${CMAKE_CURRENT_BINARY_DIR}/engine_profile)

# Refusals before anything loads, each a usage error (exit 2) naming why.
function(_tach_eprof_refusal name pattern)
  add_test(NAME cli.engine_profile.${name} COMMAND sh -c "\"$0\" profile \"$@\" 2>&1; echo \"exit=$?\""
    $<TARGET_FILE:tach_cli> ${ARGN})
  set_tests_properties(cli.engine_profile.${name} PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION "${pattern}.*exit=2")
endfunction()
_tach_eprof_refusal(onnxruntime "--engine onnxruntime cannot be profiled here: ONNX Runtime has a profiler of its own"
  -m ${_tach_eprof_model} --engine onnxruntime)
_tach_eprof_refusal(python_matmul "--engine python-matmul computes a stand-in matrix product, not the model"
  -m ${_tach_eprof_model} --engine python-matmul)
_tach_eprof_refusal(unknown "engine 'tensorrt' is not one of tach, torch" -m ${_tach_eprof_model} --engine tensorrt)
_tach_eprof_refusal(preset "preset:distilbert-base-uncased has synthetic weights, which only tach builds: --engine torch"
  --engine torch)
_tach_eprof_refusal(fused "--exec with --engine torch: it is tach's own training option"
  -m ${_tach_eprof_model} --engine torch --train --exec fused)
_tach_eprof_refusal(checkpointing "--gradient-checkpointing with --engine torch-compile: it is tach's own training option"
  -m ${_tach_eprof_model} --engine torch-compile --train --gradient-checkpointing)
_tach_eprof_refusal(int8 "--dtype int8 is tach's own quantization; --engine torch-compile runs f32, bf16 or f16"
  -m ${_tach_eprof_model} --engine torch-compile --dtype int8)
_tach_eprof_refusal(group_by_module "--group-by module with --engine torch"
  -m ${_tach_eprof_model} --engine torch --group-by module)

# A Python without torch: refused by the packages' names with the command that installs them (the
# stand-in worker answers as a worker whose packages are missing).
add_test(NAME cli.engine_profile.missing_packages COMMAND tach_cli profile -m ${_tach_eprof_model} --engine torch
  --python ${_tach_eprof_standin} -b 1 -s 8 --profiler-output-dir ${_tach_eprof_work}/missing)
set_tests_properties(cli.engine_profile.missing_packages PROPERTIES LABELS unit
  ENVIRONMENT TACH_TEST_WORKER_MODE=unavailable
  PASS_REGULAR_EXPRESSION "engine torch needs the Python packages [^\n]*: install them with `python3 -m pip install ")

# The report of a two-engine sweep (tach and the stand-in worker): the engine panel and the finding.
add_test(NAME cli.engine_profile.report_panel COMMAND sh -c "rm -rf \"$1\" && \"$0\" bench -m \"$2\" \
  --engine tach,python-matmul --python \"$3\" -b 1 -s 8 -t 1 --runs 3 --warmup 1 --no-progress --no-tensorboard \
  --runs-dir \"$(dirname \"$1\")\" --run-id report-panel > /dev/null && \"$0\" report \"$1\" > /dev/null && \
  grep -o '<h2>Engines</h2>\\|python-matmul against tach: \\|DISAGREE ([a-z]*: largest difference' \"$1/report.html\""
  $<TARGET_FILE:tach_cli> ${_tach_eprof_work}/report-panel ${_tach_eprof_model} ${_tach_eprof_standin})
set_tests_properties(cli.engine_profile.report_panel PROPERTIES LABELS unit ENVIRONMENT TACH_TEST_WORKER_MODE=ok
  PASS_REGULAR_EXPRESSION "<h2>Engines</h2>.*DISAGREE \\(logits: largest difference.*python-matmul against tach: ")

# With the development virtualenv: the profile, its trace read by tach analyze, and a real two-engine report.
add_test(NAME cli.engine_profile.torch COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/engine_profile.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${PROJECT_SOURCE_DIR}/python ${_tach_eprof_work}/torch)
set_tests_properties(cli.engine_profile.torch PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 600)

# The workers' "profile" request itself: refusals by name (python-matmul in Debian's python3), and
# with the development virtualenv one trace per profiler cycle (skips, saying why, without it).
if(TACH_PYTHON)
  add_test(NAME python.engines_profile COMMAND ${PROJECT_SOURCE_DIR}/python/tests/run_pytest.sh ${PROJECT_BINARY_DIR}
    test_engines_profile.py)
  set_tests_properties(python.engines_profile PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
  add_test(NAME python.engines_profile_torch COMMAND sh -c
    "PYTHON=\"\${TACH_REF_PYTHON:-$HOME/tach-ref/bin/python}\" exec \"$0\" \"$1\" test_engines_profile.py"
    ${PROJECT_SOURCE_DIR}/python/tests/run_pytest.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(python.engines_profile_torch PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
