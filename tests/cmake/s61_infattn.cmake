# Inference attention's kernels on CUDA: the choice between cuDNN's fused attention and tach's own (every branch, on
# the CPU), and cuDNN's inference attention against the CPU's f32 reference on a GPU (its graphs checked without one).
tach_test(test_infer_attention_kernel unit)
tach_test(test_cuda_infer_attention gpu)
