"""The per-file model: one parse, one definition walk with one naming scheme, and the
execution map derived from that walk, each made once per file in a review."""

from __future__ import annotations

import collections

import libcst as cst
import pytest

from rltrefactor.context import execution
from rltrefactor.source import syntax
from rltrefactor.api import ReviewRequest, review
from rltrefactor.config import Declared
from rltrefactor.context.filemodel import FileModel
from rltrefactor.matching.matchers.base import FileContext
from rltrefactor.matching.matchers.context import in_cold_function, in_per_step_function

NESTED = '''\
import functools
import torch


class Engine:
    class Options:
        def parse(self):
            return 1

    @torch.inference_mode()
    @functools.wraps(print)
    def step(self, batch):
        def scale(x):
            class Local:
                def m(self):
                    return x
            return Local().m()
        return scale(batch)

    async def serve(self):
        async def handle():
            return 2
        return await handle()

    if torch.cuda.is_available():
        def warmup(self):
            pass


def make():
    return Engine()
'''


def _sites(text: str) -> dict[str, syntax.DefinitionSite]:
    return {site.definition.qualname: site for site in FileModel.read("m.py", text).definitions.sites}


def test_one_walk_names_nested_decorated_and_async_definitions():
    sites = _sites(NESTED)
    assert list(sites) == [
        "Engine", "Engine.Options", "Engine.Options.parse", "Engine.step", "Engine.step.<locals>.scale",
        "Engine.step.<locals>.scale.<locals>.Local", "Engine.step.<locals>.scale.<locals>.Local.m",
        "Engine.serve", "Engine.serve.<locals>.handle", "Engine.warmup", "make",
    ]
    step = sites["Engine.step"]
    assert (step.definition.start_line, step.definition.end_line) == (10, 18)  # from its first decorator
    assert step.decorators == "@torch.inference_mode() @functools.wraps(print)"
    assert (step.owner, step.parent) == ("Engine", None)
    assert sites["Engine.Options.parse"].owner == "Engine.Options"
    # A method of a class defined in a function: owned by that class, nested in the function.
    local_m = sites["Engine.step.<locals>.scale.<locals>.Local.m"]
    assert local_m.owner == "Engine.step.<locals>.scale.<locals>.Local"
    assert local_m.parent is sites["Engine.step.<locals>.scale"]
    assert sites["Engine.step.<locals>.scale"].parent is step and sites["Engine.step.<locals>.scale"].owner is None
    assert sites["Engine.serve.<locals>.handle"].definition.kind == "function"  # async defs are functions
    assert sites["Engine.warmup"].owner == "Engine"  # under an ``if`` of the class body, still a method
    assert sites["Engine.Options"].definition.kind == "class" and sites["Engine.Options"].owner is None


def test_the_execution_map_names_what_the_walk_names_and_agrees_on_every_line():
    model = FileModel.read("m.py", NESTED)
    functions = [site.definition for site in model.definitions.functions]
    assert [(f.qualname, f.start_line, f.end_line) for f in model.execution.functions] == [
        (d.qualname, d.start_line, d.end_line) for d in functions
    ]
    for line in range(1, NESTED.count("\n") + 2):
        enclosing = model.enclosing(line)
        where = model.function_at(line)
        if enclosing.kind == "function":
            assert where is not None and (where.qualname, where.start_line) == (enclosing.qualname, enclosing.start_line)
        elif enclosing.kind == "module":
            assert where is None, line
    # In a class body inside a function, the function is what runs.
    assert model.enclosing(14).qualname == "Engine.step.<locals>.scale.<locals>.Local"
    assert model.function_at(14).qualname == "Engine.step.<locals>.scale"
    assert model.function_at(5) is None  # a class body at module level


TWO_SETTERS = '''\
class Runner:
    @property
    def size(self):
        return self._size

    @size.setter
    def size(self, value):
        self._size = value.item()

    def forward(self, x):
        return x
'''


def test_a_matcher_reads_the_function_holding_its_node_not_the_first_of_that_name():
    """Two definitions share the qualified name ``Runner.size``; a node in the second is
    judged by the second's verdict (a qualified-name lookup found the first)."""
    model = FileModel.read("m.py", TWO_SETTERS, declared=Declared(cold_functions=(), hot_functions=()))
    getter, setter = [f for f in model.execution.functions if f.qualname == "Runner.size"]
    ctx = FileContext(model, cst.parse_module(TWO_SETTERS), text=TWO_SETTERS)
    (item,) = [call for call in ctx.nodes(cst.Call) if ctx.code(call) == "value.item()"]
    assert ctx.function_at(item) == setter != getter
    (returned,) = [node for node in ctx.nodes(cst.Return) if ctx.code(node) == "return x"]
    assert ctx.function_at(returned).qualname == "Runner.forward"
    assert in_per_step_function(returned, ctx) and not in_cold_function(returned, ctx)


