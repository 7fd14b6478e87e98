"""The final pass over every source of findings: scope, suppression, pre-existing, baseline, repeats, the result."""
