# The engine workers (python3 -m tach.engines): the protocol with the standard-library engine in
# Debian's python3, and the PyTorch and ONNX Runtime engines against transformers with the
# development virtualenv (skips, saying why, without it).
if(TACH_PYTHON)
  add_test(NAME python.engines COMMAND ${PROJECT_SOURCE_DIR}/python/tests/run_pytest.sh ${PROJECT_BINARY_DIR}
    test_engines_protocol.py)
  set_tests_properties(python.engines PROPERTIES LABELS unit SKIP_RETURN_CODE 77)
  add_test(NAME python.engines_torch COMMAND ${PROJECT_SOURCE_DIR}/python/tests/run_engines_torch.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(python.engines_torch PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 900)
endif()
