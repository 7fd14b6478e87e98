"""The repository call index: facts per file, resolved calls, and a function's context proven from its callers."""
