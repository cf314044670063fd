# (placeholder: qlora_tasks)
