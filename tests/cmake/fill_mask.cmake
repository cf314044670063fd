# tach fill-mask and --head: the fill-mask pipeline's post-processing and mask tokens, tiny masked
# LMs against transformers' fill-mask pipeline, and the CLI (fill-mask, --head on the commands).
tach_test(test_fill_mask unit)
