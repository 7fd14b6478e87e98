"""Remote URL forms → permalinks, and the `origin` lookup."""

from __future__ import annotations

import subprocess

import pytest

from rltrefactor.report.links import permalink, remote_url, rule_url, web_repo

SHA = "abc123"


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("git@github.com:acme/engine.git", "https://github.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("https://github.com/acme/engine.git", "https://github.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("https://github.com/acme/engine", "https://github.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("https://github.com/acme/engine/", "https://github.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("ssh://git@github.com/acme/engine.git", "https://github.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("ssh://git@github.example.com:2222/acme/engine.git",
         "https://github.example.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("https://user:token@github.com/acme/engine.git",
         "https://github.com/acme/engine/blob/abc123/a/b.py#L10-L12"),
        ("git@gitlab.com:group/sub/engine.git", "https://gitlab.com/group/sub/engine/-/blob/abc123/a/b.py#L10-12"),
        ("https://gitlab.com/group/engine", "https://gitlab.com/group/engine/-/blob/abc123/a/b.py#L10-12"),
        ("ssh://git@gitlab.example.org/group/engine.git",
         "https://gitlab.example.org/group/engine/-/blob/abc123/a/b.py#L10-12"),
    ],
)
def test_permalink_forms(remote, expected):
    assert permalink(web_repo(remote), SHA, "a/b.py", 10, 12) == expected


def test_single_line_anchor():
    assert permalink(web_repo("git@github.com:o/r.git"), SHA, "x.py", 7, 7).endswith("#L7")
    assert permalink(web_repo("git@gitlab.com:o/r.git"), SHA, "x.py", 7).endswith("#L7")


def test_path_is_url_quoted():
    link = permalink(web_repo("git@github.com:o/r.git"), SHA, "dir with space/#x.py", 1)
    assert link == "https://github.com/o/r/blob/abc123/dir%20with%20space/%23x.py#L1"


@pytest.mark.parametrize(
    "remote",
    ["git@bitbucket.org:o/r.git", "https://example.com/o/r.git"],
)
def test_unknown_forge_gets_no_link(remote):
    repo = web_repo(remote)
    assert repo is not None and repo.forge == "other"
    assert permalink(repo, SHA, "a.py", 1) is None


@pytest.mark.parametrize("remote", [None, "", "/srv/git/engine.git", "./engine", "file:///srv/engine.git", "github.com"])
def test_local_or_malformed_remote_has_no_web_repo(remote):
    assert web_repo(remote) is None


def test_no_sha_no_link():
    assert permalink(web_repo("git@github.com:o/r.git"), None, "a.py", 1) is None


def test_rule_url():
    assert rule_url("host-sync-in-hot-path", "https://d.test/rules.md") == "https://d.test/rules.md#host-sync-in-hot-path"


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_remote_url_reads_origin(tmp_path):
    _git(tmp_path, "init", "-q")
    assert remote_url(str(tmp_path)) is None
    _git(tmp_path, "remote", "add", "origin", "git@github.com:acme/engine.git")
    assert remote_url(str(tmp_path)) == "git@github.com:acme/engine.git"


def test_remote_url_outside_a_repository(tmp_path):
    assert remote_url(str(tmp_path / "missing")) is None
