"""The call index: where each function of the repository runs, proven by who calls it.

A stage of its own, built once per review over every Python file of the repository at
the reviewed revision, told to the reviewed files. Nothing is parsed up front: the text
of every file is searched for the names on the call chains that reach the reviewed
functions (``texts``: which files may define or call a name), and only the files the
search names are parsed (``calls.contexts``: contexts are worked out from the callee's
side, by name, never by resolving every call of the repository). Each file's facts are
cached on disk by blob hash. Each function gets a
context with the call chain as evidence:

- *per-step* when a per-step root reaches it: ``forward``/``__call__`` of a class, a
  step/decode/execute name (``hot-functions``), a compiled function,
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
import re
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Collection, Iterable, Mapping

from ... import code_stamp
from .contexts import CallContexts
from .facts import EMPTY_FACTS, FileFacts, facts_from_json, facts_to_json, read_facts
from .fields import HostFields
from .links import Repository
from .texts import RevisionTexts
from ...config import Config
from ...library.globs import matches
from ...change.git import run
from ...errors import GitError
from ...config import names_for, protocols_for
from ...source.syntax import parse_fresh, parse_tree
from ...types import ChangeSet

if TYPE_CHECKING:
    from tree_sitter import Tree

_FORMAT = "26"
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".venv", "venv", "__pycache__", "node_modules", ".tox", ".mypy_cache"})
_MAX_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class FileContexts:
    """The index's verdicts for one file: what the per-file execution map is told."""

    path: str
    functions: tuple[tuple[str, str, str], ...]  # (qualname, kind, evidence); functions with a verdict only
    host_calls: frozenset[str]  # callees as written in the functions told that return host tensors only
    host_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) every caller passes a host tensor
    host_fields: frozenset[str] = frozenset()  # input fields the repository declares host-side, every file alike
    passed_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) every caller passes, never None
    withheld_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) no per-step caller passes
    omitted_params: frozenset[tuple[str, str]] = frozenset()  # (qualname, parameter) a per-step caller leaves out
    # (callee as written, parameter, position or -1) of calls returning where that argument lives
    following_calls: frozenset[tuple[str, str, int]] = frozenset()
    # ``module.Class.field`` of each dataclass field the file reads that holds host tensors only (``fields``)
    host_class_fields: frozenset[str] = frozenset()
    acknowledged: frozenset[str] = frozenset()  # qualnames run only where synchronizations are allowed

    @cached_property
    def _by_name(self) -> dict[str, tuple[str, str]]:
        return {qualname: (kind, evidence) for qualname, kind, evidence in self.functions}

    def verdict(self, qualname: str) -> tuple[str, str] | None:
        """(kind, evidence) the index proves for the function, or None."""
        return self._by_name.get(qualname)

    @cached_property
    def digest(self) -> str:
        """Changes whenever what the file is told does (a result-cache key part)."""
        return hashlib.sha256(repr((self.functions, sorted(self.host_calls), sorted(self.host_params),
                                    sorted(self.host_fields), sorted(self.passed_params),
                                    sorted(self.withheld_params), sorted(self.following_calls),
                                    sorted(self.host_class_fields), sorted(self.omitted_params),
                                    sorted(self.acknowledged))).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CallIndex:
    files: Mapping[str, FileContexts] = field(default_factory=dict)
    parsed: int = 0  # files whose facts were read from source this time, not from the cache
    indexed: int = 0  # Python files the index covers

    def for_file(self, path: str) -> FileContexts | None:
        return self.files.get(path)


def build_index(
    change: ChangeSet, config: Config, cache_dir: str | None, paths: Iterable[str] | None = None,
    lines: Mapping[str, Collection[int]] | None = None, tree_of: Callable[[str, str], Tree | None] | None = None,
) -> CallIndex:
    """The index of the repository ``change`` is read from, at its head revision, told
    to ``paths`` (None: every Python file of the repository): about the functions that
    hold one of the path's ``lines`` (None, or a path not in it: every function).

    ``tree_of(path, text)``: the reviewer's own parse of a reviewed file, when it has one,
    so that the file is parsed once. ``cache_dir`` None: no disk cache. A repository that cannot be listed gives an
    empty index (every function keeps the per-file verdict)."""
    root = change.repo_root
    if root is None:
        return CallIndex()
    try:
        blobs = list_blobs(root, change.head.kind, change.head.ref)
    except GitError:
        return CallIndex()
    told = sorted(blobs) if paths is None else sorted(set(paths) & blobs.keys())
    gates = names_for(config.names).regex("cold-conditions")
    allowing = names_for(config.names).regex("sync-allowing-contexts")
    store = _FactsCache(cache_dir, gates, allowing) if cache_dir is not None else None
    # The same files, settings and questions give the same index: a re-run reads it whole.
    asked = {path: sorted(lines[path]) for path in told if path in lines} if lines is not None else {}
    key = hashlib.sha256(repr((sorted(blobs.items()), told, sorted(asked.items()), config.hot_functions, config.cold_functions, config.names, config.protocols, config.test_paths, config.cold_paths)).encode()).hexdigest()
    known = store.get_index(key) if store is not None else None
    if known is not None:
        return known
    facts = _Facts(root, blobs, store, told if paths is not None else (), tree_of, gates, allowing)
    index = _told(Repository(facts.texts(), facts.load, _offline_paths(config)), config, told, asked)
    index = CallIndex(index.files, parsed=facts.parsed, indexed=len(blobs))
    if store is not None:
        store.put_index(key, index)
    return index


def _told(repository: Repository, config: Config, paths: Iterable[str], lines: Mapping[str, Collection[int]] | None = None) -> CallIndex:
    contexts = CallContexts(repository, names_for(config.names), (config.hot_functions, config.cold_functions), _offline_paths(config),
                            protocols_for(config.protocols))
    files: dict[str, FileContexts] = {}
    fields = repository.host_fields(names_for(config.names).entry("host-field-declarations").values) if paths else frozenset()
    backends = names_for(config.names).entry("host-backend-paths").values
    class_fields = HostFields(repository, lambda path: matches(path, backends))
    for path in paths:
        verdicts = []
        asked = sorted(_asked(repository, path, (lines or {}).get(path)))
        for function_id in asked:
            verdict = contexts.context(function_id)
            if verdict is not None:
                verdicts.append((function_id.partition("::")[2], *verdict))
        host_params = {(f.partition("::")[2], p) for f in asked for p in contexts.host_parameters(f)}
        passed = {(f.partition("::")[2], p) for f in asked for p in contexts.passed_parameters(f)}
        withheld = {(f.partition("::")[2], p) for f in asked for p in contexts.withheld_parameters(f)}
        omitted = {(f.partition("::")[2], p) for f in asked for p in contexts.omitted_parameters(f)}
        acknowledged = frozenset(f.partition("::")[2] for f in asked if contexts.acknowledged(f))
        files[path] = FileContexts(path, tuple(verdicts), contexts.host_calls(asked), frozenset(host_params), fields,
                                   frozenset(passed), frozenset(withheld), frozenset(omitted),
                                   contexts.following_calls(asked), class_fields.read_in(path), acknowledged)
    return CallIndex(files, indexed=len(repository.paths))


def _offline_paths(config: Config) -> Callable[[str], bool]:
    """Whether a path is under ``test-paths`` or ``cold-paths``."""
    return lambda path: matches(path, config.test_paths) or matches(path, config.cold_paths)


def _asked(repository: Repository, path: str, lines: Collection[int] | None) -> list[str]:
    """The functions of ``path`` that hold one of ``lines`` (an enclosing function holds
    the lines of its nested ones); every function where ``lines`` is None."""
    found = []
    for function in repository.facts(path).functions:
        if lines is None or any(function.start_line <= line <= function.end_line for line in lines):
            found.append(f"{path}::{function.qualname}")
    return found


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


class _Facts:
    """The text of every path, read up front (``RevisionTexts``: nothing is parsed), and a
    path's facts when asked: from the cache by blob, else parsed from the blob's content
    (and cached). Files of the same content are read once."""

    def __init__(
        self, root: str, blobs: Mapping[str, str], store: _FactsCache | None, reviewed: Iterable[str] = (),
        tree_of: Callable[[str, str], Tree | None] | None = None, gates: re.Pattern[str] | None = None,
        allowing: re.Pattern[str] | None = None,
    ) -> None:
        self.root, self.blobs, self.store = root, blobs, store
        self.gates = gates  # ``cold-conditions``: calls under them are ``FunctionFacts.gated_calls``
        self.allowing = allowing  # ``sync-allowing-contexts``: calls in them are ``FunctionFacts.allowed_calls``
        self.reviewed = frozenset(reviewed)  # the reviewer parses them too: their trees are shared
        self.tree_of = tree_of
        self.parsed = 0  # distinct blobs parsed this time
        self._by_blob: dict[str, FileFacts] = {}
        self._contents: dict[str, bytes] = {}

    def texts(self) -> RevisionTexts:
        self._contents = _contents(self.root, self.blobs, _unmodified_on_disk(self.root))
        return RevisionTexts({path: self._contents.get(path) for path in self.blobs})

    def load(self, path: str) -> FileFacts:
        blob = self.blobs[path]
        found = self._by_blob.get(blob) or (self.store.get(blob) if self.store is not None else None)
        if found is None:
            self._parse({path: blob})
            return self._by_blob[blob]
        self._by_blob[blob] = found
        return found

    def _parse(self, missing: Mapping[str, str]) -> None:
        unread = {path: blob for path, blob in missing.items() if path not in self._contents}
        contents = {**{path: self._contents[path] for path in missing if path in self._contents}, **_contents(self.root, unread)}
        for path, blob in missing.items():
            if blob in self._by_blob:
                continue
            data = contents.get(path)
            if data is None or len(data) > _MAX_BYTES or b"\0" in data[:8192]:
                self._by_blob[blob] = EMPTY_FACTS  # unreadable, too large or binary: defines nothing
                continue
            text = data.decode("utf-8", "replace")
            self._by_blob[blob] = read_facts(self._tree(path, text), self.gates, self.allowing)
            self.parsed += 1
            if self.store is not None:
                self.store.put(blob, self._by_blob[blob])


    def _tree(self, path: str, text: str) -> Tree:
        if path not in self.reviewed:
            return parse_fresh(text)
        shared = self.tree_of(path, text) if self.tree_of is not None else None
        return shared if shared is not None else parse_tree(text)


def _contents(root: str, missing: Mapping[str, str], on_disk: Mapping[str, str] | None = None) -> dict[str, bytes]:
    """Content of each missing blob: from the working tree where ``on_disk`` (path ->
    blob id of files whose working-tree content is that blob) says the file holds that
    very blob, else from git's object store, else from the file on disk."""
    if not missing:
        return {}
    found: dict[str, bytes] = {}
    for path, blob in missing.items():
        if on_disk is not None and on_disk.get(path) == blob:
            data = _read_file(root, path)
            if data is not None:
                found[path] = data
    stored = {path: blob for path, blob in missing.items() if path not in found}
    try:
        out = run(root, "cat-file", "--batch", input_bytes="".join(f"{b}\n" for b in stored.values()).encode()) if stored else b""
    except GitError:
        out = b""
    position = 0
    for path in stored:
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


def _unmodified_on_disk(root: str) -> dict[str, str]:
    """Path -> blob id of the tracked Python files whose working-tree content is the
    index's blob (``git diff`` sees no change): reading those files from disk gives the
    blob's bytes, several times faster than inflating it from the object store."""
    try:
        staged = _index_blobs(run(root, "ls-files", "-s", "-z"))
        changed = run(root, "diff", "--name-only", "-z").decode("utf-8", "surrogateescape").split("\0")
    except GitError:
        return {}
    for path in changed:
        staged.pop(path, None)
    return staged


class _FactsCache:
    """One JSON document per blob, under the tool's cache directory; written to a
    temporary file and renamed into place, so a reader never sees half an entry."""

    def __init__(self, directory: str, gates: re.Pattern[str] | None = None, allowing: re.Pattern[str] | None = None) -> None:
        # Facts depend on the names they were read with (a configuration may change them).
        said = hashlib.sha256(repr([p.pattern if p is not None else "" for p in (gates, allowing)]).encode()).hexdigest()[:8]
        self.directory = Path(directory) / f"callindex-v{_FORMAT}" / f"{code_stamp()[:16]}-{said}"

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
                path: FileContexts(path, tuple((str(q), str(k), str(e)) for q, k, e in functions), frozenset(map(str, calls)),
                                   frozenset((str(q), str(p)) for q, p in params), frozenset(map(str, fields)),
                                   frozenset((str(q), str(p)) for q, p in passed),
                                   frozenset((str(q), str(p)) for q, p in withheld),
                                   frozenset((str(q), str(p)) for q, p in omitted),
                                   frozenset((str(c), str(p), int(i)) for c, p, i in following),
                                   frozenset(map(str, class_fields)), frozenset(map(str, acknowledged)))
                for path, (functions, calls, params, fields, passed, withheld, omitted, following, class_fields, acknowledged)
                in data["files"].items()
            }
            return CallIndex(files, parsed=0, indexed=int(data["indexed"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put_index(self, key: str, index: CallIndex) -> None:
        files = {path: [told.functions, sorted(told.host_calls), sorted(told.host_params), sorted(told.host_fields),
                        sorted(told.passed_params), sorted(told.withheld_params), sorted(told.omitted_params),
                        sorted(told.following_calls),
                        sorted(told.host_class_fields), sorted(told.acknowledged)]
                 for path, told in index.files.items()}
        _write(self.directory / "index" / f"{key}.json", {"indexed": index.indexed, "files": files})


def _write(entry: Path, document: object) -> None:
    _write_bytes(entry, json.dumps(document, separators=(",", ":")).encode())


def _write_bytes(entry: Path, data: bytes) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, entry)
    except OSError:
        return  # a cache that cannot be written only costs speed


def read_blobs(root: str, blobs: Mapping[str, str]) -> dict[str, bytes]:
    """Path -> content of each of ``blobs`` (``list_blobs``), read the cheapest way."""
    return _contents(root, blobs, _unmodified_on_disk(root))
