# (placeholder: engine_train)
