# Pruned models: loading checkpoints with pruned heads and smaller FFNs against transformers, and
# tach prune (what it removes, how it ranks, what it writes).
tach_test(test_prune golden golden_check.cc)
# The decoder families and ModernBERT: key/value groups, FFN neurons and layers against transformers.
tach_test(test_prune_decoders golden golden_check.cc)

# The binary: its summary, a pruned model classifying, nothing removed copied as it was, and the
# exit status and message of each kind of bad input.
add_test(NAME cli.prune
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/prune.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
          ${CMAKE_CURRENT_BINARY_DIR}/prune)
set_tests_properties(cli.prune PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)
