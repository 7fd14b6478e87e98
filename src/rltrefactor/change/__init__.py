"""The change under review: git, the ChangeSet of a range, patch, index or paths, and file contents at a revision."""
