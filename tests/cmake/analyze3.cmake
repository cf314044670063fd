# The CUDA libraries opened at first use, not linked (every command's memory and start-up), and
# tach analyze's Python frames matched across runs, its assumed ranks and refused inputs.
tach_test(test_library_loader unit)
# A fatal signal prints the call stack before the process ends.
tach_test(test_crash_report unit)
# The executable needs neither cuBLASLt, CUPTI, librsvg, cairo nor libcurl to start (readelf: its NEEDED entries).
add_test(NAME cli.tach_links_no_cublaslt_or_cupti
  COMMAND sh -c "command -v readelf > /dev/null || exit 77; ! readelf -d \"$1\" | grep -E 'NEEDED.*lib(cublasLt|cupti|rsvg|cairo|curl)'"
          sh $<TARGET_FILE:tach_cli>)
set_tests_properties(cli.tach_links_no_cublaslt_or_cupti PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
