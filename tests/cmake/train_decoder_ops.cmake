# The decoders' training entry points (rms_norm, causal attention, the gated MLP): each equals its
# CPU kernel and refuses bad operands naming the op.
tach_test(test_train_decoder_ops unit)
