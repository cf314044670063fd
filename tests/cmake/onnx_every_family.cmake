# tach bench --engine onnxruntime on every family tach runs, with the development virtualenv (skips,
# saying why, without it): one fixture per family, the six heads spread over them (the bare body,
# sequence and token classification, question answering, the masked LM, the causal LM), each
# exported afresh, checked against transformers by the worker and agreeing with tach's outputs.
# And the exporter itself (test_onnx_export.py): the example batch, refusals by name.
set(_tach_onnx_fixtures ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
foreach(_tach_onnx_case
    bert=heads/bert-qa-f32
    distilbert=encoders/distilbert-cls2-f32
    roberta=encoders/roberta-cls2-f32
    xlm_roberta=heads/xlm-roberta-tokcls-f32
    mpnet=heads/mpnet-mlm-f32
    modernbert=decoders/modernbert-base-model-f32
    llama=decoders/llama-lm-llama3rope-f32
    mistral=heads/mistral-qa-f32
    qwen2=decoders/qwen2-cls-kv1-f32
    qwen3=heads/qwen3-tokcls-f32
    gemma3=decoders/gemma3-lm-softcap-f32)
  string(REPLACE "=" ";" _tach_onnx_pair ${_tach_onnx_case})
  list(GET _tach_onnx_pair 0 _tach_onnx_family)
  list(GET _tach_onnx_pair 1 _tach_onnx_fixture)
  add_test(NAME cli.onnx_export.${_tach_onnx_family} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/onnx_families.sh
    $<TARGET_FILE:tach_cli> ${_tach_onnx_fixtures}/${_tach_onnx_fixture} ${PROJECT_SOURCE_DIR}/python
    ${CMAKE_CURRENT_BINARY_DIR}/onnx_export/${_tach_onnx_family})
  set_tests_properties(cli.onnx_export.${_tach_onnx_family} PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

if(TACH_PYTHON)
  add_test(NAME python.onnx_export COMMAND sh -c
    "PYTHON=\"\${TACH_REF_PYTHON:-$HOME/tach-ref/bin/python}\" exec \"$0\" \"$1\" test_onnx_export.py"
    ${PROJECT_SOURCE_DIR}/python/tests/run_pytest.sh ${PROJECT_BINARY_DIR})
  set_tests_properties(python.onnx_export PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
