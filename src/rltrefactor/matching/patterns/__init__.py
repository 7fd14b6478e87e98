"""The pattern compiler: YAML code patterns into matchers."""
