"""The one owner of the type engine: pyrefly's language server, asked what a value is.

What a value is (an ``ndarray``, a ``list``, a ``Tensor``, which class) is a question for a
type engine reading the whole repository, not for the value's name. pyrefly answers it:
its language server is started once per process, in the reviewed project's environment
(``python`` is the interpreter whose site-packages hold ``numpy`` and ``torch``: by
default the one running the review), and asked for the hover text at a position; the
type is read off that text.

Invariants:
- An answer is a type as the engine prints it, or ``None``: unknown. Unknown is never
  proof of anything; a caller treats it as it treated a value before the engine existed.
- The engine never stops a review. Not installed, crashed, or out of time: it turns off
  for the rest of the process, and ``unavailable`` says why in one line.
- The file asked about is sent with its text at the reviewed revision; the other modules
  are read by the engine from the working tree.
- Answers are kept on disk by file content and the repository's Python files
  (``repository_stamp``), so a warm review asks the engine nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import IO, Any

from ..config import Config

ENGINE = "pyrefly"
# Seconds for the first answer in a file (the engine checks it and what it imports), for
# each later one, and for the whole process: past the budget the engine turns off. The
# budget grows with the files a review reads (``budget_for``), so that a full scan of a
# large repository is not read partly without the engine, depending on the machine's load.
FIRST_ANSWER_S = 60.0
LATER_ANSWER_S = 10.0
PROCESS_BUDGET_S = 300.0
BUDGET_PER_FILE_S = 0.2
# pyrefly's own settings for code no pyrefly configuration covers: infer the return types
# of unannotated functions, as the review needs them.
_SETTINGS = {"pyrefly": {"typeCheckingMode": "default", "displayTypeErrors": "force-off"}}
# The files of a change the engine starts on before matching (``TypeEngine.warm``): enough
# for a PR, few enough that a large change does not queue all its checking ahead of the
# first question.
WARMED_FILES = 8
_HOVER_TYPE = re.compile(r"^\((?:variable|attribute|parameter|property)\) [^:]+: (?P<type>.+)$")
_HOVER_CALLABLE = re.compile(r"^\((?:function|method)\) [^:]+: def [\w.]+\(")


@dataclass
class TypeEngine:
    """pyrefly over its language server, for one repository; answers cached on disk."""

    root: str
    python: str = sys.executable
    cache_dir: str | None = None
    executable: str | None = None  # when not given: the one installed with rltrefactor (``_find_executable``)
    unavailable: str | None = None  # why the engine is off, one line; None while it runs
    questions: int = 0
    _server: "_Server | None" = field(default=None, repr=False)
    _pid: int = 0
    _opened: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)  # uri -> (version, hash of its text)
    _cache: dict[str, dict[str, str | None]] = field(default_factory=dict, repr=False)
    _stamp: str | None = None
    _spent_s: float = 0.0
    budget_s: float = PROCESS_BUDGET_S  # seconds of questions in one process (``budget_for``)

    def type_at(self, path: str, text: str, line: int, column: int) -> str | None:
        """The type of the expression whose name starts at ``line`` (1-based) and ``column``
        (0-based) of ``path`` (relative to the root, holding ``text``), or ``None``."""
        key = f"{line}:{column}"
        answers = self._answers(path, text)
        if key in answers:
            return answers[key]
        if self.unavailable is not None:
            return None
        answer = self._ask(path, text, line, column)
        if self.unavailable is None:  # an engine that failed mid-question has no answer to keep
            answers[key] = answer
            self._save(path, text, answers)
        return answer

    def warm(self, path: str, text: str) -> None:
        """Have the engine start checking ``path`` now, while the review parses and
        matches: a question is sent and its answer left to arrive (a later question reads
        past it). The first answer in a file costs most of what the engine spends on it."""
        if self.unavailable is not None:
            return
        try:
            server = self._running()
            uri = _uri(os.path.join(self.root, path))
            if uri in self._opened:
                return
            server.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": text}})
            self._opened[uri] = (1, hash(text))
            server.send_request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})
        except _EngineError as exc:
            self.turn_off(str(exc))

    def check(self) -> None:
        """Turn the engine off at once where it is not installed, or the project's
        interpreter is not there, before any question."""
        if not os.access(self.python, os.X_OK):
            self.unavailable = f"the project's python {self.python} is not an executable file"
        elif (self.executable or _find_executable(self.python)) is None:
            self.unavailable = f"{ENGINE} is not installed in the environment of {self.python}"

    def cache_key(self) -> str:
        """What the answers of this engine depend on besides a file's own text."""
        if self.unavailable is not None:
            return f"{ENGINE} off"
        executable = self.executable or _find_executable(self.python)
        if self._stamp is None:
            self._stamp = repository_stamp(self.root)
        return f"{ENGINE} {_engine_version(executable)} {self.python} {self._stamp}"

    def close(self) -> None:
        if self._server is not None and self._pid == os.getpid():
            self._server.stop()
        self._server = None

    def _ask(self, path: str, text: str, line: int, column: int) -> str | None:
        started = time.perf_counter()
        try:
            server = self._running()
            uri = _uri(os.path.join(self.root, path))
            opened = self._opened.get(uri)
            first = opened is None or opened[1] != hash(text)
            if opened is None:
                server.notify("textDocument/didOpen", {"textDocument": {
                    "uri": uri, "languageId": "python", "version": 1, "text": text}})
            elif first:  # another version of the file (its base, for pre-existing findings)
                server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": opened[0] + 1},
                                                         "contentChanges": [{"text": text}]})
            self._opened[uri] = ((opened[0] + 1) if opened else 1, hash(text))
            reply = server.request("textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": line - 1, "character": _utf16(text, line, column)},
            }, FIRST_ANSWER_S if first else LATER_ANSWER_S)
            self.questions += 1
            return hover_type(reply)
        except _EngineError as exc:
            self.turn_off(str(exc))
            return None
        finally:
            self._spent_s += time.perf_counter() - started
            if self.unavailable is None and self._spent_s > self.budget_s:
                self.turn_off(f"out of time ({self.budget_s:.0f} s of questions in one review)")

    def _running(self) -> "_Server":
        if self._server is not None and self._pid == os.getpid():
            return self._server
        self._server, self._pid, self._opened = None, os.getpid(), {}  # a forked worker starts its own
        executable = self.executable or _find_executable(self.python)
        if executable is None:
            raise _EngineError(f"{ENGINE} is not installed in the environment of {self.python}")
        self._server = _Server.start(executable, self.root, self.python)
        return self._server

    def turn_off(self, why: str) -> None:
        """No more questions: the review goes on from the code alone, and says ``why``."""
        self.unavailable = why
        self.close()

    def _answers(self, path: str, text: str) -> dict[str, str | None]:
        key = self._file_key(path, text)
        if key not in self._cache:
            self._cache[key] = self._load(key)
        return self._cache[key]

    def _file_key(self, path: str, text: str) -> str:
        if self._stamp is None:
            self._stamp = repository_stamp(self.root)
        digest = hashlib.sha256()
        for part in (ENGINE, _engine_version(self.executable or _find_executable(self.python)), self.python,
                     self._stamp, path, text):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        return digest.hexdigest()

    def _cache_file(self, key: str) -> str | None:
        return os.path.join(self.cache_dir, "types", key[:2], f"{key}.json") if self.cache_dir else None

    def _load(self, key: str) -> dict[str, str | None]:
        where = self._cache_file(key)
        try:
            with open(where or "", encoding="utf-8") as handle:
                loaded = json.load(handle)
            return {str(k): (v if isinstance(v, str) else None) for k, v in loaded.items()}
        except (OSError, ValueError, AttributeError):
            return {}

    def _save(self, path: str, text: str, answers: dict[str, str | None]) -> None:
        where = self._cache_file(self._file_key(path, text))
        if where is None:
            return
        try:
            os.makedirs(os.path.dirname(where), exist_ok=True)
            temporary = f"{where}.{os.getpid()}.tmp"
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(answers, handle)
            os.replace(temporary, where)
        except OSError:
            pass  # a cache that cannot be written only costs the next run its questions


