"""Loading micro-checks from a hooks directory: what set-up signatures are accepted."""

from __future__ import annotations

from rltrefactor.perf.loading import load_checks

HOOKS = '''\
from rltrefactor.perf import micro_check


@micro_check
def with_device(device):
    return lambda: ("ran on", device)


@micro_check
def without_device():
    return lambda: "ran"


@micro_check
def two_things(device, batch):
    return lambda: None
'''


def test_a_set_up_without_the_device_parameter_is_called_without_it(tmp_path):
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "checks.py").write_text(HOOKS)
    checks, _ = load_checks(str(tmp_path), "hooks")
    by_name = {c.name: c for c in checks}
    assert by_name["hooks.checks:without_device"].start("cpu")() == "ran"
    assert by_name["hooks.checks:with_device"].start("cpu")() == ("ran on", "cpu")


def test_a_set_up_with_other_required_parameters_is_a_load_error_showing_the_signature(tmp_path):
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "checks.py").write_text(HOOKS)
    checks, errors = load_checks(str(tmp_path), "hooks")
    assert "hooks.checks:two_things" not in {c.name for c in checks}
    (error,) = errors
    assert (error.path, error.line) == ("hooks/checks.py", 14)  # the decorator line, as for every check
    assert error.message == (
        "micro-check two_things: set-up must take one parameter, the device, or none "
        "(got two_things(device, batch)); write def two_things(device): ... return lambda: ..."
    )
