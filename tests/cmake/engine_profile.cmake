# (placeholder: engine_profile)
