# What a new user's pass over prune -> train -> shrink, bench --accuracy and run -d found, one test
# per finding (the head of tests/cli/newuser_pass.sh says what each case checks).
# test_prune_pruned_importance: importance on an already head-pruned model, its scores against the
# same model at full width with the removed heads zeroed.
tach_test(test_prune_pruned_importance unit)
foreach(_case max_length task_from_head option_names data_exit_codes distill_mix prune_scored teacher_vocab pruned_again)
  add_test(NAME cli.newuser.${_case}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/newuser_pass.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
            ${CMAKE_CURRENT_BINARY_DIR}/newuser/${_case} ${_case})
  set_tests_properties(cli.newuser.${_case} PROPERTIES LABELS unit TIMEOUT 300)
endforeach()
