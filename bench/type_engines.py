"""Put the same type questions to several Python type engines and score them on judged findings.

Questions (on the same code for every engine):
  1. hover: the type of a value at a position (numpy from an unannotated helper, a torch
     factory, a list, a tokenizer output, `self.x`), and the receiver of every judged row;
  2. references: the definition and every assignment of a dataclass field;
  3. call hierarchy: incoming and outgoing calls of a function.
Scoring: each row of bench/type_engine_rows.jsonl is a judged finding (bench/engines_judgements.jsonl,
bench/signal_judgements.jsonl) whose verdict turns on where the receiver lives. An engine gets the
row right when its answer for the receiver is a host type (ndarray, numpy scalar, list, int, ...)
for a host row, or a torch tensor for a device row. A type never says which device a tensor is
on: a CPU tensor typed `Tensor` counts as wrong for a host row.

Engine sources are downloaded by the user, never committed:
  pip download --no-deps -d /tmp/engines vllm==0.34.0 sglang==0.5.23   # unzip each wheel
  python3 ../shared/corpus/materialize.py /tmp/corpus DEV-016 ...       # the ids in the rows file
The interpreter given with --python must import numpy, torch and transformers (where the user's
project is installed); the engines read its site-packages.

Usage:
  python bench/type_engines.py --vllm /tmp/engines/vllm-src --sglang /tmp/engines/sglang-src \\
      --corpus /tmp/corpus --python /tmp/te/bin/python --bin-dir /tmp/te/bin \\
      --pyre-bin-dir /tmp/pyre/bin --engines pyrefly,basedpyright,jedi,pyre --cold \\
      --json /tmp/type_engines.json --markdown /tmp/type_engines_tables.md
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from type_engines_lsp import LspClient, LspError  # noqa: E402
from type_engines_report import cold_runs, run_group, summary  # noqa: E402

ROWS = Path(__file__).resolve().parent / "type_engine_rows.jsonl"
WARM_REPEATS = 5
# (question, what it probes, source, path, line, name, nth occurrence, expected answer)
PROBES = [
    ("hover", "unannotated helper returning numpy", "vllm",
     "vllm/transformers_utils/processors/fireredasr2.py", 195, "fbank", 0, "ndarray"),
    ("hover", "self.x attribute (instance of a local class)", "vllm",
     "vllm/transformers_utils/processors/fireredasr2.py", 195, "fbank", 1, "KaldifeatFbank"),
    ("hover", "torch factory without device", "vllm",
     "vllm/transformers_utils/processors/fireredasr2.py", 171, "mask", 0, "Tensor"),
    ("hover", "list from .tolist()", "vllm", "vllm/model_executor/models/bert.py", 631, "lens", 0,
     "list[int]"),
    ("hover", "tokenizer output", "vllm", "vllm/transformers_utils/processors/internvl.py", 578,
     "text_inputs", 0, "BatchEncoding"),
    ("hover", "dataclass field read through an attribute", "vllm",
     "vllm/v1/worker/gpu/spec_decode/standalone_ar/speculator.py", 371, "num_scheduled_tokens", 0,
     "ndarray"),
    ("references", "dataclass field InputBatch.num_scheduled_tokens", "vllm",
     "vllm/v1/worker/gpu/input_batch.py", 59, "num_scheduled_tokens", 0, ""),
    ("references", "dataclass field PoolingMetadata.prompt_lens", "vllm",
     "vllm/v1/pool/metadata.py", 61, "prompt_lens", 0, ""),
    ("calls", "helper _sample_frame_indices (2 callers in its file)", "vllm",
     "vllm/assets/video.py", 18, "_sample_frame_indices", 0, ""),
    ("calls", "method EncoderRunner.gather_mm_embeddings", "vllm",
     "vllm/v1/worker/gpu/mm/encoder_runner.py", 207, "gather_mm_embeddings", 0, ""),
]


@dataclass
class Answer:
    text: str | None = None
    first_s: float | None = None
    warm_s: list[float] = field(default_factory=list)
    error: str | None = None


def name_column(line_text: str, name: str, nth: int) -> int:
    """0-based column of the nth whole-identifier occurrence of `name` (also after a dot)."""
    hits = [m.start() for m in re.finditer(r"(?<!\w)%s(?!\w)" % re.escape(name), line_text)]
    if len(hits) <= nth:
        raise ValueError(f"{name!r} (occurrence {nth}) not on line: {line_text.strip()}")
    return hits[nth]


def residency(text: str | None) -> str:
    """host / tensor / unknown / other, read from a type answer."""
    if not text or re.fullmatch(r"\s*(Unknown|Any|typing\.Any|unknown|None)?\s*", text):
        return "unknown"
    if re.fullmatch(r"\s*(builtins\.|typing\.)?(list|List|tuple)(\[(Unknown|Any|typing\.Any)\])?\s*", text):
        return "unknown"  # a container whose elements are not typed says nothing of them
    if re.search(r"\w*Tensor\b|\bParameter\b", text):
        return "tensor"
    if re.search(r"ndarray|NDArray|numpy|\b(list|List|int|float|bool|str|tuple|Tuple|dict|Dict|"
                 r"BatchEncoding|BatchFeature|generic)\b", text):
        return "host"
    return "other"


def right(expected: str, answer: str) -> bool:
    return (expected == "host" and answer == "host") or (expected == "device" and answer == "tensor")


def hover_type(result: Any) -> str | None:
    """The type in an LSP hover: the first code block, less a `(kind) name:` prefix."""
    if not result:
        return None
    contents = result.get("contents") if isinstance(result, dict) else result
    if isinstance(contents, list):
        contents = contents[0] if contents else ""
    value = contents.get("value", "") if isinstance(contents, dict) else str(contents)
    block = re.search(r"```\w*\n(.*?)\n```", value, re.S)
    text = (block.group(1) if block else value).strip()
    text = " ".join(part.strip() for part in text.splitlines())
    prefix = re.match(r"\([\w ]+\)\s+[\w.]+\s*:\s*(.*)", text)
    return (prefix.group(1) if prefix else text).strip() or None


# --- engines -----------------------------------------------------------------------------
class LspEngine:
    def __init__(self, name: str, argv: list[str], settings: dict[str, Any], log_dir: Path,
                 config: tuple[str, str] | None = None) -> None:
        self.name, self.argv, self.settings, self.log_dir = name, argv, settings, log_dir
        self.config = config  # (file name, text) written into each root while the server runs
        self.written: list[Path] = []
        self.clients: dict[Path, LspClient] = {}
        self.opened: dict[Path, str] = {}
        self.init_s: dict[str, float] = {}

    def _client(self, root: Path) -> LspClient:
        if root not in self.clients:
            if self.config and not (root / self.config[0]).exists():
                (root / self.config[0]).write_text(self.config[1])
                self.written.append(root / self.config[0])
            client = LspClient(self.argv, root, self.settings,
                               stderr_path=self.log_dir / f"{self.name}-{root.name}.log")
            self.init_s[str(root)] = client.initialize()
            self.clients[root] = client
        return self.clients[root]

    def _uri(self, root: Path, path: Path) -> tuple[LspClient, str]:
        client = self._client(root)
        if path not in self.opened:
            self.opened[path] = client.open(path)
        return client, self.opened[path]

    def hover(self, root: Path, path: Path, line0: int, col: int) -> Answer:
        client, uri = self._uri(root, path)
        answer = Answer()
        try:
            for attempt in range(WARM_REPEATS + 1):
                start = time.perf_counter()
                result = client.request("textDocument/hover", client.position(uri, line0, col + 1))
                took = time.perf_counter() - start
                if attempt == 0:
                    answer.first_s, answer.text = took, hover_type(result)
                else:
                    answer.warm_s.append(took)
        except LspError as exc:
            answer.error = str(exc)
        return answer

    def references(self, root: Path, path: Path, line0: int, col: int) -> list[tuple[str, int]]:
        client, uri = self._uri(root, path)
        params = client.position(uri, line0, col + 1) | {"context": {"includeDeclaration": True}}
        found = client.request("textDocument/references", params, timeout=600) or []
        return [(loc["uri"], loc["range"]["start"]["line"]) for loc in found]

    def calls(self, root: Path, path: Path, line0: int, col: int) -> dict[str, list[str]]:
        client, uri = self._uri(root, path)
        items = client.request("textDocument/prepareCallHierarchy",
                               client.position(uri, line0, col + 1), timeout=300) or []
        if not items:
            return {"incoming": [], "outgoing": []}
        incoming = client.request("callHierarchy/incomingCalls", {"item": items[0]}, timeout=600) or []
        outgoing = client.request("callHierarchy/outgoingCalls", {"item": items[0]}, timeout=600) or []
        return {"incoming": [c["from"]["name"] + ":" + str(c["from"]["range"]["start"]["line"] + 1)
                             for c in incoming],
                "outgoing": [c["to"]["name"] for c in outgoing]}

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        for path in self.written:
            path.unlink(missing_ok=True)


class JediEngine:
    name = "jedi"

    def __init__(self, python: str) -> None:
        import jedi  # the engine under test, installed in the bench interpreter

        self.jedi = jedi
        self.python = python
        self.projects: dict[Path, Any] = {}

    def _script(self, root: Path, path: Path) -> Any:
        if root not in self.projects:
            self.projects[root] = self.jedi.Project(root, environment_path=self.python)
        return self.jedi.Script(path.read_text(errors="replace"), path=path,
                                project=self.projects[root])

    def hover(self, root: Path, path: Path, line0: int, col: int) -> Answer:
        answer = Answer()
        try:
            for attempt in range(WARM_REPEATS + 1):
                start = time.perf_counter()
                names = self._script(root, path).infer(line0 + 1, col + 1)
                took = time.perf_counter() - start
                if attempt == 0:
                    answer.first_s = took
                    answer.text = " | ".join(n.full_name or n.name for n in names) or None
                else:
                    answer.warm_s.append(took)
        except Exception as exc:  # jedi raises many kinds on odd code; the answer is "none"
            answer.error = f"{type(exc).__name__}: {exc}"
        return answer

    def references(self, root: Path, path: Path, line0: int, col: int) -> list[tuple[str, int]]:
        refs = self._script(root, path).get_references(line0 + 1, col + 1, scope="project")
        return [(str(r.module_path), r.line - 1) for r in refs]

    def calls(self, root: Path, path: Path, line0: int, col: int) -> dict[str, list[str]]:
        raise NotImplementedError("jedi has no call hierarchy")

    def close(self) -> None:
        pass


class PyreEngine:
    """Pyre's `types(path=...)` query, answered without a daemon (one whole-project pass per root)."""

    name = "pyre"

    def __init__(self, bin_dir: Path, site_packages: str, threads: int, timeout: int) -> None:
        self.bin_dir, self.site_packages, self.threads = bin_dir, site_packages, threads
        self.timeout = timeout
        self.types: dict[Path, dict[str, list[dict[str, Any]]]] = {}
        self.pass_s: dict[str, float] = {}

    def prepare(self, root: Path, rel_paths: list[str]) -> None:
        query = "types(%s)" % ", ".join(f"path='{p}'" for p in sorted(set(rel_paths)))
        argv = [str(self.bin_dir / "pyre"), "--noninteractive", "--source-directory", ".",
                "--search-path", self.site_packages, "--number-of-workers", str(self.threads),
                "query", "--no-daemon", query]
        start = time.perf_counter()
        rc, out = run_group(argv, root, self.timeout,
                            env={"PATH": f"{self.bin_dir}:/usr/bin:/bin", "HOME": "/root"}, merge=False)
        try:
            response = json.loads(out)["response"] if rc == 0 else None
        except (ValueError, KeyError):
            response = None
        self.pass_s[str(root)] = time.perf_counter() - start
        if response is None:
            self.types[root] = {}
            return
        self.types[root] = {item["path"]: item["types"] for item in response if "types" in item}

    def hover(self, root: Path, path: Path, line0: int, col: int, name: str = "") -> Answer:
        entries = self.types.get(root, {}).get(str(path.relative_to(root)), [])
        end = col + len(name)
        fits = [e for e in entries if e["location"]["start"]["line"] == line0 + 1
                and e["location"]["stop"]["line"] == line0 + 1
                and e["location"]["stop"]["column"] == end and e["location"]["start"]["column"] <= col]
        fits.sort(key=lambda e: -e["location"]["start"]["column"])
        return Answer(text=fits[0]["annotation"] if fits else None)

    def close(self) -> None:
        pass


