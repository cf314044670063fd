# tach prune --by importance: scores from tach's forward and backward against PyTorch's (gates on
# the transformers model), the model pruned by them against transformers, and its bad input.
tach_test(test_prune_importance golden golden_check.cc)

# The binary: a run by importance, and each kind of bad calibration input named (exit status 2 for
# the options, 1 for the data).
add_test(NAME cli.prune_importance
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/prune_importance.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
          ${CMAKE_CURRENT_BINARY_DIR}/prune_importance)
set_tests_properties(cli.prune_importance PROPERTIES LABELS unit TIMEOUT 120)
