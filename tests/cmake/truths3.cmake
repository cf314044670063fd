# Verdicts and refusals that hold on a busy machine: tach compare on one build and one command under
# loads the test makes itself, grids refused before anything runs, and option values refused
# before any weights load.
add_test(NAME cli.compare_under_load
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/compare_under_load.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_BINARY_DIR}/compare_under_load)
set_tests_properties(cli.compare_under_load PROPERTIES LABELS unit RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
# embed --prompt-name and estimate --lora-targets: a value the model's config files rule out is a