def _changed_repo(repo, count: int = 3) -> str:
    """``count`` modified hot files, each with a kept finding, a moved pre-existing one
    and a line added to a function: every stage after matching reads the head again."""
    body = "import torch\n\n\ndef forward(x):\n    return x.sum().item()\n\n\ndef helper(y):\n    return y\n"
    # The call index reads the reviewed files too: it shares their one parse.
    repo.write("pyproject.toml", "[tool.rltrefactor]\ncall-index = true\n")
    for index in range(count):
        repo.write(f"model_executor/runner_{index}.py", f"# runner {index}\n{body}")
    base = repo.commit("base")
    for index in range(count):
        repo.write(f"model_executor/runner_{index}.py", f"# runner {index}\n"
                   + body.replace("    return y\n", "    z = y.max().item()\n    return z\n") + "\n\ndef other():\n    return 2\n")
    head = repo.commit("head")
    return f"{base}..{head}"


@pytest.mark.parametrize("scope", ["lines", "changed-functions", "files"])
def test_each_file_version_is_parsed_and_classified_once_per_review(repo, monkeypatch, scope):
    """More files than the parse cache holds, so only the model can share a parse."""
    span = _changed_repo(repo)
    parsed: collections.Counter[bytes] = collections.Counter()
    classified: collections.Counter[bytes] = collections.Counter()
    real_parse, real_calls = syntax.parse_fresh, execution.collect_calls

    def counting_parse(text: str):
        parsed[text.encode()] += 1
        return real_parse(text)

    def counting_calls(root, functions, gates=None):
        classified[root.text] += 1
        return real_calls(root, functions, gates)

    syntax.parse_tree.cache_clear()
    monkeypatch.setattr(syntax, "parse_fresh", counting_parse)
    monkeypatch.setattr(execution, "collect_calls", counting_calls)
    result = review(ReviewRequest(repo=str(repo.path), diff=span, use_cache=False, scope=scope, jobs=1))
    assert {f.status for f in result.findings if f.rule_id == "host-sync-in-hot-path"} >= {"new"}
    paths = [f"model_executor/runner_{i}.py" for i in range(3)]
    heads = {(repo.path / path).read_bytes() for path in paths}
    bases = {repo.git("show", f"{span.split('..')[0]}:{path}").encode() for path in paths}
    assert heads <= set(parsed) and heads <= set(classified)
    # Every version of a file read whole (the heads; the bases where pre-existing marking reads them).
    assert {text: parsed[text] for text in heads | bases if text in parsed} == dict.fromkeys(
        [text for text in heads | bases if text in parsed], 1)
    assert set(classified.values()) == {1}


def test_the_engine_keeps_the_models_it_is_told_to_hold_up_to_its_bound(monkeypatch):
    from rltrefactor.matching import engine as engine_module
    from rltrefactor.config import Config
    from rltrefactor.matching.engine import Engine

    monkeypatch.setattr(engine_module, "HELD_MODELS", 2)
    engine = Engine((), Config(), frozenset())
    texts = {f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(3)}
    engine.hold_models(texts)
    first = engine.model("m0.py", texts["m0.py"])
    assert engine.model("m0.py", texts["m0.py"]) is first
    assert engine.model("m0.py", "def other():\n    pass\n") is not first  # another version of the file
    assert engine.model("m0.py", texts["m0.py"]) is first
    assert engine.model("m2.py", texts["m2.py"]) is not engine.model("m2.py", texts["m2.py"])  # past the bound
    engine.release_models()
    assert engine.model("m0.py", texts["m0.py"]) is not first


def test_a_held_tree_is_of_the_version_held_now_and_shared_with_its_model():
    from rltrefactor.config import Config
    from rltrefactor.matching.engine import Engine

    engine = Engine((), Config(), frozenset())
    old, new = "def f():\n    return 1\n", "def g():\n    return 2\n"
    engine.hold_models({"m.py": old})
    assert engine.held_tree("m.py", old).root_node.text == old.encode()
    engine.hold_models({"m.py": new})  # the same path, another version
    tree = engine.held_tree("m.py", new)
    assert tree.root_node.text == new.encode()
    assert engine.model("m.py", new).tree is tree
    assert engine.held_tree("m.py", new) is tree
    assert engine.held_tree("m.py", old) is None
