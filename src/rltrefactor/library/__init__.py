"""Rule model, YAML loading and validation."""
