# The per-token heads' remaining pieces: LoRA and QLoRA on the masked LM, token classifier and
# question answering against peft (and bitsandbytes), their tasks' data in Parquet as the Hub
# publishes it, and report/compare over their eval runs.
tach_test(test_train_task_lora unit)
