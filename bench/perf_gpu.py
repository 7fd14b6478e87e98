"""The perf hook on the demo PRs, on CPU and on CUDA, side by side.

    python bench/perf_gpu.py --out DIR        # measure; writes DIR/perf_gpu.json
    python bench/perf_gpu.py --render FILE    # print bench/perf_gpu.md from that JSON
    python bench/perf_gpu.py --set-up DIR     # a buffer unpinned in __init__: uploads timed, CLI output kept

Each demo PR (examples/demo_prs/*.patch) becomes branch ``feature`` of a throwaway
repository built from examples/demo_engine, and ``run_perf`` compares it with ``main``
once per device (``device=`` overrides the checks' ``"auto"``). On CUDA it also takes an
ops-only and a full profile of the covered checks and keeps their metadata. Counts are
per call of each micro-check; wall times are the whole hook (both sides, worktrees,
runner processes), one run each: hook latency, not engine performance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "src"))

from rltrefactor.change.changeset import collect_changes  # noqa: E402
from rltrefactor.perf import run_perf  # noqa: E402
from rltrefactor.perf.deltas import detail  # noqa: E402

GIT = ("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false")


def build_repo(work: Path, patch: str) -> Path:
    repo = work / patch
    shutil.copytree(PROJECT / "examples" / "demo_engine", repo, ignore=shutil.ignore_patterns("__pycache__"))
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], [*GIT, "commit", "-q", "-m", "base"],
                 ["checkout", "-q", "-b", "feature"], ["apply", str(PROJECT / "examples" / "demo_prs" / f"{patch}.patch")],
                 ["add", "-A"], [*GIT, "commit", "-q", "-m", patch]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True)
    return repo


def measure(repo: Path, device: str, profile_dir: Path | None) -> dict:
    change = collect_changes(str(repo), diff="main..feature")
    started = time.perf_counter()
    summary = run_perf(change, device=device, timeout=300,
                       profile="both" if profile_dir else None, out_dir=str(profile_dir) if profile_dir else None)
    wall = time.perf_counter() - started
    evidence = summary.device_evidence
    return {
        "device": summary.device or device,
        "wall_seconds": round(wall, 2),
        "checks": list(summary.checks),
        "totals": {name: asdict(totals) for name, totals in evidence.totals.items()},
        "deltas": [{"check": d.check, "category": d.category, "site": f"{d.path}:{d.line}", "source": d.source,
                    "base": d.base_count, "head": d.head_count, "bytes": d.bytes_delta, "detail": detail(d),
                    "ops": evidence.ops.get(f"{d.check}|{d.category}|{d.path}:{d.line}", "")}
                   for d in summary.deltas],
        "errors": [f"{e.path}:{e.line}: {e.message}" for e in summary.errors],
        "cuda_evidence": {name: asdict(cuda) for name, cuda in evidence.cuda.items()},
        "profiles": _profiles(summary.artifacts_dir) if summary.artifacts_dir else [],
        "profile_rows": [asdict(r) for r in summary.profile_rows[:12]],
    }


def _profiles(run_dir: str) -> list[dict]:
    found = []
    for meta_path in sorted(Path(run_dir).rglob("meta.json")):
        meta = json.loads(meta_path.read_text())
        ops_path = meta_path.with_name("ops.json")
        ops = json.loads(ops_path.read_text()) if ops_path.exists() else {}
        keep = ("side", "mode", "capture", "device", "window", "events", "trace_bytes", "export_seconds",
                "capture_seconds", "settings", "export_error")
        found.append({**{k: meta.get(k) for k in keep}, "launches": ops.get("launches"),
                      "copies": ops.get("copies"), "syncs": ops.get("syncs")})
    return found


def environment() -> dict:
    import torch

    cuda = torch.cuda.is_available()
    return {"python": platform.python_version(), "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0) if cuda else None, "cpu_count": os.cpu_count()}


def run(out: Path) -> None:
    import torch

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    results = {"environment": environment(), "runs": []}
    with tempfile.TemporaryDirectory(prefix="perf-gpu-") as tmp:
        work = Path(tmp)
        for patch in ("defects", "refactor"):
            repo = build_repo(work, patch)
            for device in devices:
                profile_dir = work / f"profiles-{patch}" if device == "cuda" and patch == "defects" else None
                row = measure(repo, device, profile_dir)
                results["runs"].append({"patch": patch, "requested": device, **row})
                print(json.dumps({"patch": patch, "device": device, "wall": row["wall_seconds"],
                                  "deltas": len(row["deltas"]), "errors": row["errors"]}), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "perf_gpu.json").write_text(json.dumps(results, indent=1, sort_keys=True))


def render(results: dict) -> str:
    """The counts table of bench/perf_gpu.md: each delta site, CPU next to CUDA."""
    env = results["environment"]
    lines = [f"Environment: {env['gpu'] or 'no GPU'}, torch {env['torch']}, Python {env['python']}, "
             f"{env['cpu_count']} CPUs.", ""]
    for patch in ("defects", "refactor"):
        runs = {r["requested"]: r for r in results["runs"] if r["patch"] == patch}
        devices = list(runs)
        lines += [f"### {patch}.patch", "",
                  "| hook wall time | " + " | ".join(f"{d}: {runs[d]['wall_seconds']} s" for d in devices) + " |",
                  "|---|" + "---|" * len(devices), ""]
        sites = sorted({(d["check"], d["category"], d["site"], d["source"]) for r in runs.values() for d in r["deltas"]})
        lines += ["| check | category | site | " + " | ".join(f"{d} base→head (ops)" for d in devices) + " |",
                  "|---|---|---|" + "---|" * len(devices)]
        for check, category, site, source in sites:
            cells = []
            for device in devices:
                hit = [d for d in runs[device]["deltas"] if (d["check"], d["category"], d["site"]) == (check, category, site)]
                cells.append(f"{hit[0]['base']}→{hit[0]['head']} ({hit[0]['ops']})" if hit else "no delta")
            lines.append(f"| {check.split(':')[-1]} | {category} | `{site}` `{source}` | " + " | ".join(cells) + " |")
        if not sites:
            lines.append("| (all) | | no delta | " + " | ".join("no delta" for _ in devices) + " |")
        lines += ["", "Totals per call (base → head):", ""]
        for device in devices:
            for check, sides in runs[device]["totals"].items():
                lines.append(f"- {device} `{check}`: base {sides['base']} → head {sides['head']}")
        errors = [e for r in runs.values() for e in r["errors"]]
        lines += [""] + [f"- error: {e}" for e in errors] + ([""] if errors else [])
    return "\n".join(lines) + "\n"


# The set-up reproduction: a staging buffer unpinned in ``__init__``, an unchanged step.
LOADER = """\
import torch


