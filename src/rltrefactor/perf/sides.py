"""Running one side's micro-checks in a subprocess, with a timeout per check.

The runner announces each check before it runs it, so a hang or a crash is pinned on
the check that caused it; the remaining checks then run in a fresh process. A check
that hangs is killed with its whole process group.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import IO

from .environment import RunnerSetup, runner_env
from .protocol import (Capture, Captured, CheckInfo, Done, Event, Failed, Loaded, Measured, Measurement, Skipped,
                       Started, from_line)

# Starting the interpreter and importing torch and the hook files is not the check's
# time: the first deadline adds this much to the per-check timeout.
STARTUP_GRACE_S = 30.0
_POLL_S = 0.2  # how often a waiting side looks at its cancel flag and memory use
DEFAULT_MEMORY_MB = 8192  # resident memory a runner process may use before it is killed


@dataclass(frozen=True)
class SideError:
    check: str  # "" when the process failed before any check started
    path: str
    line: int | None
    message: str


@dataclass
class SideRun:
    """What one side produced: per-check payloads, failures, and checks it skipped."""

    root: str
    loaded: dict[str, CheckInfo] = field(default_factory=dict)
    results: dict[str, Measurement] = field(default_factory=dict)
    captures: dict[str, Capture] = field(default_factory=dict)
    errors: list[SideError] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    torch_version: str = ""
    label: str = "micro-check"  # what a unit is called in messages: "micro-check" or "test"


def run_side(root: str, hooks_dir: str, extra: list[str], *, checks: list[str] | None,
             timeout: float, cancel: threading.Event | None = None,
             memory_mb: int = DEFAULT_MEMORY_MB, setup: RunnerSetup = RunnerSetup()) -> SideRun:
    """Run ``checks`` (None: all) under ``root``; never raises for a check's failure.

    Setting ``cancel`` (from another thread, on Ctrl-C) kills the running process.
    """
    argv = [sys.executable, "-m", "rltrefactor.perf.runner", "--root", root, "--hooks", hooks_dir,
            *setup.stub_args(), *extra]
    command = _Command(argv, runner_env(root, setup))
    return _run(SideRun(root), command, checks, _Limits(timeout, memory_mb), cancel or threading.Event())


def run_tests_side(root: str, extra: list[str], pytest_args: list[str], *, tests: list[str] | None,
                   timeout: float, cancel: threading.Event | None = None,
                   memory_mb: int = DEFAULT_MEMORY_MB, setup: RunnerSetup = RunnerSetup()) -> SideRun:
    """``run_side`` for pytest tests (``rltrefactor.perf.testrun``): ``tests`` None traces
    the tests ``pytest_args`` collect (``--map`` in ``extra``); else each test is measured
    in a process of its own, under the same limits as a micro-check."""
    argv = [sys.executable, "-m", "rltrefactor.perf.testrun", "--root", root, *setup.stub_args(), *extra]
    env = runner_env(root, setup)
    side = SideRun(root, label="test")
    cancel = cancel or threading.Event()
    limits = _Limits(timeout, memory_mb)
    if tests is None:
        return _run(side, _Command([*argv, "--", *pytest_args], env), None, limits, cancel)
    for test in tests:
        if cancel.is_set():
            break
        _run(side, _Command(argv, env), [test], limits, cancel)
    return side


def _run(side: SideRun, command: _Command, checks: list[str] | None, limits: _Limits,
         cancel: threading.Event) -> SideRun:
    remaining = None if checks is None else list(checks)
    while (remaining is None or remaining) and not cancel.is_set():
        before = _settled(side)
        finished = _one_process(side, command, remaining, limits, cancel)
        done = _settled(side)
        if finished or not side.loaded or done == before:
            break  # each relaunch must settle at least one more check
        wanted = remaining if remaining is not None else list(side.loaded)
        remaining = [name for name in wanted if name not in done]
    return side


def _settled(side: SideRun) -> set[str]:
    return set(side.results) | set(side.captures) | set(side.skipped) | {e.check for e in side.errors if e.check}


@dataclass(frozen=True)
class _Command:
    """How a runner process of one side starts; ``--check`` options are added per launch."""

    argv: list[str]
    env: dict[str, str]  # scrubbed of credentials (``environment.runner_env``)


@dataclass(frozen=True)
class _Limits:
    timeout: float  # seconds per check
    memory_mb: int  # resident set size of the runner process


def _one_process(side: SideRun, command: _Command, checks: list[str] | None, limits: _Limits,
                 cancel: threading.Event) -> bool:
    argv = list(command.argv)
    for name in checks or ():
        argv += ["--check", name]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(argv, cwd=side.root, env=command.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
        try:
            return _follow(side, proc, stderr, limits, cancel)
        finally:
            _kill(proc)


def _follow(side: SideRun, proc: subprocess.Popen[bytes], stderr: IO[bytes], limits: _Limits, cancel: threading.Event) -> bool:
    lines: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
    timeout = limits.timeout
    current, deadline = "", time.monotonic() + timeout + STARTUP_GRACE_S
    while True:
        try:
            raw = lines.get(timeout=min(max(deadline - time.monotonic(), 0.0), _POLL_S))
        except queue.Empty:
            if cancel.is_set():
                return True  # the caller re-raises the interrupt; _one_process kills the process
            if _resident_mb(proc.pid) > limits.memory_mb:
                _kill(proc)
                side.errors.append(_error(side, current, f"used more than {limits.memory_mb} MiB of memory "
                                          "(process killed)", f"make the {side.label}'s inputs smaller"))
                return False
            if time.monotonic() < deadline:
                continue
            _kill(proc)
            limit = timeout if current else timeout + STARTUP_GRACE_S
            side.errors.append(_error(side, current, f"timed out after {limit:g} s (process killed)",
                                      f"make the {side.label} smaller, or raise --timeout"))
            return False
        if raw is None:
            code = proc.wait()
            how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            side.errors.append(_error(side, current, f"crashed ({how}){_tail(stderr)}",
                                      f"run the {side.label} alone to see its output"))
            return False
        event = from_line(raw)
        if isinstance(event, Done):
            return True
        current = _handle(side, event)
        deadline = time.monotonic() + timeout


def _handle(side: SideRun, event: Event) -> str:
    """Record one protocol event; return the check now running ("" for none)."""
    if isinstance(event, Loaded):
        side.torch_version = event.torch
        side.loaded.update({c.name: c for c in event.checks})
        side.errors += [SideError("", e.path, e.line, e.message) for e in event.load_errors]
    elif isinstance(event, Started):
        return event.check
    elif isinstance(event, Measured):
        side.results[event.check] = event.result
    elif isinstance(event, Captured):
        side.captures[event.check] = event.result
    elif isinstance(event, Skipped):
        side.skipped[event.check] = event.reason
    elif isinstance(event, Failed):
        where = side.loaded.get(event.check)
        path = event.path or (where.path if where else "")
        line = event.line if event.path else (where.line if where else None)
        side.errors.append(SideError(event.check, path, line, f"{side.label} {event.check} failed: {event.message}"))
    return ""


def _error(side: SideRun, check: str, problem: str, fix: str) -> SideError:
    where = side.loaded.get(check)
    what = f"{side.label} {check}" if check else f"perf runner (before any {side.label} started)"
    return SideError(check, where.path if where else "", where.line if where else None, f"{what}: {problem}; {fix}")


def _resident_mb(pid: int) -> float:
    """Resident memory of a process in MiB (0 where /proc cannot tell)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for row in status:
                if row.startswith("VmRSS:"):
                    return int(row.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def _pump(stream: IO[bytes], lines: queue.Queue[bytes | None]) -> None:
    for raw in iter(stream.readline, b""):
        if raw.startswith(b"{"):
            lines.put(raw)
    lines.put(None)


def _tail(stderr: IO[bytes]) -> str:
    stderr.seek(0, os.SEEK_END)
    stderr.seek(max(stderr.tell() - 2000, 0))
    text = stderr.read().decode("utf-8", "replace").strip().splitlines()
    return f": {text[-1].strip()}" if text else ""


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
