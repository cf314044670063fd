# tach bench --train --engine: other engines' training points (test_engine_train: the stand-in
# worker and tach's python-matmul always; torch and torch-compile against tach's losses with the
# development virtualenv, skipped without it).
tach_test(test_engine_train unit)

# From the command line: tach and the stand-in worker (Python's standard library) train the same
# points; the stand-in's constant loss disagrees with tach's, and the point records both.
set(_tach_engine_train_runs ${CMAKE_CURRENT_BINARY_DIR}/engine_train_runs)
add_test(NAME cli.engine_train.sweep COMMAND sh -c "rm -rf \"$1\" && exec \"$0\" bench --train -m \"$2\" \
  --engine tach,torch --python \"$3\" -b 1 -s 8 -t 1 --runs 3 --warmup 1 --no-dropout --no-progress --no-tensorboard \
  --format jsonl --runs-dir \"$(dirname \"$1\")\" --run-id train-two-engines"
  $<TARGET_FILE:tach_cli> ${_tach_engine_train_runs}/train-two-engines
  ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/distilbert-cls2-f32 ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/engines/python)
set_tests_properties(cli.engine_train.sweep PROPERTIES LABELS unit ENVIRONMENT TACH_TEST_WORKER_MODE=ok
  PASS_REGULAR_EXPRESSION "\"engine\":\"torch\".*\"losses\":{\"engine\":\\[1\\.0,1\\.0,1\\.0\\],\"steps_compared\":3,\"tach\":\\[0\\.")
add_test(NAME cli.engine_train.onnxruntime_refused COMMAND tach_cli bench --train
  -m ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/distilbert-cls2-f32 --engine tach,onnxruntime -b 1 -s 8
  --runs-dir ${_tach_engine_train_runs})
set_tests_properties(cli.engine_train.onnxruntime_refused PROPERTIES LABELS unit PASS_REGULAR_EXPRESSION
  "engine onnxruntime runs inference only; a training sweep \\(--train\\) times the engines that train: tach, torch, torch-compile, python-matmul")
