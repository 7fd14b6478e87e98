"""Where code runs: the execution map of a file, the repository call index, and the file model that joins them."""
