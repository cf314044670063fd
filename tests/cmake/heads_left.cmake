# The per-token heads' remaining pieces: LoRA on the masked LM, token classifier and question
# answering against peft, their tasks' data in Parquet as the Hub publishes it, report and compare
# over their eval runs, and the small notes of classify, estimate and fill-mask.
tach_test(test_train_task_lora unit)
tach_test(test_task_parquet unit)