def budget_for(files: int) -> float:
    """Seconds of questions one process may spend in a review of ``files`` files."""
    return max(PROCESS_BUDGET_S, BUDGET_PER_FILE_S * files)


def engine_for(root: str, config: Config, cache_dir: str | None) -> TypeEngine | None:
    """The type engine of a review of ``root``, checked; None where the configuration turns it off."""
    if not config.type_engine:
        return None
    engine = TypeEngine(root, python=config.type_engine_python or sys.executable, cache_dir=cache_dir)
    engine.check()
    return engine


def off_warning(engine: TypeEngine | None) -> tuple[str, ...]:
    """One line when the engine could not answer: the review went on without it."""
    if engine is None or engine.unavailable is None:
        return ()
    return (f"type engine off: {engine.unavailable}; where values live was read from the code alone "
            "(install rltrefactor's dependencies in the project's environment, or set type-engine = false)",)


def hover_type(reply: Any) -> str | None:
    """The type in a hover reply: a variable's, attribute's or parameter's type, or the
    return type of a function or method; ``None`` when the reply names none or ``Unknown``."""
    contents = (reply or {}).get("contents") if isinstance(reply, dict) else None
    value = contents.get("value", "") if isinstance(contents, dict) else ""
    code = "\n".join(line for line in value.splitlines() if not line.startswith("```")).strip()
    first = code.splitlines()[0] if code else ""
    found = _HOVER_TYPE.match(first)
    answer = found.group("type") if found else _return_type(code)
    answer = " ".join(answer.split()) if answer else None
    return None if answer in (None, "", "Unknown", "Any") else answer


