"""The call index: where each function of the repository runs, proven by who calls it.

A stage of its own, built once per review over every Python file of the repository at
the reviewed revision. Each file's facts (``callfacts``) are cached on disk by blob hash,
so a review reads and parses only the files whose content the cache has not seen.
The index resolves calls across files (``calllinks``), then gives each function a
context with the call chain as evidence:

- *per-step* when a per-step root reaches it: ``forward``/``__call__`` of a class, a
  step/decode/execute name (``hot-functions``), a compiled or inference-mode function,
  the body of a long-running loop (``while True:`` that awaits or reads a queue), a
  closure returned by a cached factory (it runs on every call of what was built);
- *one-time* or *offline* when it is one by construction (``__init__``, a cached
  function, a file under ``test-paths``/``cold-paths``), or when only such code calls
  it, so far as every call in the repository shows;
- otherwise no verdict: the per-file execution map keeps its own.

A name word (``dummy``, ``warmup``, ``test``) is evidence of last resort: a call chain
from a per-step root outranks it. Beside contexts, the index knows which functions
return host tensors only (``torch.from_numpy``, ``.cpu()``, ...), so that ``x = f()``
in another module is a host value.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterable, Mapping

from .cache import code_stamp
from .callfacts import FileFacts, facts_from_json, facts_to_json, read_facts
from .calllinks import Contexts, Repository, classify, host_returning
from .config import Config
from .globs import matches
from .gitio import run
from .errors import GitError
from .execution import names_for
from .syntax import parse_fresh
from .types import ChangeSet

_FORMAT = "1"
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".mypy_cache"})
_MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class FileContexts:
    """The index's verdicts for one file: what the per-file execution map is told."""

    path: str
    functions: tuple[tuple[str, str, str], ...]  # (qualname, kind, evidence); functions with a verdict only
    host_calls: frozenset[str]  # callees as written in the file that return host tensors only

    @cached_property
    def _by_name(self) -> dict[str, tuple[str, str]]:
        return {qualname: (kind, evidence) for qualname, kind, evidence in self.functions}

    def verdict(self, qualname: str) -> tuple[str, str] | None:
        """(kind, evidence) the index proves for the function, or None."""
        return self._by_name.get(qualname)

    @cached_property
    def digest(self) -> str:
        """Changes whenever what the file is told does (a result-cache key part)."""
        return hashlib.sha256(repr((self.functions, sorted(self.host_calls))).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CallIndex:
    files: Mapping[str, FileContexts] = field(default_factory=dict)
    parsed: int = 0  # files whose facts were read from source this time, not from the cache
    indexed: int = 0  # Python files the index covers

    def for_file(self, path: str) -> FileContexts | None:
        return self.files.get(path)


def build_index(change: ChangeSet, config: Config, cache_dir: str | None) -> CallIndex:
    """The index of the repository ``change`` is read from, at its head revision.

    ``cache_dir`` None: no disk cache. A repository that cannot be listed gives an
    empty index (every function keeps the per-file verdict)."""
    root = change.repo_root
    if root is None:
        return CallIndex()
    try:
        blobs = list_blobs(root, change.head.kind, change.head.ref)
    except GitError:
        return CallIndex()
    store = _FactsCache(cache_dir) if cache_dir is not None else None
    # The same files and settings give the same index: a re-run reads it whole.
    key = hashlib.sha256(repr((sorted(blobs.items()), config.hot_functions, config.cold_functions, config.names, config.test_paths, config.cold_paths)).encode()).hexdigest()
    known = store.get_index(key) if store is not None else None
    if known is not None:
        return known
    facts, parsed = load_facts(root, blobs, store)
    index = index_facts(facts, config, parsed=parsed)
    if store is not None:
        store.put_index(key, index)
    return index


def index_facts(facts: Mapping[str, FileFacts], config: Config, *, parsed: int = 0) -> CallIndex:
    """The index over ``facts`` by repository-relative path."""
    offline_files = {p for p in facts if matches(p, config.test_paths) or matches(p, config.cold_paths)}
    repository = Repository(facts)
    contexts = classify(repository, names_for(config.names), (config.hot_functions, config.cold_functions), frozenset(offline_files))
    host = host_returning(repository)
    return CallIndex(_slices(repository, contexts, host), parsed=parsed, indexed=len(facts))


def _slices(repository: Repository, contexts: Contexts, host: frozenset[str]) -> dict[str, FileContexts]:
    by_path: dict[str, list[tuple[str, str, str]]] = {}
    for function_id, (kind, evidence) in sorted(contexts.items()):
        path, _, qualname = function_id.partition("::")
        by_path.setdefault(path, []).append((qualname, kind, evidence))
    host_calls: dict[str, set[str]] = {}
    for function_id, callee, target in repository.resolved_calls():
        if target in host:
            host_calls.setdefault(function_id.partition("::")[0], set()).add(callee)
    return {
        path: FileContexts(path, tuple(by_path.get(path, ())), frozenset(host_calls.get(path, ())))
        for path in set(by_path) | set(host_calls)
    }


# --- What the revision holds: path -> blob id ------------------------------------------------


def list_blobs(root: str, kind: str, ref: str | None) -> dict[str, str]:
    """Python files of the repository at ``kind`` ("git" at ``ref``, "index" or
    "worktree"), each with its git blob id (the hash of its content)."""
    if kind == "git" and ref:
        return _tree_blobs(run(root, "ls-tree", "-r", "-z", "--full-tree", ref), "\t")
    if not _is_git(root):
        return {path: blob_id(data) for path, data in _walked(root)}
    staged = _index_blobs(run(root, "ls-files", "-s", "-z"))
    if kind == "index":
        return staged
    changed = run(root, "diff", "--name-only", "-z").decode("utf-8", "surrogateescape").split("\0")
    untracked = run(root, "ls-files", "--others", "--exclude-standard", "-z").decode("utf-8", "surrogateescape").split("\0")
    for path in {p for p in changed + untracked if _is_python(p)}:
        data = _read_file(root, path)
        if data is None:
            staged.pop(path, None)
        else:
            staged[path] = blob_id(data)
    return staged


def blob_id(data: bytes) -> str:
    """The id git gives a blob with this content."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _tree_blobs(listing: bytes, separator: str) -> dict[str, str]:
    blobs: dict[str, str] = {}
    for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
        header, _, path = entry.partition(separator)
        fields = header.split()
        if len(fields) >= 3 and fields[1] == "blob" and not fields[0].startswith("120") and _is_python(path):
            blobs[path] = fields[2]
    return blobs


def _index_blobs(listing: bytes) -> dict[str, str]:
    blobs: dict[str, str] = {}
    for entry in listing.decode("utf-8", "surrogateescape").split("\0"):
        header, _, path = entry.partition("\t")
        fields = header.split()
        if len(fields) >= 2 and _is_python(path) and not fields[0].startswith("120"):  # not a symlink
            blobs[path] = fields[1]
    return blobs


def _is_python(path: str) -> bool:
    return path.endswith(".py")


def _is_git(root: str) -> bool:
    try:
        return run(root, "rev-parse", "--is-inside-work-tree").strip() == b"true"
    except GitError:
        return False


def _read_file(root: str, path: str) -> bytes | None:
    try:
        with open(os.path.join(root, path), "rb") as handle:
            return handle.read(_MAX_BYTES + 1)
    except OSError:
        return None


def _walked(root: str) -> Iterable[tuple[str, bytes]]:
    for directory, names, files in os.walk(root):
        names[:] = sorted(n for n in names if n not in _SKIP_DIRS and not n.startswith("."))
        for name in sorted(files):
            if _is_python(name):
                path = os.path.relpath(os.path.join(directory, name), root).replace(os.sep, "/")
                data = _read_file(root, path)
                if data is not None:
                    yield path, data


# --- Facts by blob, from the cache or parsed -------------------------------------------------


def load_facts(root: str, blobs: Mapping[str, str], store: _FactsCache | None) -> tuple[dict[str, FileFacts], int]:
    """Facts of every path, and how many files had to be parsed."""
    facts: dict[str, FileFacts] = {}
    missing: dict[str, str] = {}
    by_blob: dict[str, FileFacts] = {}
    for path, blob in blobs.items():
        found = by_blob.get(blob) or (store.get(blob) if store is not None else None)
        if found is None:
            missing[path] = blob
        else:
            facts[path] = by_blob[blob] = found
    contents = _contents(root, missing)
    for path, blob in missing.items():
        data = contents.get(path)
        if data is None or len(data) > _MAX_BYTES or b"\0" in data[:8192]:
            continue
        if blob not in by_blob:
            by_blob[blob] = read_facts(parse_fresh(data.decode("utf-8", "replace")))
            if store is not None:
                store.put(blob, by_blob[blob])
        facts[path] = by_blob[blob]
    return facts, len({blob for blob in missing.values() if blob in by_blob})


def _contents(root: str, missing: Mapping[str, str]) -> dict[str, bytes]:
    """Content of each missing blob: from git's object store, else from the file on disk."""
    if not missing:
        return {}
    found: dict[str, bytes] = {}
    try:
        out = run(root, "cat-file", "--batch", input_bytes="".join(f"{b}\n" for b in missing.values()).encode())
    except GitError:
        out = b""
    position = 0
    for path in missing:
        if position >= len(out):
            break
        header_end = out.index(b"\n", position)
        header = out[position:header_end].split()
        position = header_end + 1
        if len(header) >= 3 and header[1] == b"blob":
            size = int(header[2])
            found[path] = out[position : position + size]
            position += size + 1
    for path in missing.keys() - found.keys():  # worktree content git has not stored
        data = _read_file(root, path)
        if data is not None:
            found[path] = data
    return found


class _FactsCache:
    """One JSON document per blob, under the tool's cache directory; written to a
    temporary file and renamed into place, so a reader never sees half an entry."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory) / f"callindex-v{_FORMAT}" / code_stamp()[:16]

    def _entry(self, blob: str) -> Path:
        return self.directory / blob[:2] / f"{blob}.json"

    def get(self, blob: str) -> FileFacts | None:
        try:
            with open(self._entry(blob), encoding="utf-8") as handle:
                return facts_from_json(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or unreadable: parse again

    def put(self, blob: str, facts: FileFacts) -> None:
        _write(self._entry(blob), facts_to_json(facts))

    def get_index(self, key: str) -> CallIndex | None:
        try:
            with open(self.directory / "index" / f"{key}.json", encoding="utf-8") as handle:
                data = json.load(handle)
            files = {
                path: FileContexts(path, tuple((str(q), str(k), str(e)) for q, k, e in functions), frozenset(map(str, calls)))
                for path, (functions, calls) in data["files"].items()
            }
            return CallIndex(files, parsed=0, indexed=int(data["indexed"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put_index(self, key: str, index: CallIndex) -> None:
        files = {path: [told.functions, sorted(told.host_calls)] for path, told in index.files.items()}
        _write(self.directory / "index" / f"{key}.json", {"indexed": index.indexed, "files": files})


def _write(entry: Path, document: object) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, separators=(",", ":"))
        os.replace(temp, entry)
    except OSError:
        return  # a cache that cannot be written only costs speed
