# tach analyze A B (two runs of real torch.profiler traces compared), the roofline's memory side,
# and tach report on an analyze run (report.html, PNG figures, slides).
tach_test(test_analyze_compare unit)
tach_test(test_analysis_report unit)

# The binary: two directories compared (--json's comparison object, "slower" for a wider model),
# two cycles of one run (--compare: not faster or slower), and tach report on the run with
# --png and --pptx.
add_test(NAME cli.analyze_compare
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/analyze_compare.sh $<TARGET_FILE:tach_cli>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${CMAKE_CURRENT_BINARY_DIR}/analyze_compare)
set_tests_properties(cli.analyze_compare PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 120)

# Several paths never change meaning silently: three runs' directories are refused (not summed),
# and two trace files without --compare are one run, which the output says, naming each rank's.
set(_analyze ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/analyze)
add_test(NAME cli.analyze_three_directories_refused
  COMMAND $<TARGET_FILE:tach_cli> analyze ${_analyze}/train ${_analyze}/infer ${_analyze}/compare/base
          -o ${CMAKE_CURRENT_BINARY_DIR}/analyze_three)
set_tests_properties(cli.analyze_three_directories_refused PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "train: a directory is one run, and 3 paths were given")
add_test(NAME cli.analyze_two_files_one_run_said
  COMMAND $<TARGET_FILE:tach_cli> analyze ${_analyze}/train/trainer.0.pt.trace.json.gz
          ${_analyze}/compare/base/base.0.pt.trace.json.gz -o ${CMAKE_CURRENT_BINARY_DIR}/analyze_two_files)
# -o is refused once it holds an analysis: each run of the test starts without it.
add_test(NAME cli.analyze_two_files_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${CMAKE_CURRENT_BINARY_DIR}/analyze_two_files)
set_tests_properties(cli.analyze_two_files_clean PROPERTIES LABELS unit FIXTURES_SETUP analyze_two_files)
set_tests_properties(cli.analyze_two_files_one_run_said PROPERTIES LABELS unit FIXTURES_REQUIRED analyze_two_files
  PASS_REGULAR_EXPRESSION "note: 2 traces analysed as one run \\(their tables summed\\): rank 0: [^\n]*trainer.0.pt.trace.json.gz, [^\n]*base.0.pt.trace.json.gz")
