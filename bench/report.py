"""Tables and the targets section of ``bench/RESULTS.md``, from the measurements."""

from __future__ import annotations

import os
import platform
import shlex
from dataclasses import dataclass

from measure import Measurement

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Target:
    what: str
    met: bool | None  # None: could not be checked in this run
    numbers: str


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
        ram = f"{mem_kib / 2**20:.1f} GiB"
    except (OSError, StopIteration):
        ram = "unknown"
    return {"nproc": str(os.cpu_count()), "CPU": model, "RAM": ram, "OS": platform.platform()}


def shown(argv: tuple[str, ...]) -> str:
    """The command with this checkout's absolute paths made relative, for reading."""
    return " ".join(shlex.quote(a.replace(ROOT + os.sep, "")) for a in argv)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "n/a"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def table(rows: list[Measurement], reference: Measurement | None, info: dict[str, str]) -> list[str]:
    """Markdown rows: median wall, max RSS, tree RSS, and each row's wall over rltrefactor's
    (above 1: rltrefactor is that many times faster)."""
    lines = [
        "| tool | runs | wall s (median) | max RSS MiB | tree RSS MiB | wall / rltrefactor's | exit | notes |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for m in rows:
        rel = ratio(m.wall_s, reference.wall_s) if reference else "n/a"
        codes = ",".join(map(str, m.returncodes)) + (" CRASHED" if m.crashed else "")
        lines.append(
            f"| {m.name} | {len(m.samples)} | {m.wall_s:.2f} | {m.max_rss_mib:.0f} | {m.tree_rss_mib:.0f} "
            f"| {rel} | {codes} | {_cell(info.get(m.name, ''))} |"
        )
    return lines


def check_targets(
    full: dict[str, Measurement], pr: dict[str, Measurement], cold: str, warm: str, sizes: list[str], large_pr: str
) -> list[Target]:
    targets: list[Target] = []
    ok = {k: m for k, m in {**full, **pr}.items() if not m.crashed and set(m.returncodes) <= {0, 1}}
    full = {k: m for k, m in full.items() if k in ok}
    pr = {k: m for k, m in pr.items() if k in ok}
    rlt, sem, fix = full.get(cold), full.get("Semgrep"), full.get("Fixit")

    def add(what: str, have: bool, met: bool, numbers: str) -> None:
        targets.append(Target(what, met if have else None, numbers if have else "not measured (missing or failed run)"))

    add("full scan wall <= 0.6x Semgrep's", bool(rlt and sem), bool(rlt and sem and rlt.wall_s <= 0.6 * sem.wall_s),
        f"{rlt.wall_s:.2f} s vs {sem.wall_s:.2f} s = {rlt.wall_s / sem.wall_s:.2f}x" if rlt and sem else "")
    add(">= 10x faster than Fixit", bool(rlt and fix), bool(rlt and fix and fix.wall_s >= 10 * rlt.wall_s),
        f"Fixit {fix.wall_s:.2f} s / rltrefactor {rlt.wall_s:.2f} s = {fix.wall_s / rlt.wall_s:.1f}x" if rlt and fix else "")
    add("peak memory <= Semgrep's (tree RSS)", bool(rlt and sem), bool(rlt and sem and rlt.tree_rss_mib <= sem.tree_rss_mib),
        f"{rlt.tree_rss_mib:.0f} MiB vs {sem.tree_rss_mib:.0f} MiB" if rlt and sem else "")
    w = full.get(warm)
    add("warm re-run <= 10 % of cold", bool(rlt and w), bool(rlt and w and w.wall_s <= 0.10 * rlt.wall_s),
        f"{w.wall_s:.2f} s vs {rlt.wall_s:.2f} s = {100 * w.wall_s / rlt.wall_s:.0f} %" if rlt and w else "")
    for name, limit in (("PR 1-3 files", 0.6), ("PR 30 files", 2.0)):
        m = pr.get(name)
        add(f"{name} review <= {limit} s", bool(m), bool(m and m.wall_s <= limit), f"{m.wall_s:.2f} s" if m else "")
    one_line = next((m for name, m in pr.items() if name.startswith("1-line change")), None)
    add("1-line change in a small repository <= 0.3 s", bool(one_line), bool(one_line and one_line.wall_s <= 0.3),
        f"{one_line.wall_s:.2f} s" if one_line else "")
    big, sem_diff = pr.get(large_pr), pr.get(f"{large_pr}: Semgrep diff mode")
    add(f"{large_pr} review <= 0.8 s", bool(big), bool(big and big.wall_s <= 0.8), f"{big.wall_s:.2f} s" if big else "")
    add(f"{large_pr} review <= 0.3x Semgrep's diff mode", bool(big and sem_diff),
        bool(big and sem_diff and big.wall_s <= 0.3 * sem_diff.wall_s),
        f"{big.wall_s:.2f} s vs {sem_diff.wall_s:.2f} s = {big.wall_s / sem_diff.wall_s:.2f}x" if big and sem_diff else "")
    small, large = (pr.get(s) for s in sizes) if len(sizes) == 2 else (None, None)
    add("small diff cost independent of repo size (within 20 %)", bool(small and large),
        bool(small and large and abs(large.wall_s - small.wall_s) <= 0.2 * small.wall_s),
        f"{sizes[0]}: {small.wall_s:.2f} s, {sizes[1]}: {large.wall_s:.2f} s ({100 * (large.wall_s / small.wall_s - 1):+.0f} %)"
        if small and large else "")
    return targets


def targets_lines(targets: list[Target]) -> list[str]:
    lines = ["| target | result | numbers |", "|---|---|---|"]
    for t in targets:
        verdict = "NOT CHECKED" if t.met is None else ("MET" if t.met else "NOT MET")
        lines.append(f"| {t.what} | {verdict} | {t.numbers} |")
    return lines
