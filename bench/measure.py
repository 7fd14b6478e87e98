"""Whole-process measurements: wall time and peak memory of a command's process tree.

Each measurement starts a fresh process. Wall time is taken around the whole process
(interpreter start, imports and exit included), because that is what a user waits for.
Memory is reported twice, since neither number alone is the truth for a tool that
forks workers or runs a helper binary:
- ``max_rss``: the largest single process (``/usr/bin/time -v`` where present, else
  ``RUSAGE_CHILDREN`` of a fresh wrapper process, which is the same kernel number);
- ``tree_rss``: the sum of RSS over the whole process tree, sampled every 20 ms from
  ``/proc`` (a lower bound on the true peak: a spike shorter than a sample is missed).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
_PAGE = os.sysconf("SC_PAGE_SIZE")
_SAMPLE_S = 0.02
# A fresh interpreter that runs the command and prints its children's rusage.
_RUSAGE_WRAPPER = (
    "import resource,subprocess,sys,json;"
    "rc=subprocess.call(sys.argv[2:],stdout=subprocess.DEVNULL,stderr=open(sys.argv[1],'w'));"
    "print(json.dumps([rc,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))"
)


@dataclass(frozen=True)
class Sample:
    wall_s: float
    max_rss_mib: float
    tree_rss_mib: float
    returncode: int
    crashed: bool  # a traceback on stderr: exit 1 from Python is then not "findings"


@dataclass(frozen=True)
class Measurement:
    name: str
    command: tuple[str, ...]
    samples: tuple[Sample, ...]
    stderr_tail: str

    @property
    def wall_s(self) -> float:
        return statistics.median(s.wall_s for s in self.samples)

    @property
    def max_rss_mib(self) -> float:
        return statistics.median(s.max_rss_mib for s in self.samples)

    @property
    def tree_rss_mib(self) -> float:
        return statistics.median(s.tree_rss_mib for s in self.samples)

    @property
    def crashed(self) -> bool:
        return any(s.crashed for s in self.samples)

    @property
    def returncodes(self) -> tuple[int, ...]:
        return tuple(sorted({s.returncode for s in self.samples}))


def cpu_prefix(cores: int) -> list[str]:
    """Pin to ``cores`` CPUs when the machine has more, so results compare across hosts."""
    if (os.cpu_count() or 1) > cores and shutil.which("taskset"):
        return ["taskset", "-c", ",".join(str(i) for i in range(cores))]
    return []


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses; fields resume after the last ')'.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _tree_rss(root: int) -> int:
    children = _children_map()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        try:
            with open(f"/proc/{pid}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * _PAGE
        except (OSError, IndexError, ValueError):
            continue
    return total


class _TreeSampler(threading.Thread):
    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.peak, self._done = root, 0, threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, _tree_rss(self.root))
            self._done.wait(_SAMPLE_S)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


def _wrapped(command: Sequence[str], report: str) -> list[str]:
    if TIME_BIN:
        return [TIME_BIN, "-v", "-o", report, *command]
    return [sys.executable, "-c", _RUSAGE_WRAPPER, report + ".err", *command]


def _max_rss_kib(report: str, stdout: bytes) -> tuple[int, int | None]:
    """(max RSS KiB, wrapped command's exit code or None when the wrapper already gave it)."""
    if TIME_BIN:
        with open(report, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if "Maximum resident set size" in line:
                    return int(line.rsplit(":", 1)[1]), None
        return 0, None
    rc, kib = json.loads(stdout.decode().strip().splitlines()[-1])
    return int(kib), int(rc)


def measure_once(command: Sequence[str], *, cwd: str | None, env: Mapping[str, str] | None) -> tuple[Sample, str]:
    with tempfile.TemporaryDirectory(prefix="rlt-measure-") as scratch:
        report = os.path.join(scratch, "time.txt")
        err_path = os.path.join(scratch, "stderr.txt")
        with open(err_path, "wb") as err:
            started = time.perf_counter()
            process = subprocess.Popen(
                _wrapped(command, report), cwd=cwd, env={**os.environ, **env} if env else None,
                stdout=subprocess.PIPE if not TIME_BIN else subprocess.DEVNULL, stderr=err,
            )
            sampler = _TreeSampler(process.pid)
            sampler.start()
            stdout, _ = process.communicate()
            wall = time.perf_counter() - started
            tree = sampler.stop()
        kib, rc = _max_rss_kib(report, stdout or b"")
        errfile = err_path if TIME_BIN else report + ".err"
        with open(errfile, encoding="utf-8", errors="replace") as handle:
            stderr = handle.read()
    returncode = process.returncode if rc is None else rc
    crashed = "Traceback (most recent call last)" in stderr
    return Sample(wall, kib / 1024, max(tree, kib * 1024) / 2**20, returncode, crashed), stderr[-2000:]


def measure(
    name: str, command: Sequence[str], *, runs: int, cwd: str | None = None,
    env: Mapping[str, str] | None = None, before_each: Callable[[], None] | None = None,
    ok_codes: tuple[int, ...] = (0, 1),
) -> Measurement:
    samples: list[Sample] = []
    stderr = ""
    for _ in range(runs):
        if before_each is not None:
            before_each()
        sample, stderr = measure_once(command, cwd=cwd, env=env)
        samples.append(sample)
        if sample.returncode not in ok_codes or sample.crashed:
            print(f"  ! {name}: exit {sample.returncode}: {stderr.strip()[-300:]}", file=sys.stderr)
    return Measurement(name, tuple(command), tuple(samples), stderr)
