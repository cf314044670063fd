# Distillation and pruning options that must name themselves (tests/cli/review_fixes2.sh CASE): a
# --distill-* option without --distill-from, a teacher dtype the device lacks (before any model
# loads), a teacher named by the architecture it was published as, and tach prune's --heads and
# --layers naming themselves and refusing duplicates (a head-pruned checkpoint trains:
# pruned_training.cmake).
foreach(_case distill_needs_teacher distill_dtype_device teacher_architecture prune_lists)
  add_test(NAME cli.review_fixes2.${_case} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/review_fixes2.sh
    $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${_case})
  set_tests_properties(cli.review_fixes2.${_case} PROPERTIES LABELS unit TIMEOUT 120)
endforeach()
