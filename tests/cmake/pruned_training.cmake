# Recovery fine-tuning of head-pruned encoders (config.json's pruned_heads): tach train builds each
# layer with its kept heads (full, fused, checkpointed, the per-token heads, LoRA, QLoRA, distilled
# from an unpruned teacher), saves the smaller tensors with pruned_heads kept, and the saved model
# and the merged adapter load again (tests/cli/train_pruned.sh CASE). The 20-step equality with
# PyTorch is test_train_golden's *-pruned-cls2 fixtures; checkpointing's, test_train_checkpointing's.
foreach(_case full tasks lora distill)
  add_test(NAME cli.train_pruned.${_case} COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/train_pruned.sh
    $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures ${_case})
  set_tests_properties(cli.train_pruned.${_case} PROPERTIES LABELS unit SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
# A head-pruned model's training killed midway resumes to the same weights, byte for byte.
add_test(NAME cli.train_kill_resume_pruned COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/train_kill_resume.sh
  $<TARGET_FILE:tach_cli> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set_tests_properties(cli.train_kill_resume_pruned PROPERTIES LABELS unit TIMEOUT 300
  ENVIRONMENT "RESUME_MODEL=prune/bert-pruned")
