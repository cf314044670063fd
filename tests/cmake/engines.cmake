# tach bench --engine: the engine worker client (test_engines: the protocol against a stand-in
# worker that misbehaves on request, and sweeps with other engines' points) and the engine axis of
# bench and compare from the command line. The stand-in (tests/fixtures/engines/python, given as
# --python) needs only python3, so these always run.
tach_test(test_engines unit)

set(_tach_engines_model ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/bert-cls2-f32)
set(_tach_engines_python ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/engines/python)
set(_tach_engines_runs ${CMAKE_CURRENT_BINARY_DIR}/engines_runs)

add_test(NAME cli.engines.unknown_engine COMMAND tach_cli bench -m ${_tach_engines_model} --engine tach,tensorrt
  -b 1 -s 8 --runs-dir ${_tach_engines_runs})
set_tests_properties(cli.engines.unknown_engine PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION
  "engine 'tensorrt' is not one of tach, torch, torch-compile, onnxruntime, python-matmul")

add_test(NAME cli.engines.missing_packages COMMAND tach_cli bench -m ${_tach_engines_model} --engine tach,onnxruntime
  --python ${_tach_engines_python} -b 1 -s 8 --runs-dir ${_tach_engines_runs})
set_tests_properties(cli.engines.missing_packages PROPERTIES LABELS unit ENVIRONMENT TACH_TEST_WORKER_MODE=unavailable
  PASS_REGULAR_EXPRESSION "engine onnxruntime needs the Python packages onnxruntime, onnx, which [^ ]*python cannot import: install them with `python3 -m pip install onnxruntime onnx`")

# A sweep over two engines, then tach compare --by engine over it (tach's points the baseline).
add_test(NAME cli.engines.sweep COMMAND sh -c "rm -rf \"$1\" && exec \"$0\" bench -m \"$2\" --engine tach,torch \
  --python \"$3\" -b 1,2 -s 8 -t 1 --runs 3 --warmup 1 --no-progress --no-tensorboard --format jsonl \
  --runs-dir \"$(dirname \"$1\")\" --run-id two-engines"
  $<TARGET_FILE:tach_cli> ${_tach_engines_runs}/two-engines ${_tach_engines_model} ${_tach_engines_python})
set_tests_properties(cli.engines.sweep PROPERTIES LABELS unit FIXTURES_SETUP engines_sweep ENVIRONMENT TACH_TEST_WORKER_MODE=ok
  PASS_REGULAR_EXPRESSION "\"engine\":\"torch\".*\"engine_run\":.*\"outputs\":{\"agree\":false,\"checked\":true")
add_test(NAME cli.engines.compare_by_engine COMMAND tach_cli compare ${_tach_engines_runs}/two-engines --by engine)
set_tests_properties(cli.engines.compare_by_engine PROPERTIES LABELS unit FIXTURES_REQUIRED engines_sweep
  PASS_REGULAR_EXPRESSION "\\[engine torch\\], model")
