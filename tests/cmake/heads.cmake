# The per-token heads (masked LM, token classification, question answering) of every encoder family
# against transformers' outputs and parameter counts, and the heads a checkpoint lacks.
tach_test(test_heads golden)
