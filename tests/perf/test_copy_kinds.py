"""Copy classification from tensor properties, on the CPU: direction, pinned / pageable /
device memory, bytes and blocking mode; a large pageable non_blocking upload is a sync.

A ``meta`` tensor stands in for device memory (it has a device type other than ``cpu``
and a size, and holds no data); pinned host memory, which a CPU-only torch cannot
allocate, is stood in for by reporting ``is_pinned()`` true for chosen tensors.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rltrefactor.perf.copies import PAGEABLE_NON_BLOCKING_WAIT_BYTES, CopyKind, classify, hidden_sync_reason

LIMIT = PAGEABLE_NON_BLOCKING_WAIT_BYTES


@pytest.mark.parametrize(("args", "label", "hidden_sync", "in_flight"), [
    (("cpu", False, "cuda", False, True, LIMIT + 1), "h2d pageable->device non_blocking", True, False),
    (("cpu", False, "cuda", False, True, LIMIT), "h2d pageable->device non_blocking", False, False),
    (("cpu", False, "cuda", False, False, LIMIT * 8), "h2d pageable->device blocking", False, False),
    (("cpu", True, "cuda", False, True, LIMIT * 8), "h2d pinned->device non_blocking", False, True),
    (("cuda", False, "cpu", True, True, 64), "d2h device->pinned non_blocking", False, True),
    (("cuda", False, "cpu", False, True, 64), "d2h device->pageable non_blocking", False, False),
    (("cuda", False, "cpu", True, False, 64), "d2h device->pinned blocking", False, False),
    (("cuda", False, "cuda", False, True, LIMIT * 8), "d2d device->device non_blocking", False, False),
    (("cpu", False, "cpu", True, True, LIMIT * 8), "host pageable->pinned non_blocking", False, False),
])
def test_a_copy_is_classified_by_where_its_data_lives(args, label, hidden_sync, in_flight):
    kind = classify(*args)
    assert (kind.label, kind.hidden_sync, kind.in_flight_after_return) == (label, hidden_sync, in_flight)
    assert kind.nbytes == args[-1]


def test_the_reason_names_the_bytes_only_for_a_pageable_non_blocking_upload():
    ops = "aten._to_copy h2d pageable->device non_blocking, aten.item"
    assert hidden_sync_reason(ops, 3 << 20) == (
        "non_blocking upload of 3145728 bytes from pageable memory waits for the stream")
    for look_alike in ("aten._to_copy h2d pinned->device non_blocking", "aten._to_copy h2d pageable->device blocking",
                       "aten._to_copy d2h device->pageable non_blocking", "aten.item"):
        assert hidden_sync_reason(look_alike, 3 << 20) == ""


torch = pytest.importorskip("torch")

BODY = """\
def uploads(big, small, device):
    a = big.to(device, non_blocking=True)
    b = small.to(device, non_blocking=True)
    c = big.to(device)
    d = big.to(torch_dtype)
    return a, b, c, d


def copies_into(dst, src, host):
    dst.copy_(src, non_blocking=True)
    host.copy_(src)
"""


def _count(tmp_path: Path, name: str, *args):
    from rltrefactor.perf.attribution import RepoFrames
    from rltrefactor.perf.counting import counting

    path = tmp_path / "body.py"
    path.write_text(textwrap.dedent(BODY))
    namespace: dict = {"torch_dtype": torch.float64}
    exec(compile(BODY, str(path), "exec"), namespace)
    with counting(RepoFrames(str(tmp_path)), torch.device("cpu")) as counter:
        namespace[name](*args)
    lines = BODY.splitlines()
    return {(lines[k.site.line - 1].strip().split(" ")[0], k.category, k.direction, counter.bytes[k])
            for k in counter.counts}


def test_a_large_pageable_non_blocking_upload_counts_as_a_sync_with_its_bytes(tmp_path):
    big = torch.empty(LIMIT + 1, dtype=torch.uint8)
    small = torch.empty(64, dtype=torch.uint8)
    events = _count(tmp_path, "uploads", big, small, torch.device("meta"))
    assert events == {
        ("a", "sync", "h2d pageable->device non_blocking", LIMIT + 1),
        ("b", "copy", "h2d pageable->device non_blocking", 64),
        ("c", "copy", "h2d pageable->device blocking", LIMIT + 1),
        ("d", "copy", "host pageable->pageable blocking", (LIMIT + 1) * 8),
    }


def test_the_same_upload_from_pinned_memory_stays_a_copy(tmp_path, monkeypatch):
    big = torch.empty(LIMIT * 4, dtype=torch.uint8)
    pinned_ptr = big.data_ptr()
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self: self.device.type == "cpu" and self.data_ptr() == pinned_ptr)
    events = _count(tmp_path, "uploads", big, torch.empty(64, dtype=torch.uint8), torch.device("meta"))
    assert ("a", "copy", "h2d pinned->device non_blocking", LIMIT * 4) in events
    assert not [e for e in events if e[1] == "sync"]


def test_copy_into_reads_both_tensors(tmp_path):
    src = torch.ones(LIMIT + 1, dtype=torch.uint8)
    events = _count(tmp_path, "copies_into", torch.empty(LIMIT + 1, dtype=torch.uint8, device="meta"), src,
                    torch.empty(LIMIT + 1, dtype=torch.uint8))
    assert events == {
        ("dst.copy_(src,", "sync", "h2d pageable->device non_blocking", LIMIT + 1),
        ("host.copy_(src)", "copy", "host pageable->pageable blocking", LIMIT + 1),
    }


def test_a_stand_in_run_tracks_no_copies_in_flight(tmp_path):
    from rltrefactor.perf.attribution import RepoFrames
    from rltrefactor.perf.counting import OpCounter

    assert OpCounter(RepoFrames(str(tmp_path)), torch.device("cpu")).races is None
    assert OpCounter(RepoFrames(str(tmp_path)), torch.device("cuda")).races is not None


def test_copy_kind_is_a_plain_record():
    kind = CopyKind("h2d", "pageable", "device", True, 10)
    assert kind == classify("cpu", False, "cuda", False, True, 10)
