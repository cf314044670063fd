# Training the per-token heads (tach train --task mlm|token-classification|question-answering):
# masking, label alignment, answer windows, and 20 steps against transformers.
tach_test(test_train_tasks unit)
