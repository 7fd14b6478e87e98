"""Git repositories whose commits are successive released versions of a real package.

Wheels come from the package registry by name and version (``pip download``) and are
cached under ``bench/work/wheels``; a repository is rebuilt only when missing. Each
version is one commit tagged ``v<version>``; the tree holds what the wheel installs,
less ``*.dist-info`` and compiled extensions (they are neither reviewed nor diffable).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work")
WHEELS = os.path.join(WORK, "wheels")
_BINARY_SUFFIXES = (".so", ".pyd", ".dll", ".dylib", ".exe")
# Fixed identity and dates: the same versions always give the same commit ids.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}


class RegistryUnavailable(RuntimeError):
    """The package registry could not be reached (or refused the package)."""


@dataclass(frozen=True)
class History:
    package: str
    versions: tuple[str, ...]
    repo: str

    def tag(self, version: str) -> str:
        return f"v{version}"

    def ranges(self) -> list[tuple[str, str]]:
        """Consecutive ranges as (base tag, head tag)."""
        tags = [self.tag(v) for v in self.versions]
        return list(zip(tags, tags[1:]))


def git(repo: str, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    done = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{repo}: git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _cached_wheel(package: str, version: str) -> str | None:
    for path in glob.glob(os.path.join(WHEELS, "*.whl")):
        name, _, rest = os.path.basename(path).partition("-")
        if _normalized(name) == _normalized(package) and rest.startswith(f"{version}-"):
            return path
    return None


def download_wheel(package: str, version: str) -> str:
    cached = _cached_wheel(package, version)
    if cached:
        return cached
    os.makedirs(WHEELS, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--python-version", "3.11", "--dest", WHEELS, f"{package}=={version}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    cached = _cached_wheel(package, version)
    if done.returncode != 0 or not cached:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RegistryUnavailable(f"pip download {package}=={version} failed: {tail[0]}")
    return cached


def _unpack(wheel: str, tree: str) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            top = member.filename.split("/", 1)[0]
            if member.is_dir() or top.endswith((".dist-info", ".data")):
                continue
            if member.filename.endswith(_BINARY_SUFFIXES):
                continue
            target = os.path.join(tree, member.filename)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.open(member) as source, open(target, "wb") as sink:
                shutil.copyfileobj(source, sink)


def _clear_tree(repo: str) -> None:
    for entry in os.listdir(repo):
        if entry == ".git":
            continue
        path = os.path.join(repo, entry)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def build_history(package: str, versions: tuple[str, ...], repo: str | None = None) -> History:
    """Build (or reuse) the repository; raises RegistryUnavailable when a wheel cannot be had."""
    repo = repo or os.path.join(WORK, "history", f"{_normalized(package)}-{len(versions)}")
    history = History(package, versions, repo)
    marker = os.path.join(repo, ".git", "bench-complete")
    if os.path.exists(marker) and open(marker).read() == "\n".join(versions):
        return history
    wheels = [download_wheel(package, v) for v in versions]
    shutil.rmtree(repo, ignore_errors=True)
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    for version, wheel in zip(versions, wheels):
        _clear_tree(repo)
        _unpack(wheel, repo)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", f"{package} {version}")
        git(repo, "tag", history.tag(version))
    with open(marker, "w") as handle:
        handle.write("\n".join(versions))
    return history


@dataclass(frozen=True)
class Touched:
    """Python files a range touches at its head, from ``git diff --name-status -M``."""

    path: str
    status: str  # A, M or R (C counts as A: a new path)
    added_lines: int


def touched_python(repo: str, base: str, head: str) -> list[Touched]:
    status_out = git(repo, "diff", "--name-status", "-M", base, head)
    numstat = {}
    for line in git(repo, "diff", "--numstat", "-M", base, head).splitlines():
        added, _, path = line.split("\t", 2)
        if " => " in path:  # renamed: numstat writes old => new, maybe inside braces
            path = _rename_target(path)
        numstat[path] = int(added) if added.isdigit() else 0
    touched = []
    for line in status_out.splitlines():
        fields = line.split("\t")
        code, path = fields[0][0], fields[-1]
        if code in "AMRC" and path.endswith((".py", ".pyi")):
            touched.append(Touched(path, "A" if code == "C" else code, numstat.get(path, 0)))
    return touched


def _rename_target(path: str) -> str:
    match = re.match(r"^(.*)\{(.*) => (.*)\}(.*)$", path)
    if match:
        prefix, _, new, suffix = match.groups()
        return (prefix + new + suffix).replace("//", "/")
    return path.split(" => ", 1)[1]
