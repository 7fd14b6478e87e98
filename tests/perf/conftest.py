"""Fixtures for the perf hook's tests: module-scoped git repositories (runner processes
import torch, so scenarios share one repository and one measurement each)."""

from __future__ import annotations

import pytest
from gitrepo import GitRepo


@pytest.fixture(scope="module")
def make_repo(tmp_path_factory):
    return lambda name="repo": GitRepo(tmp_path_factory.mktemp("perf") / name)
