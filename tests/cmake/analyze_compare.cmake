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
