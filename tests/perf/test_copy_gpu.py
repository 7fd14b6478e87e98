"""Copy classification and the race check on a real CUDA device. Skipped, with the
reason printed, where there is none (the same logic is tested from tensor properties on
the CPU in ``test_copy_kinds.py`` and ``test_races.py``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rltrefactor.change.changeset import collect_changes
from rltrefactor.perf import run_perf
from rltrefactor.perf.attribution import RepoFrames
from rltrefactor.perf.copies import PAGEABLE_NON_BLOCKING_WAIT_BYTES
from rltrefactor.perf.delta_findings import perf_findings

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: copies and races are not checked here"),
]

BODY = """\
import torch


def uploads(big, small, pinned, device):
    a = big.to(device, non_blocking=True)
    b = small.to(device, non_blocking=True)
    c = pinned.to(device, non_blocking=True)
    d = big.to(device)
    return a, b, c, d


def downloads(x):
    e = x.to("cpu", non_blocking=True)
    f = x.cpu()
    g = x.clone()
    torch.cuda.synchronize()
    return e, f, g


def read_before_event(x, event):
    y = x.to("cpu", non_blocking=True)
    event.record()
    return y.tolist()


def read_after_event(x, event):
    y = x.to("cpu", non_blocking=True)
    event.record()
    event.synchronize()
    return y.tolist()


def read_after_stream_sync(x):
    y = x.to("cpu", non_blocking=True)
    torch.cuda.current_stream().synchronize()
    return y[0].item()


def read_after_device_sync(x):
    y = x.to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    return y[0].item()


def read_after_blocking_download(x, other):
    y = x.to("cpu", non_blocking=True)
    done = other.cpu()
    return y[0].item(), done


def read_after_wait_event(x, event, side):
    y = x.to("cpu", non_blocking=True)
    event.record()
    side.wait_event(event)
    return y[0].item()


def read_copied_into_buffer(x, buf):
    buf.copy_(x, non_blocking=True)
    return int(buf[0])


def write_pinned_source(pinned, device):
    z = pinned.to(device, non_blocking=True)
    pinned.fill_(0)
    return z


def write_pinned_source_after_event(pinned, device, event):
    z = pinned.to(device, non_blocking=True)
    event.record()
    event.synchronize()
    pinned.fill_(0)
    return z
