"""string-state-comparison leaves alone values declared closed in another module of the
repository (a ``Literal`` alias, a dataclass field typed with one), read at the reviewed
revision; it keeps reporting what no declaration closes, and values outside the set."""

from __future__ import annotations

import textwrap

import pytest

from rltrefactor.api import ReviewRequest, review
from rltrefactor.config import Config
from rltrefactor.matching.engine import Engine
from rltrefactor.library.loader import load_library
from rltrefactor.matching.matchers.interfaces.repository_modules import module_paths

RULE = "string-state-comparison"
TYPES = """\
from dataclasses import dataclass
from enum import Enum
from typing import Literal

FileStatus = Literal["added", "modified", "deleted"]
Outcome = Literal["new", "pre-existing"]


class Phase(Enum):
    PREFILL = "prefill"


@dataclass(frozen=True)
class Changed:
    status: FileStatus
    phase: Phase


@dataclass(frozen=True)
class Found:
    status: "Outcome | None" = None
"""


class _Modules:
    """Repository modules by path, as the review reads them at the head revision."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read(self, path: str) -> str | None:
        return self.files.get(path)


@pytest.fixture(scope="module")
def engine() -> Engine:
    library = load_library()
    rule = next(r for r in library.rules if r.id == RULE)
    return Engine((rule,), Config(), frozenset({RULE}))


def _lines(engine: Engine, code: str, files: dict[str, str] | None, path: str = "eng/report/text.py") -> list[int]:
    engine.repository_texts = _Modules(files) if files is not None else None
    try:
        outcome = engine.review_file(path, textwrap.dedent(code))
    finally:
        engine.repository_texts = None
    assert not outcome.errors
    return [f.span.line for f in outcome.findings if f.rule_id == RULE]


REPORT = """\
from ..types import Changed, Found

def shown(found: list[Found], changed: list[Changed]):
    new = [f for f in found if f.status == "new"]
    gone = [c for c in changed if c.status in ("deleted", "modified")]
    return new, gone
