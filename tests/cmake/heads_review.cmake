# The heads through the binary where the data or the checkpoint does not fit: a head built new is
# said in eval and bench, data of another task is refused naming what the head needs.
add_test(NAME cli.heads_review
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/heads_review.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/heads_review_cli)
set_tests_properties(cli.heads_review PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 180)
