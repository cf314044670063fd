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
# tach estimate refuses what cannot run as a usage error (exit 2): a LoRA rank below 1, a negative
# count of new tokens; and a prompt whose new tokens run past the positions, as a row past them.
add_test(NAME cli.estimate_lora_rank_negative COMMAND sh -c "\"$0\" \"$@\"; echo \"exit status $?\""
  $<TARGET_FILE:tach_cli> estimate -m preset:bert-tiny --lora-rank -1 --mode train-lora)
set_tests_properties(cli.estimate_lora_rank_negative PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "LoRA rank -1: LoRA ranks must be positive integers.*exit status 2")
add_test(NAME cli.estimate_lora_rank_zero COMMAND sh -c "\"$0\" \"$@\"; echo \"exit status $?\""
  $<TARGET_FILE:tach_cli> estimate -m preset:bert-tiny --lora-rank 0 --mode train-lora)
set_tests_properties(cli.estimate_lora_rank_zero PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "LoRA rank 0: LoRA ranks must be positive integers.*exit status 2")
add_test(NAME cli.estimate_generate_tokens_negative COMMAND sh -c "\"$0\" \"$@\"; echo \"exit status $?\""
  $<TARGET_FILE:tach_cli> estimate -m preset:qwen2-tiny --generate-tokens -5)
set_tests_properties(cli.estimate_generate_tokens_negative PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "new tokens -5: the count cannot be negative.*exit status 2")
add_test(NAME cli.estimate_generated_past_positions COMMAND sh -c "\"$0\" \"$@\"; echo \"exit status $?\""
  $<TARGET_FILE:tach_cli> estimate -m preset:qwen2-tiny -s 32000 --generate-tokens 10000)
set_tests_properties(cli.estimate_generated_past_positions PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "32000 tokens \\+ 10000 new ones \\(42000 per row\\) is past preset:qwen2-tiny's 32768 positions.*exit status 2")
# tach estimate without -s on a model whose rows are shorter than the default 128 estimates its
# longest row and says so (an explicit -s past the positions is refused: cli.estimate_past_positions).
add_test(NAME cli.estimate_default_length_within_positions
  COMMAND tach_cli estimate -m ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/encoders/roberta-cls2-f32 --mode train-lora)
set_tests_properties(cli.estimate_default_length_within_positions PROPERTIES LABELS unit
  PASS_REGULAR_EXPRESSION "batch 1 x 30 tokens \\(the model's longest row; -s sets another\\)")