"""


@pytest.fixture(scope="module")
def body(tmp_path_factory):
    root = tmp_path_factory.mktemp("copyrepo")
    (root / "body.py").write_text(BODY)
    namespace: dict = {}
    exec(compile(BODY, str(root / "body.py"), "exec"), namespace)
    return root, namespace


def _busy(ms: float = 20.0) -> None:
    """Queue device work, so a copy that returns early really is in flight."""
    a = torch.randn(4096, 4096, device="cuda")
    for _ in range(max(1, int(ms))):
        torch.mm(a, a)


def _line(text: str, within: str = "") -> int:
    """The first line starting with ``text`` after ``def within`` (anywhere when not given)."""
    lines = BODY.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"def {within}("))) if within else 0
    return next(n for n, line in enumerate(lines[start:], start=start + 1) if line.strip().startswith(text))


def _count(body, name: str, *args):
    from rltrefactor.perf.counting import counting

    root, namespace = body
    torch.cuda.synchronize()
    _busy()
    with counting(RepoFrames(str(root)), torch.device("cuda")) as counter:
        namespace[name](*args)
    torch.cuda.synchronize()
    return counter


def test_uploads_are_classified_by_memory_size_and_mode(body):
    big = torch.ones(PAGEABLE_NON_BLOCKING_WAIT_BYTES * 4, dtype=torch.uint8)
    small = torch.ones(64, dtype=torch.uint8)
    counter = _count(body, "uploads", big, small, big.pin_memory(), torch.device("cuda"))
    events = {(k.site.line, k.category, k.direction): counter.bytes[k] for k in counter.counts}
    assert events == {
        (_line("a = "), "sync", "h2d pageable->device non_blocking"): big.nbytes,
        (_line("b = "), "copy", "h2d pageable->device non_blocking"): 64,
        (_line("c = "), "copy", "h2d pinned->device non_blocking"): big.nbytes,
        (_line("d = "), "copy", "h2d pageable->device blocking"): big.nbytes,
    }


def test_downloads_are_classified_by_destination_memory(body):
    counter = _count(body, "downloads", torch.ones(16, device="cuda"))
    copies = {(k.site.line, k.direction) for k in counter.counts if k.category == "copy"}
    assert copies == {
        (_line("e = "), "d2h device->pinned non_blocking"),
        (_line("f = "), "d2h device->pageable blocking"),
        (_line("g = "), "d2d device->device blocking"),
    }


def test_the_threshold_separates_uploads_that_return_from_uploads_that_wait():
    """Behind queued device work, a pageable non_blocking upload at the threshold returns
    while the device is still busy; one four times larger waits for the stream."""
    def returned_early(nbytes: int) -> bool:
        source = torch.ones(nbytes, dtype=torch.uint8)
        source.to("cuda")  # warm the staging path
        torch.cuda.synchronize()
        _busy(30)
        source.to("cuda", non_blocking=True)
        busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        return busy

    assert returned_early(PAGEABLE_NON_BLOCKING_WAIT_BYTES)
    assert not returned_early(PAGEABLE_NON_BLOCKING_WAIT_BYTES * 4)


def _races(counter):
    return sorted((k.site.line, k.direction.split(" at ")[0], int(k.direction.split(":")[1]))
                  for k in counter.counts if k.category == "race")


def test_a_read_before_the_event_sync_is_a_race_naming_the_copy(body):
    counter = _count(body, "read_before_event", torch.ones(1024, device="cuda"), torch.cuda.Event())
    where = "read_before_event"
    assert _races(counter) == [(_line("return y.tolist()", where), "download-read", _line("y = x.to(", where))]


@pytest.mark.parametrize("name", ["read_after_event", "read_after_stream_sync", "read_after_device_sync"])
def test_a_host_wait_before_the_read_covers_the_copy(body, name):
    args = (torch.ones(1024, device="cuda"),) + ((torch.cuda.Event(),) if name == "read_after_event" else ())
    assert _races(_count(body, name, *args)) == []


def test_a_blocking_download_on_the_same_stream_covers_the_copy(body):
    counter = _count(body, "read_after_blocking_download", torch.ones(1024, device="cuda"), torch.ones(4, device="cuda"))
    assert _races(counter) == []


def test_a_stream_waiting_for_the_event_does_not_cover_the_host(body):
    counter = _count(body, "read_after_wait_event", torch.ones(1024, device="cuda"), torch.cuda.Event(),
                     torch.cuda.Stream())
    where = "read_after_wait_event"
    assert _races(counter) == [(_line("return y[0].item()", where), "download-read", _line("y = x.to(", where))]


def test_a_copy_into_a_pinned_buffer_is_tracked_like_a_download(body):
    buf = torch.empty(1024, pin_memory=True)
    counter = _count(body, "read_copied_into_buffer", torch.ones(1024, device="cuda"), buf)
    assert _races(counter) == [(_line("return int(buf[0])"), "download-read", _line("buf.copy_("))]


def test_a_host_write_into_an_uploading_pinned_source_is_a_race(body):
    pinned = torch.ones(1 << 20, pin_memory=True)
    counter = _count(body, "write_pinned_source", pinned, torch.device("cuda"))
    assert _races(counter) == [(_line("pinned.fill_(0)"), "upload-write", _line("z = pinned.to("))]
    clean = _count(body, "write_pinned_source_after_event", pinned, torch.device("cuda"), torch.cuda.Event())
    assert _races(clean) == []


DECODER = """\
import torch