class Loader:
    \"\"\"Uploads a host staging buffer of FLOATS float32 values every step.\"\"\"

    def __init__(self, device):
        self.device = device
        self.host = torch.empty(FLOATS, pin_memory=True)
        self.dev = torch.empty(FLOATS, device=device)

    def step(self):
        self.dev.copy_(self.host, non_blocking=True)
        return self.dev
"""
LOADER_CHECK = """\
from rltrefactor.perf import micro_check
from loader import Loader


@micro_check(device="cuda")
def upload_step(device):
    loader = Loader(device)
    return loader.step
"""


def upload_timings(sizes: tuple[int, ...] = (1 << 20, 8 << 20), repeats: int = 5, queued_ms: float = 50.0) -> list[dict]:
    """Host time of the loader's ``dev.copy_(host, non_blocking=True)`` behind about
    ``queued_ms`` of matrix products, pinned and pageable; "early": the device was still busy
    when the call returned (it did not wait for the stream)."""
    import statistics

    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.mm(a, a)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(10):
        torch.mm(a, a)
    torch.cuda.synchronize()
    matmuls = max(1, round(queued_ms / ((time.perf_counter() - started) * 100)))
    rows = []
    for nbytes in sizes:
        for pinned in (True, False):
            host = torch.empty(nbytes // 4, pin_memory=pinned)
            dev = torch.empty(nbytes // 4, device="cuda")
            times, early = [], 0
            for _ in range(repeats):
                torch.cuda.synchronize()
                for _ in range(matmuls):
                    torch.mm(a, a)
                t0 = time.perf_counter()
                dev.copy_(host, non_blocking=True)
                times.append((time.perf_counter() - t0) * 1000)
                early += not torch.cuda.current_stream().query()
            torch.cuda.synchronize()
            rows.append({"bytes": nbytes, "memory": "pinned" if pinned else "pageable",
                         "host_ms_median": round(statistics.median(times), 3), "returned_early": f"{early}/{repeats}"})
    return rows


def set_up_demo(out: Path) -> None:
    """The reproduction end to end: the loader repository at 8 MiB and 1 MiB, its branch
    ``unpinned``, and the command line's ``review --perf`` and ``perf --format json`` on it."""
    results: dict = {"environment": environment(), "uploads": upload_timings(), "runs": []}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT / "src"), os.environ.get("PYTHONPATH")])),
           "NO_COLOR": "1"}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="perf-set-up-") as tmp:
        for floats in (2 * 1024 * 1024, 256 * 1024):
            repo = Path(tmp) / f"loader-{floats * 4}"
            (repo / "perf_hooks").mkdir(parents=True)
            (repo / "loader.py").write_text(LOADER.replace("FLOATS", str(floats)))
            (repo / "perf_hooks" / "checks.py").write_text(LOADER_CHECK)
            unpinned = LOADER.replace("torch.empty(FLOATS, pin_memory=True)", "torch.empty(FLOATS)")
            for argv in (["init", "-q", "-b", "main"], ["add", "-A"], [*GIT, "commit", "-q", "-m", "pinned"],
                         ["checkout", "-q", "-b", "unpinned"]):
                subprocess.run(["git", "-C", str(repo), *argv], check=True)
            (repo / "loader.py").write_text(unpinned.replace("FLOATS", str(floats)))
            for argv in (["add", "-A"], [*GIT, "commit", "-q", "-m", "unpinned"]):
                subprocess.run(["git", "-C", str(repo), *argv], check=True)
            for name, command in (("review", ["review", "--diff", "main..unpinned", "--perf"]),
                                  ("perf_json", ["perf", "--diff", "main..unpinned", "--format", "json"])):
                started = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "rltrefactor", *command], cwd=repo, env=env,
                                      capture_output=True, text=True)
                results["runs"].append({"bytes": floats * 4, "command": "rltrefactor " + " ".join(command),
                                        "exit": proc.returncode, "wall_seconds": round(time.perf_counter() - started, 2),
                                        "stdout": proc.stdout, "stderr": proc.stderr[-2000:]})
                (out / f"{name}_{floats * 4}.txt").write_text(proc.stdout + proc.stderr)
                print(json.dumps({"bytes": floats * 4, "command": name, "exit": proc.returncode}), flush=True)
    (out / "perf_set_up.json").write_text(json.dumps(results, indent=1, sort_keys=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", type=Path)
    group.add_argument("--render", type=Path)
    group.add_argument("--set-up", type=Path, metavar="OUT", help="the unpinned-in-__init__ reproduction")
    args = parser.parse_args()
    if args.set_up:
        set_up_demo(args.set_up)
    elif args.out:
        run(args.out)
    else:
        print(render(json.loads(args.render.read_text())), end="")
