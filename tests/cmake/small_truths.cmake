# Small truths: figures and messages that must say what was measured (cache-resident ops in the
# roofline, a command's own peak RSS, empty texts in tach embed, header detection of data files,
# tach embed --json's machine block), and the docs' example commands run as written.

# tach monitor: the command's own peak RSS, not tach's pre-exec copy of itself.
add_test(NAME cli.monitor_command_peak
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/monitor_peak.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_BINARY_DIR}/monitor_peak)
set_tests_properties(cli.monitor_command_peak PROPERTIES LABELS unit)

# tach embed: an empty text is encoded as sentence-transformers encodes it ([CLS] [SEP]), and
# --json names the device.
add_test(NAME cli.embed_empty_text_and_device
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/embed_empty_text.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/bert-base-model-f32
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/tokenizers/tiny-wordpiece ${PROJECT_SOURCE_DIR}/../shared/tokenizers/qwen2.5
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/decoders/qwen3-embed-bf16)
set_tests_properties(cli.embed_empty_text_and_device PROPERTIES LABELS unit SKIP_RETURN_CODE 77)

# The docs stay true: --help and docs/cli.md list the same options per command (and train --help
# names every model_type it trains); every example command of README.md, docs/cli.md and
# docs/python.md runs as written (placeholders filled, Hub ids mapped to fixtures offline, what
# needs a GPU, MPI, SLURM or the network listed as not run; see the script's head).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME docs.help_matches_cli_md
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/docs/check_help.py $<TARGET_FILE:tach_cli> ${PROJECT_SOURCE_DIR})
  set_tests_properties(docs.help_matches_cli_md PROPERTIES LABELS unit)
  add_test(NAME docs.examples_run
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/docs/run_examples.py ${PROJECT_BINARY_DIR}
            ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/../shared)
  set_tests_properties(docs.examples_run PROPERTIES LABELS unit TIMEOUT 3600 RUN_SERIAL TRUE)
endif()
