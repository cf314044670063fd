# Usage errors before the model is read, and numbers as a person writes them: a bad option value is
# refused (exit 2, naming the option) before any command reads its model.

# Every command's option values that were checked only after the model loaded (eval --tag-scheme,
# answer --doc-stride, profile --group-by, bench --dtype, ...), each given with a model that does
# not exist: the usage error must come first.
add_test(NAME cli.refused_before_load COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/refused_before_load.sh $<TARGET_FILE:tach_cli>)
set_tests_properties(cli.refused_before_load PROPERTIES LABELS unit)

# A model's parameter count, three significant digits and a unit in every place it is printed.
tach_test(test_number_texts unit)
