# Verdicts and refusals that hold on a busy machine: tach compare on one build and one command under
# loads the test makes itself, grids refused before anything runs, and option values refused
# before any weights load.
add_test(NAME cli.compare_under_load
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/compare_under_load.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_BINARY_DIR}/compare_under_load)
set_tests_properties(cli.compare_under_load PROPERTIES LABELS unit RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
# embed --prompt-name and estimate --lora-targets: a value the model's config files rule out is a
# usage error naming the option and the values, before the weights (cut in half here) are read.
add_test(NAME cli.option_values_before_weights
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/option_values_before_weights.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/option_values_before_weights)
set_tests_properties(cli.option_values_before_weights PROPERTIES LABELS unit)
# A grid with lengths past the model's positions among others: refused up front, bench and --train.
add_test(NAME cli.lengths_past_positions
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/lengths_past_positions.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/lengths_past_positions)
set_tests_properties(cli.lengths_past_positions PROPERTIES LABELS unit)
