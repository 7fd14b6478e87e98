"""The errors that stop a run. Each message is one line: where, what, and how to fix it.

Per-file problems (a syntax error, a file that is not UTF-8, a matcher crash) are not
errors of this kind: they are recorded as ``FileError`` values and the review goes on.
"""


class RltError(Exception):
    """Base of every error that stops a run with exit code 2."""


class ConfigError(RltError):
    """The reviewed repository's configuration or a command-line option is invalid."""


class RuleLibraryError(RltError):
    """A rule file is invalid."""


class ChangeInputError(RltError):
    """The change to review cannot be read: a bad patch, path or ref."""


class GitError(ChangeInputError):
    """A git command failed."""
