# (placeholder: prune_importance)
