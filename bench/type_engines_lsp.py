"""A minimal Language Server Protocol client over stdio, for bench/type_engines.py.

Speaks JSON-RPC with Content-Length framing to one server process. Server-to-client
requests are answered so the servers keep going: `workspace/configuration` from the
settings given at start (looked up by dotted section), everything else with null.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


def file_uri(path: Path) -> str:
    return path.resolve().as_uri()


class LspError(RuntimeError):
    """The server answered with an error, died, or did not answer in time."""


class LspClient:
    def __init__(self, argv: list[str], root: Path, settings: dict[str, Any],
                 env: dict[str, str] | None = None, stderr_path: Path | None = None) -> None:
        self.root = root
        self.settings = settings
        self._next_id = 0
        self._pending: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.notifications: list[dict[str, Any]] = []
        err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(argv, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=err, env=env or os.environ.copy())
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # -- framing -------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(out.read(length))
            if "id" in message and "method" in message:
                self._answer_server_request(message)
            elif "id" in message:
                with self._lock:
                    waiter = self._pending.pop(message["id"], None)
                if waiter is not None:
                    waiter.put(message)
            else:
                self.notifications.append(message)

    def _answer_server_request(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [self._section(item.get("section")) for item in message["params"]["items"]]
        self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _section(self, section: str | None) -> Any:
        node: Any = self.settings
        for part in (section or "").split("."):
            if not part:
                continue
            node = node.get(part) if isinstance(node, dict) else None
        return node

    # -- calls ---------------------------------------------------------------
    def request(self, method: str, params: Any, timeout: float = 120.0) -> Any:
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
            waiter: queue.Queue[dict[str, Any]] = queue.Queue()
            self._pending[request_id] = waiter
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            reply = waiter.get(timeout=timeout)
        except queue.Empty as exc:
            raise LspError(f"{method}: no answer in {timeout:.0f} s") from exc
        if "error" in reply:
            raise LspError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self, init_options: dict[str, Any] | None = None) -> float:
        """Runs initialize/initialized; returns its wall seconds."""
        start = time.perf_counter()
        self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": file_uri(self.root),
            "workspaceFolders": [{"uri": file_uri(self.root), "name": self.root.name}],
            "initializationOptions": init_options or {},
            "capabilities": {
                "workspace": {"configuration": True, "workspaceFolders": True},
                "textDocument": {
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "references": {}, "definition": {}, "callHierarchy": {},
                    "synchronization": {"didSave": True},
                },
            },
        }, timeout=300)
        self.notify("initialized", {})
        self.notify("workspace/didChangeConfiguration", {"settings": self.settings})
        return time.perf_counter() - start

    def open(self, path: Path) -> str:
        uri = file_uri(path)
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1,
            "text": path.read_text(encoding="utf-8", errors="replace")}})
        return uri

    def position(self, uri: str, line0: int, char: int) -> dict[str, Any]:
        return {"textDocument": {"uri": uri}, "position": {"line": line0, "character": char}}

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
        except (LspError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
