# What a training step owns, as ops on the model's device: AdamW as one multi-tensor update, the
# gradient norm, clipping and zeroing, the losses (cross-entropy with question answering's pair,
# MSE, BCE with logits) and LoRA's forward and backward, each checked and equal to its kernel.
tach_test(test_train_state unit)
