# A GPU training step that reads nothing back from the device: the masked mean as an op (CPU and
# CUDA kernels; test_cuda_train's CudaTrainMaskedMean compares them), the decoder's batch checked
# and its head rows found in the data phase, and cuDNN's run-time refusals falling back to tach's
# attention kernels with the reason recorded (test_cuda_train's CudaTrainCudnnFallback on a GPU).
tach_test(test_masked_mean unit)
tach_test(test_decoder_data_phase unit)
tach_test(test_train_attention_fallback unit)
