# Token classification: seqeval's entity-level metrics (every scheme), CoNLL and JSON tagged
# datasets, the pipeline's entity groups, and tach classify/eval on token-classification models.
tach_test(test_token_classes unit)
