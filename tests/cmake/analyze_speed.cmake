# (placeholder: analyze_speed)
