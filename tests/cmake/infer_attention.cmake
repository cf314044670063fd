# Inference attention's kernels on CUDA: the choice between cuDNN's fused attention and tach's own (every branch, on
# the CPU), cuDNN's inference attention against the CPU's f32 reference on a GPU (its graphs checked without one),
# and both attention ops in bf16/f16 activations on a GPU (every kernel against the CPU on rounded inputs).
tach_test(test_infer_attention_kernel unit)
tach_test(test_cuda_infer_attention gpu)
tach_test(test_cuda_attention_bf16 gpu)
