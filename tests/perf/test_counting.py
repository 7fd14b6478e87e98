"""What each torch idiom counts as, on the CPU, under the dispatch-mode counter.

The idioms are the ones reviews flag in inference engines; each must land in its one
category at its own line, and look-alikes (views, in-place ops, no-op moves) must stay
quiet.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rltrefactor.perf.attribution import RepoFrames  # noqa: E402
from rltrefactor.perf.counting import counting  # noqa: E402

BODY = """\
import torch


def run(x, mask, device):
    a = x[0].item()                              # sync
    b = x.tolist()                               # sync
    c = x.cpu()                                  # copy
    t = torch.tensor([1, 2], device=device)      # alloc
    m = x[mask]                                  # sync
    n = x.nonzero()                              # sync
    w = x.view(2, 3).t().contiguous()            # copy
    e = torch.empty(4)                           # alloc
    e.copy_(x[:4])                               # copy
    f = x.to(torch.float64)                      # copy
    torch.cuda.synchronize()                     # sync
    y = x + 1                                    # alloc
    v = x.view(2, 3)
    x.add_(0)
    s = x[1:3]
    z = x.to("cpu")
    torch.add(x, 1, out=e.new_empty(6))          # alloc
    return y
"""


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    root = tmp_path_factory.mktemp("countrepo")
    (root / "body.py").write_text(BODY)
    namespace: dict = {}
    code = compile(BODY, str(root / "body.py"), "exec")
    exec(code, namespace)
    x = torch.arange(6, dtype=torch.float32)
    mask, device = x > 2, torch.device("cpu")
    with counting(RepoFrames(str(root)), device) as counter:
        namespace["run"](x, mask, device)
    by_line: dict[int, list[tuple[str, str]]] = {}
    for key, count in counter.counts.items():
        assert key.site.path == "body.py"
        by_line.setdefault(key.site.line, []).extend([(key.category, key.op)] * count)
    return by_line


def _expected() -> dict[int, str]:
    wanted = {}
    for number, line in enumerate(BODY.splitlines(), start=1):
        if "# " in line and line.split("# ")[-1] in {"sync", "copy", "alloc"}:
            wanted[number] = line.split("# ")[-1]
    return wanted


def test_each_idiom_lands_once_in_its_category(counted):
    for line, category in _expected().items():
        events = counted.get(line, [])
        assert [c for c, _ in events] == [category], (line, BODY.splitlines()[line - 1], events)


def test_views_in_place_ops_and_no_op_moves_stay_quiet(counted):
    expected = _expected()
    quiet = {n for n, text in enumerate(BODY.splitlines(), start=1) if n not in expected}
    assert not {line: ev for line, ev in counted.items() if line in quiet}


def test_op_names_say_what_dispatched(counted):
    lines = BODY.splitlines()
    ops = {lines[n - 1].split("=")[0].strip(): [op for _, op in ev] for n, ev in counted.items()}
    assert ops["a"] == ["aten._local_scalar_dense"]
    assert ops["b"] == ["Tensor.tolist"]
    assert ops["c"] == ["Tensor.cpu"]
    assert ops["t"] == ["aten.lift_fresh"]
    assert ops["m"] == ["aten.index"]
    assert ops["w"] == ["aten.clone"]


def test_python_apis_are_restored_after_counting(tmp_path: Path):
    before = (torch.Tensor.cpu, torch.Tensor.tolist, torch.cuda.synchronize)
    with pytest.raises(RuntimeError):
        with counting(RepoFrames(str(tmp_path)), torch.device("cpu")):
            raise RuntimeError("body failed")
    assert (torch.Tensor.cpu, torch.Tensor.tolist, torch.cuda.synchronize) == before


def test_ops_outside_the_repository_are_unattributed(tmp_path: Path):
    with counting(RepoFrames(str(tmp_path)), torch.device("cpu")) as counter:
        torch.arange(3).sum().item()
    assert counter.counts and all(key.site.path == "" for key in counter.counts)


def test_host_reads_on_a_cuda_check_do_not_count_host_tensors(tmp_path: Path):
    """On a device run, ``.item()`` of a host tensor is no device sync."""
    path = tmp_path / "host.py"
    path.write_text(textwrap.dedent("""\
        def read(x):
            return x.item(), x.cpu()
    """))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    host_value = torch.ones(())
    with counting(RepoFrames(str(tmp_path)), torch.device("cuda")) as counter:
        namespace["read"](host_value)
    assert not counter.counts
