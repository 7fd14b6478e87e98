"""Where a report points: the rules reference, permalinks to code, the tool's version.

Every outward link a report makes is built here, so the docs location and the
forge URL forms live in one place. The rules reference has no address of its own: a
repository names one (``docs-url``, ``--docs-url``); without it reports link no rule
and carry the rule texts themselves, never a link that may lead nowhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, urlsplit

from ..errors import GitError
from ..change.git import git
from .paths import name_bytes

TOOL_NAME = "rltrefactor"

Forge = Literal["github", "gitlab", "other"]

# scp-like remote: [user@]host:owner/repo(.git) -- no scheme, and the part before the
# first colon has no slash (otherwise it is a local path such as ./a:b).
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>[^/].*)$")


def tool_version() -> str:
    from .. import __version__  # read at call time: the package root owns the version

    return __version__


def rule_url(anchor: str, docs_url: str | None) -> str | None:
    """The rule's place in the rules reference at ``docs_url``; None without one."""
    return f"{docs_url.split('#', 1)[0]}#{anchor}" if docs_url else None


@dataclass(frozen=True)
class WebRepo:
    """A repository's browsable home, e.g. ``https://github.com/owner/repo``."""

    base: str  # scheme://host/owner/repo, no trailing slash, no credentials
    forge: Forge

    def blob(self, sha: str, path: str, line: int, end_line: int | None = None) -> str:
        """Permalink to ``path`` at commit ``sha``, anchored to the line range."""
        quoted = quote(name_bytes(path), safe="/")  # the name's own bytes, whatever they are
        last = end_line if end_line is not None and end_line > line else None
        if self.forge == "gitlab":
            anchor = f"L{line}" + (f"-{last}" if last else "")
            return f"{self.base}/-/blob/{sha}/{quoted}#{anchor}"
        anchor = f"L{line}" + (f"-L{last}" if last else "")
        return f"{self.base}/blob/{sha}/{quoted}#{anchor}"

    def commit(self, sha: str) -> str:
        middle = "/-/commit/" if self.forge == "gitlab" else "/commit/"
        return f"{self.base}{middle}{sha}"


def web_repo(remote: str | None) -> WebRepo | None:
    """The browsable repository behind a git remote URL, or None when it has none.

    Accepts ``git@host:owner/repo.git``, ``https://[user@]host/owner/repo(.git)``,
    ``ssh://git@host[:port]/owner/repo.git`` and ``git://host/owner/repo``.
    Only GitHub- and GitLab-hosted remotes (host name containing ``github`` or
    ``gitlab``, which covers their enterprise installs) get permalinks; any other host
    returns a ``WebRepo`` with ``forge="other"``, which reports render as plain text.
    """
    if not remote:
        return None
    remote = remote.strip()
    host_path = _host_and_path(remote)
    if host_path is None:
        return None
    host, path = host_path
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[: -len(".git")]
    if not host or path.count("/") < 1:
        return None
    lowered = host.lower()
    forge: Forge = "github" if "github" in lowered else "gitlab" if "gitlab" in lowered else "other"
    return WebRepo(base=f"https://{host}/{path}", forge=forge)


def _host_and_path(remote: str) -> tuple[str, str] | None:
    if "://" in remote:
        parts = urlsplit(remote)
        if parts.scheme not in ("https", "http", "ssh", "git", "git+ssh"):
            return None
        # hostname drops credentials and port: neither belongs in a published link.
        return (parts.hostname or "", parts.path)
    scp = _SCP_LIKE.match(remote)
    if scp is None:
        return None
    return (scp.group("host"), scp.group("path"))


def permalink(
    repo: WebRepo | None, sha: str | None, path: str, line: int, end_line: int | None = None
) -> str | None:
    """A link to the exact lines at ``sha``, or None when no forge link can be made."""
    if repo is None or repo.forge == "other" or not sha:
        return None
    return repo.blob(sha, path, line, end_line)


def remote_url(repo: str) -> str | None:
    """``remote.origin.url`` of the repository at ``repo``, or None when it has none."""
    try:
        url = git(repo, "config", "--get", "remote.origin.url").strip()
    except GitError:  # no origin, no repository or no git: the report simply has no links
        return None
    return url or None
