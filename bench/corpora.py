"""The files every tool is measured on, built under ``bench/work`` from installed or
registry packages only (no other network).

- ``torch``: the Python sources of eight subtrees of the installed torch, as a git
  repository of one commit (a project checkout, as the tools would see one);
- ``demo``: ``examples/demo_engine`` copied the same way (absent until it exists);
- PR ranges: real consecutive libcst releases, one range touching one file and one
  touching about thirty;
- the size-independence pair: one small real change committed into a 20-file and a
  1,500-file repository;
- a PR that costs little in files that cost much: one function appended to each of two
  of torch's largest files (``_inductor/scheduler.py`` and ``_inductor/utils.py``);
- a one-line change in a small repository (``examples/demo_engine``).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import history
from history import WORK, git

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.path.join(ROOT, ".venv", "lib", "python3.11", "site-packages")
TORCH_SUBTREES = ("_inductor", "distributed", "_dynamo", "fx", "nn", "utils", "_functorch", "export")
QUICK_SUBTREES = ("fx", "export")
LIBCST_VERSIONS = ("1.4.0", "1.5.1", "1.6.0", "1.7.0")
SMALL_RANGE, THIRTY_RANGE = ("v1.6.0", "v1.7.0"), ("v1.4.0", "v1.5.1")
SIZES = (20, 1500)
LARGE_FILES = ("torch/_inductor/scheduler.py", "torch/_inductor/utils.py")
# Appended to each large file: a new function with findings, so that telling new
# findings from pre-existing ones has work to do. Its name must not read as test or
# benchmark code, which device-residency rules leave alone.
APPENDED = """


def step_until_nan(model, batch, steps):
    total = 0.0
    for step in range(steps):
        out = model(batch)
        total += out.sum().item()
        if out.isnan().any():
            break
    return total
"""
# Every path is hot, so every rule applies to the large files.
HOT_EVERYWHERE = '[tool.rltrefactor]\nhot-paths = ["**"]\n'
ONE_LINE_FILE = "loopy/worker/model_runner.py"


@dataclass(frozen=True)
class Corpus:
    name: str
    path: str
    files: int
    source: str


@dataclass(frozen=True)
class PrRange:
    name: str
    repo: str
    span: str
    files: int
    source: str


def _python_files(root: str) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", ".git"))
        found += [os.path.relpath(os.path.join(folder, f), root) for f in sorted(files) if f.endswith(".py")]
    return found


def _commit_tree(repo: str, message: str) -> None:
    if not os.path.isdir(os.path.join(repo, ".git")):
        git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)


def _copy_python(source_root: str, relpaths: list[str], dest_root: str) -> None:
    for rel in relpaths:
        target = os.path.join(dest_root, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(source_root, rel), target)


def torch_corpus(quick: bool) -> Corpus:
    import importlib.metadata as md

    subtrees = QUICK_SUBTREES if quick else TORCH_SUBTREES
    version = md.version("torch")
    dest = os.path.join(WORK, "corpus-torch-quick" if quick else "corpus-torch")
    marker = os.path.join(dest, ".git", "bench-complete")
    stamp = f"torch {version}: {' '.join(subtrees)}"
    if not (os.path.exists(marker) and Path(marker).read_text() == stamp):
        shutil.rmtree(dest, ignore_errors=True)
        torch_root = os.path.join(SITE, "torch")
        files = [os.path.join("torch", s, f) for s in subtrees for f in _python_files(os.path.join(torch_root, s))]
        _copy_python(SITE, files, dest)
        _commit_tree(dest, stamp)
        with open(marker, "w") as handle:
            handle.write(stamp)
    return Corpus("torch", dest, len(_python_files(dest)), f"torch {version} ({', '.join(subtrees)})")


def demo_corpus() -> Corpus | None:
    source = os.path.join(ROOT, "examples", "demo_engine")
    if not os.path.isdir(source) or not _python_files(source):
        return None
    dest = os.path.join(WORK, "corpus-demo")
    shutil.rmtree(dest, ignore_errors=True)  # cheap, and the demo changes as it is written
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    _commit_tree(dest, "demo engine")
    return Corpus("demo", dest, len(_python_files(dest)), "examples/demo_engine")


def pr_ranges() -> list[PrRange]:
    """Raises history.RegistryUnavailable when libcst's wheels cannot be downloaded."""
    libcst = history.build_history("libcst", LIBCST_VERSIONS)
    ranges = []
    for name, (base, head) in (("PR 1-3 files", SMALL_RANGE), ("PR 30 files", THIRTY_RANGE)):
        touched = history.touched_python(libcst.repo, base, head)
        ranges.append(PrRange(name, libcst.repo, f"{base}..{head}", len(touched), f"libcst {base}..{head}"))
    return ranges