# --- runs ------------------------------------------------------------------------------------
def source_root(args: argparse.Namespace, source: str) -> Path:
    return {"vllm": Path(args.vllm), "sglang": Path(args.sglang)}.get(source) or Path(args.corpus) / source


def ask_rows(engine: Any, rows: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    if isinstance(engine, PyreEngine):
        by_root: dict[Path, list[str]] = {}
        for row in rows:
            by_root.setdefault(source_root(args, row["source"]), []).append(row["path"])
        for question, _, source, rel, *_ in PROBES:
            if question == "hover":
                by_root.setdefault(source_root(args, source), []).append(rel)
        for root, paths in by_root.items():
            engine.prepare(root, paths)
    out = []
    for row in rows:
        root = source_root(args, row["source"])
        path = root / row["path"]
        text = path.read_text(errors="replace").splitlines()[row["at_line"] - 1]
        col = name_column(text, row["name"], row["nth"])
        if isinstance(engine, PyreEngine):
            answer = engine.hover(root, path, row["at_line"] - 1, col, row["name"])
        else:
            answer = engine.hover(root, path, row["at_line"] - 1, col)
        kind = residency(answer.text)
        out.append({"id": row["id"], "expected": row["expected"], "kind": row["kind"],
                    "answer": answer.text, "residency": kind, "right": right(row["expected"], kind),
                    "first_s": answer.first_s, "warm_s": answer.warm_s, "error": answer.error})
        print(f"  {engine.name:12} {row['id']:22} {row['expected']:6} {kind:7} {answer.text}", flush=True)
    return out


def ask_probes(engine: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for question, what, source, rel, line, name, nth, expected in PROBES:
        root = source_root(args, source)
        path = root / rel
        col = name_column(path.read_text(errors="replace").splitlines()[line - 1], name, nth)
        record: dict[str, Any] = {"question": question, "what": what, "expected": expected}
        start = time.perf_counter()
        try:
            if question == "hover":
                answer = (engine.hover(root, path, line - 1, col, name) if isinstance(engine, PyreEngine)
                          else engine.hover(root, path, line - 1, col))
                record["answer"] = answer.text
            elif isinstance(engine, PyreEngine):
                raise NotImplementedError("not asked of pyre here (no LSP session)")
            elif question == "references":
                refs = engine.references(root, path, line - 1, col)
                lines = [_line_of(uri, line0) for uri, line0 in refs]
                assigns = [t for t in lines if re.search(r"\b%s\s*(:[^=]*)?=[^=]" % name, t)]
                record["answer"] = {"locations": len(refs), "files": len({u for u, _ in refs}),
                                    "assignments_or_keywords": len(assigns)}
            else:
                record["answer"] = engine.calls(root, path, line - 1, col)
        except (NotImplementedError, LspError) as exc:
            record["answer"], record["error"] = None, str(exc)
        record["seconds"] = round(time.perf_counter() - start, 3)
        print(f"  {engine.name:12} {question:10} {what[:40]:40} {str(record['answer'])[:110]}", flush=True)
        out.append(record)
    return out


def _line_of(uri: str, line0: int) -> str:
    path = Path(uri.removeprefix("file://")) if uri.startswith("file://") else Path(uri)
    try:
        return path.read_text(errors="replace").splitlines()[line0]
    except (OSError, IndexError):
        return ""


def make_engine(name: str, args: argparse.Namespace, log_dir: Path) -> Any:
    bins = Path(args.bin_dir)
    if name == "pyrefly":
        # Without a config file the server indexes no project (find-references sees open files
        # only) and leaves unannotated functions' returns Unknown: both are set here.
        config = ("pyrefly.toml", f'python-interpreter-path = "{args.python}"\n'
                  'check-unannotated-defs = true\ninfer-return-types = "checked"\n')
        return LspEngine(name, [str(bins / "pyrefly"), "lsp", "--indexing-mode", "lazy-blocking",
                                "-j", str(args.threads)],
                         {"python": {"pythonPath": args.python}}, log_dir, config)
    if name == "basedpyright":
        return LspEngine(name, [str(bins / "basedpyright-langserver"), "--stdio"],
                         {"python": {"pythonPath": args.python},
                          "basedpyright": {"analysis": {"diagnosticMode": "openFilesOnly",
                                                        "typeCheckingMode": "off"}}}, log_dir)
    if name == "jedi":
        return JediEngine(args.python)
    if name == "pyre":
        return PyreEngine(Path(args.pyre_bin_dir), args.site_packages, args.threads, args.cold_timeout)
    raise SystemExit(f"unknown engine {name!r}: use pyrefly, basedpyright, jedi or pyre")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vllm", required=True, help="unzipped vllm wheel (holds vllm/)")
    parser.add_argument("--sglang", required=True, help="unzipped sglang wheel (holds sglang/)")
    parser.add_argument("--corpus", required=True, help="materialize.py output (DEV-*/DEVN-* repos)")
    parser.add_argument("--python", required=True, help="interpreter with numpy, torch, transformers")
    parser.add_argument("--bin-dir", required=True, help="folder with pyrefly, basedpyright(-langserver)")
    parser.add_argument("--pyre-bin-dir", default="", help="folder with pyre and pyre.bin")
    parser.add_argument("--engines", default="pyrefly,basedpyright,jedi,pyre")
    parser.add_argument("--rows", default=str(ROWS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="also time whole-package runs on vLLM")
    parser.add_argument("--cold-timeout", type=int, default=600, help="seconds per cold run")
    parser.add_argument("--cold-engines", default="", help="engines to time cold (default: --engines)")
    parser.add_argument("--json", default="", help="write every answer here")
    parser.add_argument("--markdown", default="", help="write the tables here")
    args = parser.parse_args()
    args.site_packages = subprocess.run([args.python, "-c", "import numpy,os;print(os.path.dirname("
                                         "os.path.dirname(numpy.__file__)))"], capture_output=True,
                                        text=True, check=True).stdout.strip()
    rows = [json.loads(line) for line in Path(args.rows).read_text().splitlines() if line.strip()]
    names = [n for n in args.engines.split(",") if n and n != "none"]
    log_dir = Path(args.json or "/tmp/type_engines.json").with_suffix(".logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    for name in names:
        engine = make_engine(name, args, log_dir)
        start = time.perf_counter()
        try:
            answers = ask_rows(engine, rows, args)
            probes = ask_probes(engine, args)
        finally:
            engine.close()
        results[name] = {"rows": answers, "probes": probes, "seconds": round(time.perf_counter() - start, 1),
                         "init_s": getattr(engine, "init_s", {}), "pass_s": getattr(engine, "pass_s", {})}
    cold_names = [n for n in args.cold_engines.split(",") if n] or names
    cold = cold_runs(args, cold_names) if args.cold else {}
    tables = summary(results) if results else ""
    print(tables)
    for label, run in cold.items():
        print(f"cold {label}: wall {run['wall_s']} s, CPU {run['cpu_s']} s, rc {run['rc']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "cold": cold}, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(tables)


if __name__ == "__main__":
    main()
