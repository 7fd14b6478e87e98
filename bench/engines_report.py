"""``bench/ENGINES.md`` from what ``bench/engines.py`` measured and the findings judged by hand."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import Any, Iterable

KINDS = ("per-step", "per-request", "one-time", "offline", "unknown")
VERDICTS = ("true", "debatable", "false")
JUDGEMENT_KEYS = ("engine", "path", "line", "rule", "severity", "context", "verdict", "reason")
# What follows this line in the page is written by hand and kept when the page is rendered again.
HAND_WRITTEN = "<!-- Written by hand below this line; bench/engines.py keeps it. -->"


class JudgementError(Exception):
    """A line of the judgements file that cannot be read."""


def read_judgements(path: str) -> list[dict[str, Any]]:
    """The judged findings; none while the file is absent."""
    if not os.path.exists(path):
        return []
    judged = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise JudgementError(f"{path}:{number}: not JSON ({error.msg}); write one object per line") from None
        missing = [key for key in JUDGEMENT_KEYS if key not in row]
        if missing or row["verdict"] not in VERDICTS:
            raise JudgementError(f"{path}:{number}: needs {', '.join(JUDGEMENT_KEYS)} with verdict one of "
                                 f"{', '.join(VERDICTS)} (got keys {', '.join(row)}; verdict {row.get('verdict')!r})")
        judged.append(row)
    return judged


def _table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    """A Markdown table; a column whose every cell is a number (digits, no letters) is right-aligned."""
    header, cells = list(header), [[str(cell).replace("|", "\\|") for cell in row] for row in rows]
    numeric = [bool(cells) and all(row[n][:1].isdigit() and not any(c.isalpha() for c in row[n]) for row in cells) for n in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    return lines + ["| " + " | ".join(row) + " |" for row in cells] + [""]


def _share(count: int, total: int) -> str:
    return f"{count:,} ({count / total * 100:.1f} %)" if total else "0"


def _head(results: dict[str, Any]) -> list[str]:
    meta, engines = results["meta"], results["engines"]
    lines = [
        "# Where code runs, and what a full scan finds, on vLLM and SGLang", "",
        f"Measured {meta['date']} with {meta['tool']}; `.venv/bin/python {meta['command']}`. Timed measures",
        f"are the median of {meta['runs']} run(s) in one process, except the full scan (one run). Machine: "
        + ", ".join(f"{k} {v}" for k, v in meta["machine"].items())
        + f"; load average {meta['load']:.1f} when the run ended (the 2 cores are shared: compare CPU seconds).", "",
        "The engines are the Python files of their PyPI wheels, each a git repository of one commit",
        "under `bench/work/engines/` (never copied into this repository).", "",
    ]
    rows = [(name, e["version"], f"{e['files']:,}", f"{e['lines']:,}", f"`{e['target']}` ({e['target_lines']:,} lines)")
            for name, e in engines.items()]
    return lines + _table(("engine", "version", "Python files", "lines", "module the index is told"), rows)


def _index_cost(engines: dict[str, Any]) -> list[str]:
    lines = ["## The call index's cost", "",
             "`build_index` told one large module, as a review tells it the file it reviews: with an empty",
             "cache directory, again with the filled one, and after a function is appended to the module in",
             "the working tree.", ""]
    for name, measured in engines.items():
        lines += [f"**{name}** (`{measured['target']}`)", ""]
        rows = [(r["measure"], f"{r['wall']:.2f}", f"{r['cpu']:.2f}", r["note"]) for r in measured["index_cost"]]
        lines += _table(("measure", "wall s", "CPU s", "notes"), rows)
    return lines


def _coverage(engines: dict[str, Any]) -> list[str]:
    lines = ["## How many functions each verdict covers", "",
             "Every function of every file: the per-file execution map alone (what a full scan uses by",
             "default), and told what the call index, built over every file, proves for the file.", ""]
    keys = sorted({k for e in engines.values() for side in ("alone", "told") for k in e["coverage"]["counts"][side]},
                  key=lambda k: (KINDS.index(k.split("|")[0]), k))
    header = ["kind", "basis"] + [f"{name} {side}" for name in engines for side in ("alone", "with index")]
    rows = []
    for key in keys:
        kind, basis = key.split("|")
        cells: list[Any] = [kind, basis or "—"]
        for measured in engines.values():
            counts, total = measured["coverage"]["counts"], measured["coverage"]["functions"]
            cells += [_share(counts["alone"].get(key, 0), total), _share(counts["told"].get(key, 0), total)]
        rows.append(cells)
    rows.append(["all", ""] + [f"{e['coverage']['functions']:,}" for e in engines.values() for _ in (0, 1)])
    lines += _table(header, rows)
    lines += ["What the index changed (functions whose kind differs with it):", ""]
    changes = sorted({k for e in engines.values() for k in e["coverage"]["counts"]["changed"]})
    rows = [[k.replace("|", " → ")] + [f"{e['coverage']['counts']['changed'].get(k, 0):,}" for e in engines.values()]
            for k in changes]
    lines += _table(["file alone → with index", *engines], rows)
    lines += ["Time of one pass over every file (the index built without a disk cache):", ""]
    names = [t["measure"] for t in next(iter(engines.values()))["coverage"]["timings"]]
    rows = [[measure] + [_seconds(e["coverage"]["timings"], measure) for e in engines.values()] for measure in names]
    return lines + _table(["pass", *(f"{n} wall / CPU s" for n in engines)], rows)


def _seconds(timings: list[dict[str, Any]], measure: str) -> str:
    found = next((t for t in timings if t["measure"] == measure), None)
    return f"{found['wall']:.1f} / {found['cpu']:.1f}" if found else "—"


def _scan(engines: dict[str, Any]) -> list[str]:
    lines = ["## A full scan with the default configuration", "",
             "`api.review` with `paths=(dir,)`, no cache, one job: what `rltrefactor review --no-cache",
             "--format json DIR` runs (with `--jobs 1`). The call index is off for full scans by default,",
             "so contexts are the per-file map's. One run.", ""]
    totals = [(name, f"{e['scan']['wall']:.0f}", f"{e['scan']['cpu']:.0f}", f"{e['scan']['files']:,}",
             f"{len(e['scan']['findings']):,}", e["scan"]["errors"], e["scan"]["suppressed"]) for name, e in engines.items()]
    lines += _table(("engine", "wall s", "CPU s", "files", "findings", "file errors", "suppressed"), totals)
    for title, key in (("rule", lambda f: f["rule"]), ("severity", lambda f: f["severity"]),
                       ("execution context (basis)", lambda f: _context(f))):
        counts = {name: collections.Counter(key(f) for f in e["scan"]["findings"]) for name, e in engines.items()}
        every = collections.Counter[str]()
        for counted in counts.values():
            every.update(counted)
        rows = [[value, *(counts[name].get(value, 0) for name in engines)] for value, _ in every.most_common()]
        lines += [f"Findings by {title}:", ""] + _table([title, *engines], rows)
    return lines


def _with_index(engines: dict[str, Any], verdicts_dir: str) -> list[str]:
    """Findings of the rules that depend on where code runs, by the scan's context and
    what the call index proves for the same function (``<engine>.verdicts.jsonl``)."""
    counts: dict[str, collections.Counter[str]] = {}
    for name, measured in engines.items():
        path = os.path.join(verdicts_dir, f"{name}.verdicts.jsonl")
        if not os.path.exists(path):
            return []
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
        index_kind = {(r["path"], r["qualname"]): r["index_kind"] for r in rows}
        counts[name] = collections.Counter(
            f"{f['context']} → {index_kind.get((f['path'], f['definition']), 'not in a function')}"
            for f in measured["scan"]["findings"] if f["context"])
    keys = sorted({k for counted in counts.values() for k in counted})
    lines = ["Findings of rules that depend on where code runs, by the scan's context and what the call",
             "index, built over every file, proves for the enclosing function (one-time or offline: a scan",
             "with `call-index = true` would leave the finding out):", ""]
    return lines + _table(["scan context → with the index", *engines], [[k, *(counts[n].get(k, 0) for n in engines)] for k in keys])


def _context(finding: dict[str, Any]) -> str:
    if not finding["context"]:
        return "— (rule ignores where code runs)"
    return f"{finding['context']} ({finding['basis']})" if finding["basis"] else finding["context"]


def _judged(results: dict[str, Any], judged: list[dict[str, Any]]) -> list[str]:
    if not judged:
        return ["## Findings judged by hand", "", "None judged yet (`bench/engines_judgements.jsonl`).", ""]
    basis = {(name, f["path"], f["line"], f["rule"]): f["basis"]
             for name, e in results["engines"].items() for f in e["scan"]["findings"]}
    lines = ["## Findings judged by hand", "",
             "A random sample of each engine's full scan (`bench/engines.py --report-only --sample 30 --seed 1`",
             "prints it with the code), each judged true (a reviewer of that engine would act on it),",
             "debatable or false, with the reason, in `bench/engines_judgements.jsonl`.", ""]
    def context(row: dict[str, Any]) -> str:
        found = {"context": row["context"], "basis": basis.get((row["engine"], row["path"], row["line"], row["rule"]), "")}
        return f"{row['engine']}: {_context(found)}"

    groups = (("engine", lambda j: j["engine"]), ("severity", lambda j: f"{j['engine']}: {j['severity']}"),
              ("execution context (basis)", context))
    for title, key in groups:
        counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for row in judged:
            counts[key(row)][row["verdict"]] += 1
        rows = [[group, *(counts[group][v] for v in VERDICTS), sum(counts[group].values())] for group in sorted(counts)]
        lines += [f"By {title}:", ""] + _table([title, *VERDICTS, "judged"], rows)
    return lines


def render(results: dict[str, Any], judged: list[dict[str, Any]], page: str, verdicts_dir: str) -> str:
    """The page; what follows the hand-written marker of the page already at ``page`` is kept."""
    engines = results["engines"]
    lines = _head(results) + _index_cost(engines) + _coverage(engines) + _scan(engines)
    lines += _with_index(engines, verdicts_dir) + _judged(results, judged)
    kept = Path(page).read_text(encoding="utf-8").partition(HAND_WRITTEN)[2] if os.path.exists(page) else "\n"
    return "\n".join(lines) + HAND_WRITTEN + kept