"""


def test_a_field_typed_with_a_literal_alias_of_another_module_is_left_alone(engine):
    assert _lines(engine, REPORT, {"eng/types.py": TYPES}) == []


def test_without_the_declaring_module_the_comparisons_are_reported(engine):
    assert _lines(engine, REPORT, None) == [4, 5]
    assert _lines(engine, REPORT, {"eng/report/types.py": TYPES}) == [4, 5]  # the import names eng/types.py


def test_a_value_outside_the_declared_set_is_still_reported(engine):
    typo = REPORT.replace('"new"', '"nwe"')
    assert _lines(engine, typo, {"eng/types.py": TYPES}) == [4]


def test_an_enum_field_compared_with_a_string_is_still_reported(engine):
    code = "from eng.types import Changed\n\ndef f(c: Changed):\n    return c.phase == 'prefill'\n"
    assert _lines(engine, code, {"eng/types.py": TYPES}) == [4]


def test_an_alias_re_exported_by_a_package_is_followed(engine):
    code = "from eng import FileStatus\n\ndef f(status: FileStatus):\n    return status == 'added'\n"
    files = {"eng/types.py": TYPES, "eng/__init__.py": "from .types import FileStatus\n"}
    assert _lines(engine, code, files, path="eng/cli.py") == []
    assert _lines(engine, code, {"eng/__init__.py": "from .types import FileStatus\n"}, path="eng/cli.py") == [4]


def test_an_absolute_import_of_the_alias_types_a_parameter(engine):
    code = "from eng.types import FileStatus\n\ndef f(status: FileStatus):\n    return status == 'added'\n"
    assert _lines(engine, code, {"eng/types.py": TYPES}) == []
    assert _lines(engine, code.replace("FileStatus", "str").replace("from eng.types import str\n", ""), {"eng/types.py": TYPES}) == [3]


def test_an_attribute_declared_open_in_another_imported_class_is_reported(engine):
    other = "class Job:\n    status: str\n"
    code = "from ..types import Found\nfrom ..jobs import Job\n\ndef f(x):\n    return x.status == 'new'\n"
    assert _lines(engine, code, {"eng/types.py": TYPES, "eng/jobs.py": other}) == [5]
    assert _lines(engine, code, {"eng/types.py": TYPES}) == []


def test_a_loop_over_a_mapping_keyed_by_an_imported_alias(engine):
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .types import Outcome\n"
        "\n"
        "def summary(counts: 'dict[Outcome, int]'):\n"
        "    for status, n in counts.items():\n"
        "        if status == 'new':\n"
        "            print(n)\n"
        "    return [status for status in counts if status == 'pre-existing']\n"
    )
    assert _lines(engine, code, {"eng/types.py": TYPES}, path="eng/summary.py") == []
    assert _lines(engine, code, None, path="eng/summary.py") == [7, 9]


@pytest.mark.parametrize(("importer", "level", "dotted", "expected"), [
    ("src/eng/report/text.py", 2, "types", ["src/eng/types.py", "src/eng/types/__init__.py"]),
    ("src/eng/report/text.py", 1, "", ["src/eng/report/__init__.py"]),
    ("src/eng/report/text.py", 0, "eng.types", ["src/eng/types.py", "src/eng/types/__init__.py", "eng/types.py", "eng/types/__init__.py"]),
    ("tests/test_text.py", 0, "eng.types", ["eng/types.py", "eng/types/__init__.py", "src/eng/types.py", "src/eng/types/__init__.py"]),
    ("text.py", 2, "types", []),  # above the repository
])
def test_module_paths(importer, level, dotted, expected):
    assert module_paths(importer, level, dotted) == expected


def test_a_git_range_reads_the_declaring_module_at_its_head(repo):
    """The working tree holds the base: a ``Literal`` widened by the change is read as the
    change leaves it, not as the checkout has it."""
    repo.write("eng/__init__.py", "")
    repo.write("eng/types.py", "from typing import Literal\nOutcome = Literal['old']\n")
    repo.write("eng/report.py", "from .types import Outcome\n\ndef f(status: Outcome):\n    return status == 'old'\n")
    base = repo.commit("base")
    repo.write("eng/types.py", "from typing import Literal\nOutcome = Literal['old', 'new']\n")
    repo.write("eng/report.py", "from .types import Outcome\n\ndef f(status: Outcome):\n    return status == 'new'\n")
    head = repo.commit("head")
    repo.git("checkout", "-q", base)
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{head}", use_cache=False, jobs=1, overrides={"select": [RULE]}))
    assert [f for f in result.findings if f.rule_id == RULE] == []
    repo.write("eng/report.py", "from .types import Outcome\n\ndef f(status: Outcome):\n    return status == 'gone'\n")
    typo = repo.commit("typo")
    result = review(ReviewRequest(repo=str(repo.path), diff=f"{base}..{typo}", use_cache=False, jobs=1, overrides={"select": [RULE]}))
    assert [f.span.line for f in result.findings if f.rule_id == RULE] == [4]


def test_a_class_moving_its_own_field_through_strings_is_reported_whatever_other_classes_declare(engine):
    other = "from typing import Literal\n\nclass Job:\n    _state: Literal['running', 'done']\n"
    code = (
        "from .jobs import Job\n"
        "\n"
        "class Worker:\n"
        "    def start(self):\n"
        "        self._state = 'running'\n"
        "\n"
        "    def poll(self):\n"
        "        return self._state == 'done'\n"
    )
    assert _lines(engine, code, {"eng/jobs.py": other}, path="eng/worker.py") == [8]
    assert _lines(engine, code.replace("self._state = 'running'", "pass"), {"eng/jobs.py": other}, path="eng/worker.py") == []


def test_an_unannotated_parameter_hides_a_module_level_annotation(engine):
    code = (
        "from typing import Literal\n"
        "status: Literal['new', 'old'] = 'new'\n"
        "\n"
        "def f(status):\n"
        "    return status == 'new'\n"
        "\n"
        "def g():\n"
        "    return status == 'old'\n"
    )
    assert _lines(engine, code, {}, path="eng/m.py") == [5]


CONFIG = """\
from dataclasses import dataclass

@dataclass
class CacheConfig:
    stage: str = "prefill"

    def __post_init__(self):
        if self.stage not in ("prefill", "decode"):
            raise ValueError(f"stage must be prefill or decode, got {self.stage!r}")
"""


def test_a_field_checked_where_its_dataclass_is_constructed_is_an_option(engine):
    code = "from .config import CacheConfig\n\ndef run(cfg):\n    return cfg.stage == 'decode'\n"
    assert _lines(engine, code, {"eng/config.py": CONFIG}, path="eng/runner.py") == []
    assert _lines(engine, code.replace("'decode'", "'decoding'"), {"eng/config.py": CONFIG}, path="eng/runner.py") == [4]
    moved = CONFIG + "\n    def advance(self):\n        self.stage = 'decode'\n"
    assert _lines(engine, code, {"eng/config.py": moved}, path="eng/runner.py") == [4]


def test_a_cached_outcome_is_recomputed_when_a_module_it_read_changes(repo, tmp_path):
    """A file's findings depend on the modules whose declarations it compared against:
    the result cache holds them only while those modules are unchanged."""
    repo.write("eng/types.py", "from typing import Literal\nOutcome = Literal['old', 'new']\n")
    repo.write("eng/report.py", "from .types import Outcome\n\ndef f(status: Outcome):\n    return status == 'new'\n")
    repo.commit("base")

    def scan() -> list[int]:
        request = ReviewRequest(repo=str(repo.path), paths=(str(repo.path / "eng"),), cache_dir=str(tmp_path / "cache"), jobs=1,
                                overrides={"select": [RULE]})
        return [f.span.line for f in review(request).findings if f.rule_id == RULE and f.path == "eng/report.py"]

    assert scan() == [] and scan() == []
    repo.write("eng/types.py", "from typing import Literal\nOutcome = Literal['old']\n")  # 'new' is no longer declared
    assert scan() == [4]
