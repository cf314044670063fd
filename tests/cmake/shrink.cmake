# (placeholder: shrink)
