"""Registered Python matchers: what they must catch and the look-alikes they leave."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rltrefactor.matching.matchers.context import is_setup_name
from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS

from .helpers import hits


def matcher(matcher_id: str, **options):
    return PYTHON_MATCHERS[matcher_id].build("test-rule", matcher_id, options)


def lines(m, code: str, **kwargs) -> list[int]:
    return [line for line, _ in hits(m, code, **kwargs)]


@pytest.mark.parametrize(
    ("name", "setup"),
    [
        ("__init__", True), ("__repr__", True), ("profile_run", True), ("capture_model", True),
        ("_dummy_sampler_run", True), ("compile_or_warm_up_model", True), ("_allocate_buffers", True),
        ("load_weights", True), ("initialize_kv_cache", True),
        ("execute_model", False), ("build", False), ("start_load_kv", False), ("__call__", False),
        ("_prepare_inputs", False), ("allocate_slots", False), ("forward", False),
    ],
)  # fmt: skip
def test_setup_function_names(name, setup):
    assert is_setup_name(name) is setup


def test_device_scalar_read_skips_host_arrays_and_numpy():
    m = matcher("tensor-to-host-conversion")
    code = (
        "import numpy as np\n"
        "def step(x, lens_np, counts_cpu):\n"
        "    a = int(np.sum(lens_np))\n"
        "    b = float(counts_cpu.max())\n"
        "    c = bool(x.any())\n"
        "    if x.sum() > 0 and x.max() > 1:\n"
        "        pass\n"
        "    if logger.isEnabledFor(DEBUG):\n"
        "        d = int(x.sum())\n"
    )
    # Line 9 runs only when debugging: the engine leaves it out for `runs: per-step`
    # rules (tests/core/test_engine.py), the matcher on its own does not ask.
    assert lines(m, code) == [5, 6, 9]


def test_compared_probe_follows_local_names_but_not_declared_flags():
    m = matcher("compared-probe", calls=["get_device_capability"])
    code = (
        "def pick():\n"
        "    cap = torch.cuda.get_device_capability()\n"
        "    major = cap[0]\n"
        "    is_hopper = major >= 9\n"
        "    if is_hopper:\n"
        "        return 1\n"
        "    if major == 8:\n"
        "        return 2\n"
        "def other(major):\n"
        "    if major == 8:\n"
        "        return 3\n"
    )
    assert lines(m, code) == [7]


def test_compared_probe_follows_attributes_assigned_from_a_probe_and_nothing_else():
    m = matcher("compared-probe", calls=["get_device_capability", "pop"])
    code = (
        "class Backend:\n"
        "    def __init__(self, heads):\n"
        "        self.cap = torch.cuda.get_device_capability()\n"
        "        self.major = self.cap[0]\n"
        "        if self.major >= 10:\n"
        "            pass\n"
        "        if self.heads <= 64:\n"  # another attribute of the same object
        "            pass\n"
        "def restore(names):\n"
        "    for name in names:\n"
        "        saved[name] = sys.modules.pop(name)\n"
        "        if name in names:\n"  # a subscript target binds no name
        "            pass\n"
    )
    assert lines(m, code) == [5]


def test_compared_probe_outside_branches_when_asked():
    code = (
        "def pick():\n"
        "    flag = torch.cuda.get_device_capability()[0] >= 9\n"
        "    label = f'sm{torch.cuda.get_device_capability()[0]}'\n"
    )
    assert lines(matcher("compared-probe", calls=["get_device_capability"]), code) == []
    anywhere = matcher("compared-probe", calls=["get_device_capability"], **{"branches-only": False})
    assert lines(anywhere, code) == [2]


def test_compared_probe_truthiness_only_when_asked():
    code = "import importlib.util\nif importlib.util.find_spec('x'):\n    pass\n"
    assert lines(matcher("compared-probe", calls=["find_spec"]), code) == []
    assert lines(matcher("compared-probe", calls=["find_spec"], truthiness=True), code) == [2]


@pytest.mark.parametrize("path", ["sglang/srt/layers/probe.py", "src/sglang/srt/layers/probe.py"])
def test_a_modules_lookup_probes_a_package_only_by_a_literal_other_package(path):
    """``sys.modules`` with a computed key is a cache of what was loaded (vLLM's kernel
    variants, SGLang's stub loader); the package's own modules are installed with it."""
    m = matcher("compared-probe", attributes=["sys.modules"], truthiness=True)
    code = (
        "import sys\n"
        "def pick(name):\n"
        "    if 'triton' in sys.modules:\n"                    # 3
        "        return 1\n"
        "    if name not in sys.modules:\n"
        "        return 2\n"
        "    if 'sglang.multimodal_gen' not in sys.modules:\n"
        "        return 3\n"
        "    if sys.modules.get('flash_attn') is not None:\n"  # 9
        "        return 4\n"
        "    if sys.modules.get(name) is not None:\n"
        "        return 5\n"
        "    loaded = sys.modules[name]\n"
        "    if loaded:\n"
        "        return 6\n"
        "    spec = sys.modules['xformers']\n"
        "    if spec:\n"                                      # 17
        "        return 7\n"
    )
    assert lines(m, code, path=path) == [3, 9, 17]


def test_private_writes_exempt_self_imports_protocols_and_factories():
    m = matcher("foreign-private-attribute")
    code = (
        "import torch\n"
        "class Pool:\n"
        "    def __eq__(self, other):\n"
        "        other._seen = True\n"
        "    @classmethod\n"
        "    def make(cls):\n"
        "        pool = cls()\n"
        "        pool._free = []\n"
        "        return pool\n"
        "    def step(self, peer):\n"
        "        self._free = []\n"
        "        torch._C._flag = 1\n"
        "        peer._free.append(1)\n"
        "        n = peer._free\n"
    )
    assert lines(m, code) == [13]
    assert lines(matcher("foreign-private-attribute", writes=False, reads=True), code) == [14]


def test_container_mutation_needs_a_component_owner():
    m = matcher("collaborator-container-mutation")
    code = (
        "def step(self, manager, request, snapshots):\n"
        "    self.waiting.remove(request)\n"
        "    self.scheduler.waiting.remove(request)\n"
        "    self.output.tokens.append(1)\n"
        "    request.output_token_ids.append(1)\n"
        "    manager.snapshots.pop(1)\n"
        "    snapshots.pop(1)\n"
        "    self.kv_cache_manager.req_to_blocks[1] = []\n"
        "    self.kv_cache_manager._blocks.pop(1)\n"
    )
    assert lines(m, code) == [3, 6, 8]


def test_container_mutation_in_reset_is_run_time_not_setup():
    m = matcher("collaborator-container-mutation")
    code = (
        "class Runner:\n"
        "    def __init__(self, scheduler):\n"
        "        scheduler.waiting.clear()\n"
        "    def reset_state(self):\n"
        "        self.scheduler.waiting.clear()\n"
        "    def _init_cache(self):\n"
        "        self.kv_cache_manager.req_to_blocks.clear()\n"
    )
    assert lines(m, code) == [5]


def test_container_mutation_owner_regex_is_configurable():
    code = "def f(self):\n    self.batch.rows.append(1)\n"
    assert lines(matcher("collaborator-container-mutation"), code) == []
    assert lines(matcher("collaborator-container-mutation", **{"owner-regex": "batch"}), code) == [2]


def test_temporary_on_self_versus_state():
    m = matcher("per-call-temporary-on-self")
    code = (
        "class R:\n"
        "    def step(self):\n"
        "        self._tmp = 1\n"
        "        use(self._tmp)\n"
        "        use(self._count)\n"
        "        self._count = 2\n"
        "        self._shared = 3\n"
        "        self.public = 4\n"
        "        use(self.public)\n"
        "        self._wrapped = wrap(self._wrapped)\n"
        "        use(self._wrapped)\n"
        "        self._n += 1\n"
        "        use(self._n)\n"
        "    def read(self):\n"
        "        return self._shared\n"
        "    @property\n"
        "    def cached(self):\n"
        "        self._c = 1\n"
        "        return self._c\n"
        "    def resize(self, n):\n"
        "        self._cache.size = n\n"  # changes the object it holds: a read of _cache
        "        use(self._cache)\n"
    )
    assert lines(m, code) == [3]


def test_a_temporary_another_method_reads_by_name_is_state():
    m = matcher("per-call-temporary-on-self")
    code = (
        "class Optimizer:\n"
        "    def enable_checkpoint(self):\n"
        "        self._checkpoint_info = None\n"
        "        for group in self.groups:\n"
        "            if self._checkpoint_info is None:\n"
        "                self._checkpoint_info = info_of(group)\n"
        "        self._scratch = 1\n"
        "        use(self._scratch)\n"
        "    def checkpoint_info(self):\n"
        "        return getattr(self, '_checkpoint_info', None)\n"
        "    def other(self):\n"
        "        return getattr(other, '_scratch', None)\n"  # another object's attribute of that name
    )
    assert lines(m, code) == [7]


def test_guard_only_for_unconditional_init_assignments():
    m = matcher("guard-for-constructed-attribute")
    code = (
        "class W:\n"
        "    limit = 4\n"
        "    def __init__(self, c):\n"
        "        self.a = 1\n"
        "        try:\n"
        "            self.b = 2\n"
        "        except E:\n"
        "            pass\n"
        "    def run(self):\n"
        "        return hasattr(self, 'a'), hasattr(self, 'b'), getattr(self, 'limit', 0), getattr(self, 'a')\n"
        "    def __setattr__(self, k, v):\n"
        "        return hasattr(self, 'a')\n"
        "    def reset_parameters(self):\n"
        "        return hasattr(self, 'a')\n"
    )
    assert [b["NAME"] for _, b in hits(m, code)] == ["a", "limit"]
    restored = "class P:\n    def __init__(self):\n        self.a = 1\n    def __setstate__(self, s):\n        pass\n    def run(self):\n        return hasattr(self, 'a')\n"
    assert lines(m, restored) == []


def test_release_pairs_need_the_same_owner_and_risky_code_between():
    m = matcher("release-not-on-failure-path")
    code = (
        "def f(a, b):\n"
        "    a.acquire()\n"
        "    work()\n"
        "    b.release()\n"
        "    a.acquire()\n"
        "    n = len(x)\n"
        "    a.release()\n"
    )
    assert lines(m, code) == []
    assert lines(m, "def f(a):\n    a.lock()\n    work()\n    a.unlock()\n") == [2]


def test_swallowed_error_in_cleanup_context_only():
    m = matcher("swallowed-error-in-cleanup")
    code = (
        "def release_blocks(p):\n"
        "    try:\n"
        "        p.free()\n"
        "    except Exception as exc:\n"
        "        errors.append(exc)\n"
        "    try:\n"
        "        p.free()\n"
        "    except BaseException:\n"
        "        return None\n"
        "def compute(p):\n"
        "    try:\n"
        "        p.run()\n"
        "    except Exception:\n"
        "        pass\n"
    )
    assert lines(m, code) == [8]


def test_string_compared_field_both_orders_and_membership():
    m = matcher("string-compared-field")
    code = (
        "a = req.status == 'running'\n"
        "b = 'running' != req.status\n"
        "c = self.mode in ('a', 'b')\n"
        "d = req.name == 'running'\n"
        "e = req.status == other.status\n"
        "f = batch.req_status[i] == 'x'\n"
        "g = 'momentum_buffer' in state\n"
    )
    assert lines(m, code) == [1, 2, 3, 6]
    names = matcher("string-compared-field", **{"field-regex": "^architectures$", "literal-in-field": True})
    assert lines(names, "a = 'Llama' in cfg.architectures\nb = 'x' in state\n") == [1]


def test_string_compared_field_leaves_alone_what_no_state_of_the_code_holds():
    m = matcher("string-compared-field")
    # vLLM style: what a daemon's reply says, an emptiness test, and a mapping's entry by key.
    received = (
        "def load(conn):\n"
        "    reply = recv_msg(conn)\n"
        "    status = reply.get('status')\n"
        "    if status == 'mismatch':\n"
        "        raise ValueError(status)\n"
        "    code = reply['status']\n"
        "    return code == 'ok'\n"
        "def render(state):\n"
        "    return state is None or state == ''\n"
        "def schedule(self):\n"
        "    return self.state[SCHEDULER_TYPE] == 'fixed_linear' or self.state['kind'] == 'x'\n"
        "def shell_call(item, valid):\n"
        "    status = item.get('status', 'completed')\n"
        "    if not valid:\n"
        "        status = 'incomplete'\n"  # a default rebound on one branch: still the item's status
        "    return valid and status == 'completed'\n"
    )
    assert lines(m, received) == []
    # SGLang style look-alikes: a state read off an object, a position in a list of states,
    # and a local bound from one.
    own = (
        "def step(self, req, i):\n"
        "    status = req.status\n"
        "    if status == 'running':\n"
        "        return self.req_status[i] == 'waiting'\n"
        "    return self.phase != ''  and self.phase == 'decode'\n"
        "def finish(req, aborted):\n"
        "    status = req.status\n"
        "    if aborted:\n"
        "        status = 'aborted'\n"
        "    return status == 'finished'\n"
    )
    assert lines(m, own) == [3, 4, 5, 10]


def test_abbreviations_first_binding_per_scope_and_configurable():
    m = matcher("abbreviated-new-name")
    code = "def f(blk, hs):\n    blk = 1\n    self.kvc = 2\n    call(kvc=3)\nkvc = 4\n"
    assert [b["NAME"] for _, b in hits(m, code)] == ["blk", "hs", "kvc", "kvc"]
    # The engines' own idioms are not in the default list.
    assert lines(m, "for req in reqs:\n    bs = req.bs\n    rid = req.rid\n") == []
    custom = matcher("abbreviated-new-name", abbreviations={"lyr": "layer"})
    assert lines(custom, "lyr = 1\nblk = 2\n") == [1]
    (token,) = m.prefilter
    assert token.search("self._hs_ = 1") and not token.search("abs(grid) + blocks")


def test_numbers_in_branches_skip_module_level_dims_and_allowed():
    m = matcher("unexplained-number-in-branch")
    code = (
        "if x > 64:\n"
        "    pass\n"
        "def f(x):\n"
        "    if x.dim() == 5 or x > -1 or len(args) < 3 or x == 2.0:\n"
        "        pass\n"
        "    while n < 4096:\n"
        "        pass\n"
        "    return 1 if n > 0 else 2\n"
    )
    assert [b["VALUE"] for _, b in hits(m, code)] == ["2.0", "4096"]


def test_positional_boolean_parameters_and_arguments():
    params = matcher("positional-boolean-parameter", **{"methods-only": False})
    code = (
        "def run(a, b: bool, *, c: bool = False):\n"
        "    pass\n"
        "def _private(a, b=True):\n"
        "    pass\n"
        "class K:\n"
        "    def toggle(self, on: bool):\n"
        "        pass\n"
        "    @override\n"
        "    def run(self, a, use_flag=False):\n"
        "        pass\n"
        "def start(a, use_graph: bool, is_prefill=True, keepdim: bool = False):\n"
        "    pass\n"
    )
    assert [b["NAME"] for _, b in hits(params, code)] == ["use_graph", "is_prefill"]
    # By default only methods, the interfaces other components call, are reviewed.
    methods = matcher("positional-boolean-parameter")
    assert hits(methods, code) == []
    in_class = "class Runner:\n    def start(self, a, use_graph: bool):\n        def inner(x, use_y: bool = False):\n            pass\n"
    assert [b["NAME"] for _, b in hits(methods, in_class)] == ["use_graph"]
    args = matcher("bare-boolean-argument")
    code = "f(x, True)\ng(True)\nd.get(k, False)\nf(x, flag=True)\nassertEqual(a, True)\ntorch.ops.vllm.gather(x, True)\n"
    assert lines(args, code) == [1]


def test_wide_tuple_only_for_public_top_level_functions():
    m = matcher("wide-tuple-return", **{"min-elements": 3})
    code = (
        "def a():\n    return 1, 2, 3\n"
        "def b():\n    return 1, 2\n"
        "def _c():\n    return 1, 2, 3\n"
        "def d():\n    def inner():\n        return 1, 2, 3\n    return inner\n"
    )
    assert lines(m, code) == [2]


def test_silent_import_fallback_variants():
    m = matcher("silent-import-fallback")
    code = (
        "try:\n    import a\nexcept (ImportError, AttributeError):\n    import b as a\n"
        "try:\n    import c\nexcept ImportError:\n    c = None\n"
        "try:\n    import d\nexcept ImportError:\n    warnings.warn('no d')\n    d = e\n"
        "try:\n    x = 1\nexcept ImportError:\n    import f\n"
    )
    assert lines(m, code) == [3]


def _token_lines(m, code: str) -> list[int]:
    from rltrefactor.matching.regions.lines import LineIndex
    from rltrefactor.matching.regions.tokens import token_lines

    return sorted(token_lines(code, m.prefilter, LineIndex(code)))


def test_string_compared_field_tokens_are_comparisons_with_literals():
    """Every form the matcher reports holds a token; state that is only assigned or
    compared with a non-literal does not make a statement worth parsing."""
    m = matcher("string-compared-field", prefilter=["state", "status", "mode"])
    reported = (
        "a = req.status == 'running'\n"
        "b = 'running' != req.status\n"
        "c = self.mode in ('a', 'b')\n"
        "f = batch.req_status[i] == 'x'\n"
        "if (\n"
        "    self.state\n"
        "    == \"wrapped\"\n"
        "):\n"
        "    pass\n"
    )
    assert lines(m, reported) == _token_lines(m, reported) == [1, 2, 3, 4, 6]
    quiet = "state = {}\nself.status = Status.RUNNING\nif req.status == other.status:\n    pass\n"
    assert _token_lines(m, quiet) == [] and lines(m, quiet) == []


def test_probe_tokens_are_whole_words_and_bare_names_outside_strings():
    m = matcher("compared-probe", calls=["version"], attributes=["torch.version.cuda"])
    probes = "v = version('triton')\nif torch.version.cuda:\n    pass\nfrom torch.version import cuda\nx = cuda\n"
    assert _token_lines(m, probes) == [1, 2, 4, 5]
    look_alikes = "if sys.version_info >= (3, 11):\n    pass\nprint(torch.__version__)\nx.to('cuda')\ndevice = \"cuda\"\n"
    assert _token_lines(m, look_alikes) == []


def test_positional_boolean_tokens_cover_defaults_after_other_annotations():
    m = matcher("positional-boolean-parameter", **{"methods-only": False})
    code = "def run(x, is_last: Constexpr[bool] = True, use_cache: bool = False):\n    return x\n"
    assert lines(m, code) == [1, 1] and _token_lines(m, code) == [1]
    wrapped = "def run(\n    x,\n    is_last: Constexpr[bool] = True,\n):\n    pass\n"
    assert lines(m, wrapped) == _token_lines(m, wrapped) == [3]
    assert _token_lines(m, "is_last = compute()\nuse_x: int = 1\n") == []


def _starts_a_reported_number(text: str, i: int, allowed: frozenset[str]) -> bool:
    """By hand: ``text[i]`` starts a numeric literal whose text is not allowed."""
    def is_word(c: str) -> bool:
        return c != "" and (c.isalnum() or c in "_.")

    if i > 0 and is_word(text[i - 1]):
        return False
    if text[i] == ".":
        return text[i + 1 : i + 2].isdigit()
    if not text[i].isdigit():
        return False
    rest = text[i + 1 :]
    return not any(
        text_.startswith(text[i]) and rest.startswith(text_[1:]) and not is_word(rest[len(text_) - 1 : len(text_)])
        for text_ in allowed
    )


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="0123.5 x_(<=", max_size=30),
    st.sampled_from([frozenset(), frozenset({"0", "1"}), frozenset({"0", "1", "2", "0.0", "1.0", "-1"}), frozenset({"10", "1"})]),
)
def test_the_number_prefilter_starts_where_an_unallowed_literal_starts(text, allowed):
    from rltrefactor.matching.matchers.readability.names_and_numbers import _literal_start

    found = [m.start() for m in _literal_start(allowed).finditer(text)]
    assert found == [i for i in range(len(text)) if _starts_a_reported_number(text, i, allowed)]


@pytest.mark.parametrize(
    ("matcher_id", "options", "deletion", "look_alike"),
    [
        ("foreign-private-attribute", {"writes": True, "reads": False}, "del batch._cache\n", "out = self.execute_model(batch)\n"),
        ("registration-not-undone-on-failure", {}, "del self.requests[rid]\n",
         "runner = self.model\nself.requests[rid] = req\n"),
        ("chunk-kept-alive-by-loop-variable", {}, "del chunk\n", "runner = self.model\nyield\n"),
    ],
)
def test_deletion_tokens_need_del_as_a_word_of_its_own(matcher_id, options, deletion, look_alike):
    """``model(`` and ``model`` at a line's end are no ``del`` statement: such lines
    select nothing to parse."""
    m = matcher(matcher_id, **options)
    assert _token_lines(m, deletion) == [1]
    assert _token_lines(m, look_alike) == []
