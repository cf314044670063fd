# The encoders' training entry points (linear and its NF4 form, the embedding sum, dropout,
# LayerNorm, attention, the activations, row ops): each equals its CPU kernel and refuses bad
# operands naming the op.
tach_test(test_train_encoder_ops unit)
