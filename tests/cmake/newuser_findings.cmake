# What a new user's pass over train, eval, prune and shrink found, one test per finding (the head of
# tests/cli/newuser_findings.sh says what each case checks).
foreach(_case tokenizer_vocab notes_once split_flat help_dtype f16_on_cpu failed_runs_left)
  add_test(NAME cli.findings.${_case}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/newuser_findings.sh $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
            ${CMAKE_CURRENT_BINARY_DIR}/newuser_findings/${_case} ${_case})
  set_tests_properties(cli.findings.${_case} PROPERTIES LABELS unit TIMEOUT 300)
endforeach()
