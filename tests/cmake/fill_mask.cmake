# tach fill-mask and --head: the fill-mask pipeline's post-processing and mask tokens, tiny masked
# LMs against transformers' fill-mask pipeline, and the CLI (fill-mask, --head on the commands).
tach_test(test_fill_mask unit)

# The binary: fill-mask --json equals the pipeline's golden output, its errors (no mask token, another
# head), classify --json's raw outputs for every head, bench --head recorded in config.json, --head
# usage errors.
add_test(NAME cli.fill_mask_and_head
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/fill_mask_and_head.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/fill_mask_and_head)
set_tests_properties(cli.fill_mask_and_head PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