def _return_type(code: str) -> str | None:
    """The return annotation of the first signature in a function's or method's hover."""
    opened = _HOVER_CALLABLE.match(code)
    if opened is None:
        return None
    depth = 1
    for index in range(opened.end(), len(code)):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(code[index], 0)
        if depth == 0:
            rest = code[index + 1:]
            if not rest.startswith(" -> "):
                return None
            annotation = rest[4:].split("\n", 1)[0]
            return annotation.removesuffix(": ...").removesuffix(":")
    return None


def repository_stamp(root: str) -> str:
    """What the repository's Python files are now: an answer about one file may depend on
    any of them. In a git repository, the index's blob of each (``git ls-files -s``) and the
    size and modification time of each one the working tree changes or adds (``git
    status``): git reads its own stat cache, far faster than a stat of every file here."""
    digest = hashlib.sha256()
    pathspec = ["--", "*.py", "*.pyi"]
    try:
        staged = _git(root, "ls-files", "-s", "-z", *pathspec)
        status = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", *pathspec)
    except (OSError, subprocess.SubprocessError):  # not a git repository: every Python file under the root
        staged, touched = b"", _walked(root)
    else:
        # ``XY path`` entries; a rename's source follows as an entry of its own, which is harmless here
        touched = [entry[3:] for entry in status.split(b"\0") if len(entry) > 3]
    digest.update(staged)
    for name in sorted(set(touched)):
        try:
            found = os.stat(os.path.join(os.fsencode(root), name))
        except OSError:
            digest.update(name + b"\0gone\0")
            continue
        digest.update(name + f"\0{found.st_size}\0{found.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _git(root: str, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True, timeout=30).stdout


def _walked(root: str) -> list[bytes]:
    """The Python files under ``root``, hidden folders left out, relative to it."""
    found = []
    for top, folders, names in os.walk(root):
        folders[:] = [folder for folder in folders if not folder.startswith(".")]
        found += [os.fsencode(os.path.relpath(os.path.join(top, n), root)) for n in names if n.endswith((".py", ".pyi"))]
    return found


def _find_executable(python: str) -> str | None:
    """The engine installed with rltrefactor (the pinned one), else beside the project's
    interpreter, else on ``PATH``."""
    for folder in dict.fromkeys((os.path.dirname(sys.executable), os.path.dirname(python))):
        beside = os.path.join(folder, ENGINE)
        if os.access(beside, os.X_OK):
            return beside
    return shutil.which(ENGINE)


_VERSIONS: dict[str, str] = {}


def _engine_version(executable: str | None) -> str:
    if executable is None:
        return "none"
    if executable not in _VERSIONS:
        try:
            _VERSIONS[executable] = subprocess.run(
                [executable, "--version"], capture_output=True, text=True, timeout=30, check=False
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            _VERSIONS[executable] = "unknown"
    return _VERSIONS[executable]


def _uri(path: str) -> str:
    from pathlib import Path

    return Path(os.path.abspath(path)).as_uri()


def _utf16(text: str, line: int, column: int) -> int:
    """The UTF-16 offset the protocol counts, of ``column`` (code points) on ``line``."""
    lines = text.splitlines()
    row = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(row[:column].encode("utf-16-le")) // 2


class _EngineError(Exception):
    """The engine cannot answer: the message says why, in one line."""


class _Server:
    """A language server over stdio: JSON-RPC messages with ``Content-Length`` headers."""

    def __init__(self, process: subprocess.Popen[bytes], python: str) -> None:
        self.process = process
        self.python = python
        self.next_id = 0
        self.buffer = b""  # what the server sent and no message has taken yet

    @classmethod
    def start(cls, executable: str, root: str, python: str) -> "_Server":
        try:
            process = subprocess.Popen(
                [executable, "lsp", "--indexing-mode", "none"], cwd=root,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise _EngineError(f"{ENGINE} could not start: {exc.strerror or exc}") from None
        server = cls(process, python)
        uri = _uri(root)
        server.request("initialize", {
            "processId": os.getpid(), "rootUri": uri, "workspaceFolders": [{"uri": uri, "name": "repository"}],
            "capabilities": {"workspace": {"configuration": True}},
            "initializationOptions": {"pythonPath": python, **_SETTINGS},
        }, FIRST_ANSWER_S)
        server.notify("initialized", {})
        return server

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: dict[str, Any]) -> int:
        """Send a request without waiting: its reply is read past by a later ``request``."""
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> Any:
        wanted = self.send_request(method, params)
        deadline = time.monotonic() + timeout_s
        while True:
            message = self._receive(deadline, method, timeout_s)
            if "method" in message and "id" in message:  # the server asks the client
                self._answer(message)
            elif message.get("id") == wanted:
                if "error" in message:
                    raise _EngineError(f"{ENGINE} refused {method}: {message['error'].get('message', message['error'])}")
                return message.get("result")

    def stop(self) -> None:
        try:
            self.process.kill()
            self.process.wait(timeout=5)
        except (OSError, subprocess.SubprocessError):
            pass

    def _answer(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            items = message.get("params", {}).get("items", [])
            result = [{"pythonPath": self.python, **_SETTINGS} for _ in items]
        self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        stream = self._stream(self.process.stdin)
        try:
            stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            stream.flush()
        except OSError:
            raise _EngineError(f"{ENGINE} stopped (exit code {self.process.poll()})") from None

    def _receive(self, deadline: float, method: str, timeout_s: float) -> dict[str, Any]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill(deadline, method, timeout_s)
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
        if not lengths:
            raise _EngineError(f"{ENGINE} sent a message without a length")
        length = int(lengths[0].strip())
        while len(self.buffer) < length:
            self._fill(deadline, method, timeout_s)
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        try:
            parsed: dict[str, Any] = json.loads(body)
        except ValueError:
            raise _EngineError(f"{ENGINE} sent a message that is not JSON") from None
        return parsed

    def _fill(self, deadline: float, method: str, timeout_s: float) -> None:
        """Read what the server has sent, waiting until ``deadline`` at most."""
        descriptor = self._stream(self.process.stdout).fileno()
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([descriptor], [], [], remaining)[0]:
            raise _EngineError(f"{ENGINE} gave no answer to {method} in {timeout_s:.0f} s")
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            raise _EngineError(f"{ENGINE} stopped (exit code {self.process.wait()})")
        self.buffer += chunk

    @staticmethod
    def _stream(stream: IO[bytes] | None) -> IO[bytes]:
        if stream is None:
            raise _EngineError(f"{ENGINE} has no pipe")
        return stream
