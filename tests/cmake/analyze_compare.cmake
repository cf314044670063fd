# (placeholder header: the owner replaces it)
