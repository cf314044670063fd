# The CUDA libraries opened at first use, not linked (every command's memory and start-up), and
# tach analyze's Python frames matched across runs, its assumed ranks and refused inputs.
tach_test(test_cuda_library_loader unit)
# The executable needs neither cuBLASLt nor CUPTI to start (readelf: its NEEDED entries).
add_test(NAME cli.tach_links_no_cublaslt_or_cupti
  COMMAND sh -c "command -v readelf > /dev/null || exit 77; ! readelf -d \"$1\" | grep -E 'NEEDED.*lib(cublasLt|cupti)'"
          sh $<TARGET_FILE:tach_cli>)
set_tests_properties(cli.tach_links_no_cublaslt_or_cupti PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
