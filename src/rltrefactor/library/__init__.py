"""Rule model, YAML loading and validation, examples runner, docs and scaffolding."""
