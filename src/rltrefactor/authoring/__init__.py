"""Rule-authoring tools: the rules docs, scaffolding, version checks and the examples runner."""