class Decoder:
    def __init__(self, device):
        self.device = device
        self.weight = torch.randn(2048, 2048, device=device)
        self.copied = torch.cuda.Event()

    def step(self, hidden):
        for _ in range(8):
            hidden = torch.tanh(hidden @ self.weight)
        tokens = hidden.argmax(-1)
        host_tokens = tokens.to("cpu", non_blocking=True)
        self.copied.record()
        self.copied.synchronize()
        return host_tokens.tolist()
"""

CHECK = """\
import torch
from rltrefactor.perf import micro_check
from eng.decoder import Decoder


@micro_check
def decode_step(device):
    decoder = Decoder(device)
    hidden = torch.randn(64, 2048, device=device)
    return lambda: decoder.step(hidden)
"""

RACY = DECODER.replace("        self.copied.synchronize()\n", "")


@pytest.fixture(scope="module")
def decoder_repo(make_repo):
    repo = make_repo("decoder")
    repo.write("eng/__init__.py", "")
    repo.write("eng/decoder.py", DECODER)
    repo.write("perf_hooks/checks.py", CHECK)
    repo.commit("fixed")
    repo.git("checkout", "-q", "-b", "racy")
    repo.write("eng/decoder.py", RACY)
    repo.commit("racy")
    return repo


def test_the_hook_reports_a_read_before_the_event_sync_in_a_decode_step(decoder_repo):
    change = collect_changes(str(decoder_repo.path), diff="main..racy")
    summary = run_perf(change, device="cuda", timeout=300)
    races = [d for d in summary.deltas if d.category == "race" and d.added]
    read = RACY.splitlines().index("        return host_tokens.tolist()") + 1
    copy = RACY.splitlines().index('        host_tokens = tokens.to("cpu", non_blocking=True)') + 1
    assert [(d.path, d.line, d.head_count - d.base_count) for d in races] == [("eng/decoder.py", read, 1)]
    assert f"eng/decoder.py:{copy}" in races[0].copied_by
    findings = [f for f in perf_findings(summary, change=change) if f.rule_id == "perf-copy-race"]
    assert len(findings) == 1 and f"eng/decoder.py:{copy}" in findings[0].impact


def test_the_fix_leaves_no_race_only_an_improvement(decoder_repo):
    decoder_repo.git("checkout", "-q", "-b", "fixed-again", "racy")
    decoder_repo.write("eng/decoder.py", DECODER)
    decoder_repo.commit("fix")
    summary = run_perf(collect_changes(str(decoder_repo.path), diff="racy..fixed-again"), device="cuda", timeout=300)
    assert not [d for d in summary.deltas if d.category == "race" and d.added]
    assert [d.category for d in summary.deltas if not d.added] == ["race"]


def test_a_large_pageable_upload_in_a_step_is_reported_as_a_sync_with_its_reason(make_repo):
    repo = make_repo("uploads")
    repo.write("eng/__init__.py", "")
    repo.write("eng/decoder.py", DECODER)
    repo.write("perf_hooks/checks.py", CHECK)
    repo.commit("base")
    staged = DECODER.replace(
        "        self.copied = torch.cuda.Event()\n",
        "        self.copied = torch.cuda.Event()\n        self.host_table = torch.ones(1 << 24)\n",
    ).replace(
        "        tokens = hidden.argmax(-1)\n",
        "        table = self.host_table.to(self.device, non_blocking=True)\n        tokens = hidden.argmax(-1)\n",
    )
    repo.git("checkout", "-q", "-b", "staged")
    repo.write("eng/decoder.py", staged)
    repo.commit("staged")
    change = collect_changes(str(repo.path), diff="main..staged")
    summary = run_perf(change, device="cuda", timeout=300)
    line = staged.splitlines().index("        table = self.host_table.to(self.device, non_blocking=True)") + 1
    syncs = [d for d in summary.deltas if d.category == "sync" and d.added]
    assert [(d.line, d.head_count - d.base_count) for d in syncs] == [(line, 1)]
    finding = next(f for f in perf_findings(summary, change=change) if f.span.line == line)
    assert "non_blocking upload of 67108864 bytes from pageable memory waits for the stream" in finding.evidence
