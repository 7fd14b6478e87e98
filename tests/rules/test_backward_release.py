"""entry-removed-only-in-backward: the module-wide evidence its examples do not pin."""

from __future__ import annotations

from rltrefactor.matching.matchers.lifecycle.backward_release import backward_only_stores

from .helpers import hits
from .test_teardown_matchers import lines, matcher

RULE = "entry-removed-only-in-backward"

LIBRARY_OP = (
    "import torch\n"
    "from torch.library import register_autograd as autograd_for\n"
    "_handles: dict = {}\n"
    "@torch.library.impl(_lib, 'dispatch', 'CUDA')\n"
    "def _dispatch(x, ids):\n"
    "    handle = _buffer.dispatch(x)\n"
    "    _handles[ids.item()] = handle\n"              # 7
    "    return x\n"
    "def _dispatch_backward(ctx, grad):\n"
    "    _handles.pop(ctx.key, None)\n"
    "    return grad\n"
    "def _dispatch_setup(ctx, inputs, output):\n"
    "    _handles[ctx.key] = output\n"                 # 13: runs only when autograd records
    "autograd_for('ep::dispatch', _dispatch_backward, setup_context=_dispatch_setup)\n"
)


def test_library_registration_through_an_import_alias_names_the_remover():
    assert lines(matcher(RULE), LIBRARY_OP) == [7]
    assert hits(matcher(RULE), LIBRARY_OP)[0][1] == {"TABLE": "_handles", "REMOVERS": "`_dispatch_backward`"}


def test_the_op_itself_is_not_backward_code():
    # In torch.library.register_autograd(op, backward) the first argument is the op.
    code = LIBRARY_OP.replace("'ep::dispatch', _dispatch_backward", "_dispatch, _dispatch_backward")
    assert lines(matcher(RULE), code) == [7]


def test_a_removal_on_a_forward_path_clears_the_table():
    code = LIBRARY_OP + "def reset():\n    _handles.clear()\n"
    assert lines(matcher(RULE), code) == []
    rebinding = LIBRARY_OP + "def reset():\n    global _handles\n    _handles = {}\n"
    assert lines(matcher(RULE), rebinding) == []


def test_a_helper_counts_as_backward_only_when_every_caller_is_backward():
    code = (
        "import torch\n"
        "_saved = {}\n"
        "def _drop(key):\n"
        "    _saved.pop(key)\n"
        "def keep(x, key):\n"
        "    _saved[key] = x\n"                        # 6
        "    x.register_hook(lambda g: _drop(key))\n"
        "    return x\n"
    )
    assert lines(matcher(RULE), code) == [6]
    also_forward = code + "def evict(key):\n    _drop(key)\n"
    assert lines(matcher(RULE), also_forward) == []


def test_grad_mode_tests_leave_the_store_alone_only_where_they_guard_it():
    code = (
        "import torch\n"
        "_saved = {}\n"
        "def _drop(key, grad):\n"
        "    del _saved[key]\n"
        "def keep(x, key):\n"
        "    if torch.is_grad_enabled():\n"
        "        _saved[key] = x\n"                    # guarded
        "    _saved[key + 1] = x\n"                    # 8: not guarded
        "    return x\n"
        "x.register_hook(functools.partial(_drop, 0))\n"
    )
    assert lines(matcher(RULE), code) == [8]


def test_no_removal_at_all_and_constant_keys_are_left_to_other_rules():
    unbounded = (
        "import torch\n"
        "_seen = {}\n"
        "class Op(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, x):\n"
        "        _seen[id(x)] = x\n"
        "        return x\n"
    )
    assert lines(matcher(RULE), unbounded) == []
    constant = unbounded.replace("id(x)", "'last'") + (
        "    @staticmethod\n    def backward(ctx, g):\n        _seen.pop('last')\n        return g\n"
    )
    assert lines(matcher(RULE), constant) == []


def test_a_module_without_backward_words_or_that_does_not_parse_has_no_stores():
    assert backward_only_stores("_t = {}\ndef f(k):\n    _t[k] = 1\ndef g(k):\n    _t.pop(k)\n") == {}
    assert backward_only_stores("autograd = (\n") == {}


def test_hook_registrations_count_only_in_a_module_that_imports_torch():
    code = (
        "from plugins import bus\n"
        "_inflight = {}\n"
        "def _done(request_id):\n"
        "    _inflight.pop(request_id, None)\n"
        "def submit(request):\n"
        "    _inflight[request.id] = request\n"
        "bus.register_hook(_done)\n"
    )
    assert lines(matcher(RULE), code) == []
    assert lines(matcher(RULE), "import torch\n" + code) == [7]
