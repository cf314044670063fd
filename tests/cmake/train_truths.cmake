# Training's figures, advice and summaries: every flag advice names exists, resumed and interrupted
# runs keep what they measured, and bench --train, train and estimate agree on a point's memory.
tach_test(test_train_advice unit)
# A Ctrl-C in the work after the last step keeps summary.json; --resume finishes; a finished run
# resumed says so and changes nothing.
add_test(NAME cli.train_post_training_stop COMMAND ${PROJECT_SOURCE_DIR}/tests/cli/train_post_training_stop.sh
  $<TARGET_FILE:tach_cli> ${PROJECT_SOURCE_DIR}/tests/fixtures)
set_tests_properties(cli.train_post_training_stop PROPERTIES LABELS unit TIMEOUT 300)
tach_test(test_train_memory unit)
# Lengths past a model's positions are refused by the estimate and by generate's random prompts.
add_test(NAME cli.estimate_past_positions COMMAND tach_cli estimate -m preset:bert-tiny -s 100000)
set_tests_properties(cli.estimate_past_positions PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "100000 tokens per row is past preset:bert-tiny's 512 positions")
add_test(NAME cli.generate_prompt_past_positions COMMAND tach_cli generate
  -m ${PROJECT_SOURCE_DIR}/tests/fixtures/decoders/llama-lm-llama3rope-f32 --prompt-len 65 -n 2)
set_tests_properties(cli.generate_prompt_past_positions PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "--prompt-len 65 is past .*'s 64 positions")
# oneDNN held below AVX512_BF16: its bf16 matmul is emulated, and the advice must not call it hardware.
add_test(NAME train_truths.bf16_advice_without_hardware COMMAND test_train_advice
  --gtest_filter=TrainAdvice.Bf16HardwareIsTheIsaNotTheMatmul:TrainAdvice.AMeasuredPrecisionDecidesTheAdvice)
set_tests_properties(train_truths.bf16_advice_without_hardware PROPERTIES LABELS unit
  ENVIRONMENT "DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI")
