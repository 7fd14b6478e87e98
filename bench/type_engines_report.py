"""Tables and cold whole-package runs for bench/type_engines.py."""

from __future__ import annotations

import argparse
import os
import resource
import signal
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any


def run_group(argv: list[str], cwd: Path, timeout: float,
              env: dict[str, str] | None = None, merge: bool = True) -> tuple[int | str, str]:
    """Runs argv in its own process group; on timeout the whole group (workers too) is killed.
    Returns the exit code (or "timeout") and stdout, with stderr merged in when `merge`."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merge else subprocess.DEVNULL,
                            text=True, env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", f"killed after {timeout:.0f} s"


def timed(argv: list[str], cwd: Path, timeout: int) -> dict[str, Any]:
    """Wall and CPU seconds of one run (CPU of the workers it waited for; none after a timeout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    rc, out = run_group(argv, cwd, timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"argv": " ".join(argv), "wall_s": round(time.perf_counter() - start, 2),
            "cpu_s": round(cpu, 2), "rc": rc, "tail": out[-300:]}


def cold_runs(args: argparse.Namespace, engines: list[str]) -> dict[str, Any]:
    vllm, bins, threads = Path(args.vllm), Path(args.bin_dir), str(args.threads)
    runs: dict[str, Any] = {}
    if "pyrefly" in engines:
        runs["pyrefly check"] = timed([str(bins / "pyrefly"), "check", "-j", threads,
                                       "--python-interpreter-path", args.python, "vllm"], vllm, 600)
        runs["pyrefly query hover"] = timed([str(bins / "pyrefly"), "query", "hover", "-j", threads,
                                             "--python-interpreter-path", args.python,
                                             "vllm/assets/video.py", "99", "27"], vllm, 600)
        runs["pyrefly query call-hierarchy"] = timed(
            [str(bins / "pyrefly"), "query", "call-hierarchy", "-j", threads,
             "--python-interpreter-path", args.python,
             "vllm/v1/worker/gpu/mm/encoder_runner.py", "207", "9"], vllm, 600)
    if "basedpyright" in engines:
        runs["basedpyright"] = timed([str(bins / "basedpyright"), "--pythonpath", args.python,
                                      "--threads", threads, "--outputjson", "vllm"], vllm, args.cold_timeout)
    if "pyre" in engines:
        runs["pyre check"] = timed([str(Path(args.pyre_bin_dir) / "pyre"), "--noninteractive",
                                    "--source-directory", "vllm", "--search-path", args.site_packages,
                                    "--number-of-workers", threads, "check"], vllm, args.cold_timeout)
    return runs


def summary(results: dict[str, Any]) -> str:
    lines = ["| engine | right / asked | host rows right | device rows right | unknown answers "
             "| first hover median s | warm hover median s |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, res in results.items():
        rows = res["rows"]
        host = [r for r in rows if r["expected"] == "host"]
        dev = [r for r in rows if r["expected"] == "device"]
        firsts = [r["first_s"] for r in rows if r["first_s"] is not None]
        warms = [w for r in rows for w in r["warm_s"]]
        first_median = f"{statistics.median(firsts):.3f}" if firsts else "—"
        warm_median = f"{statistics.median(warms):.4f}" if warms else "—"
        lines.append(f"| {name} | {sum(r['right'] for r in rows)} / {len(rows)} "
                     f"| {sum(r['right'] for r in host)} / {len(host)} "
                     f"| {sum(r['right'] for r in dev)} / {len(dev)} "
                     f"| {sum(r['residency'] == 'unknown' for r in rows)} | {first_median} | {warm_median} |")
    lines += ["", "| row | expected | kind | " + " | ".join(results) + " |",
              "| --- | --- | --- |" + " --- |" * len(results)]
    first = next(iter(results.values()))["rows"]
    for i, row in enumerate(first):
        cells = []
        for res in results.values():
            r = res["rows"][i]
            mark = "✓" if r["right"] else ("?" if r["residency"] == "unknown" else "✗")
            cells.append(f"{mark} `{(r['answer'] or '—')[:48]}`")
        lines.append(f"| {row['id']} | {row['expected']} | {row['kind']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
