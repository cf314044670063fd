# Usage errors and run directories, end to end (tests/cli/usage_and_runs.sh CASE): misspelt commands
# and options get the nearest name, bad values are usage errors (exit 2), the batch option has one
# name in every command; eval and bench never write into another run's directory and reuse
# accuracy.json only when it matches; what cannot run is refused before a run directory and a sweep
# where no point ran exits 1; an eval's summary and report describe an eval, every dtype's own;
# tach run takes every bench option; estimate's table exits as each model alone would; a dataset or
# tokenizer that cannot be read is refused before a run directory, and a failed start is no dead end;
# compare says why nothing is comparable.
foreach(_case suggestions batch_option semantic_usage eval_run_id accuracy_resume nothing_can_run eval_summary
        run_options estimate_table failed_start compare_reasons)
  add_test(NAME cli.usage_and_runs.${_case} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/usage_and_runs.sh
    $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${_case})
  set_tests_properties(cli.usage_and_runs.${_case} PROPERTIES LABELS unit TIMEOUT 300)
endforeach()