def size_pair(torch: Corpus) -> list[PrRange]:
    """The same small real change (libcst 1.6.0 -> 1.7.0, one file) in repositories of
    20 and 1,500 Python files; the other files are libcst's and torch's own."""
    libcst = history.build_history("libcst", LIBCST_VERSIONS)
    base, head = SMALL_RANGE
    changed = [t.path for t in history.touched_python(libcst.repo, base, head)]
    filler = [("libcst", p) for p in git(libcst.repo, "ls-files", "*.py").split() if p not in changed]
    filler += [("torch", p) for p in _python_files(torch.path)]
    pairs = []
    for size in SIZES:
        repo = os.path.join(WORK, f"size-{size}")
        marker = os.path.join(repo, ".git", "bench-complete")
        if not os.path.exists(marker):
            _build_size_repo(repo, filler[: size - len(changed)], changed, libcst.repo, torch.path)
            open(marker, "w").close()
        files = len(_python_files(repo))
        pairs.append(PrRange(f"small diff, {files}-file repo", repo, "HEAD~1..HEAD", len(changed), f"libcst {base}..{head}"))
    return pairs


def _write(target: str, text: str) -> None:
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(text)


def _build_size_repo(repo: str, filler: list[tuple[str, str]], changed: list[str], libcst_repo: str, torch_path: str) -> None:
    base, head = SMALL_RANGE
    shutil.rmtree(repo, ignore_errors=True)
    os.makedirs(repo)
    for origin, rel in filler:
        if origin == "torch":
            _write(os.path.join(repo, origin, rel), open(os.path.join(torch_path, rel), encoding="utf-8").read())
        else:
            _write(os.path.join(repo, origin, rel), git(libcst_repo, "show", f"{base}:{rel}"))
    for tag, message in ((base, "base"), (head, "head")):
        for rel in changed:
            _write(os.path.join(repo, "libcst", rel), git(libcst_repo, "show", f"{tag}:{rel}"))
        _commit_tree(repo, message)


def large_file_pr() -> PrRange:
    """Base: two large torch files; head: one function appended to each."""
    import importlib.metadata as md

    version = md.version("torch")
    repo = os.path.join(WORK, "pr-large-files")
    marker = os.path.join(repo, ".git", "bench-complete")
    stamp = f"torch {version}: {' '.join(LARGE_FILES)}\n{APPENDED}"
    if not (os.path.exists(marker) and Path(marker).read_text() == stamp):
        shutil.rmtree(repo, ignore_errors=True)
        _copy_python(SITE, list(LARGE_FILES), repo)
        _write(os.path.join(repo, "pyproject.toml"), HOT_EVERYWHERE)
        _commit_tree(repo, "base: " + stamp)
        for rel in LARGE_FILES:
            with open(os.path.join(repo, rel), "a", encoding="utf-8") as handle:
                handle.write(APPENDED)
        _commit_tree(repo, "head: one function appended to each file")
        with open(marker, "w") as handle:
            handle.write(stamp)
    lines = sum(git(repo, "show", f"HEAD~1:{rel}").count("\n") for rel in LARGE_FILES)
    names = " and ".join(rel.split("/", 1)[1] for rel in LARGE_FILES)
    return PrRange("PR 2 large files", repo, "HEAD~1..HEAD", len(LARGE_FILES),
                   f"torch {version} {names} ({lines:,} lines at the base), one function appended to each; hot-paths everywhere")


def one_line_change() -> PrRange | None:
    """examples/demo_engine with one line added to a function of its model runner."""
    source = os.path.join(ROOT, "examples", "demo_engine")
    target = os.path.join(source, ONE_LINE_FILE)
    if not os.path.exists(target):
        return None
    repo = os.path.join(WORK, "pr-one-line")
    shutil.rmtree(repo, ignore_errors=True)  # cheap, and the demo changes as it is written
    shutil.copytree(source, repo, ignore=shutil.ignore_patterns("__pycache__", ".git"))
    _commit_tree(repo, "base: demo engine")
    text = Path(target).read_text(encoding="utf-8")
    at = text.index("\n        return ") if "\n        return " in text else text.index("\n    return ")
    indent = text[at + 1 : text.index("return", at)]
    _write(os.path.join(repo, ONE_LINE_FILE), text[:at] + f"\n{indent}steps_done = 1" + text[at:])
    _commit_tree(repo, "head: one line")
    files = len(_python_files(repo))
    return PrRange(f"1-line change, {files}-file repo", repo, "HEAD~1..HEAD", 1, f"examples/demo_engine: one line added to {ONE_LINE_FILE}")
