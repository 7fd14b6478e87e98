"""non-blocking-download-read-before-sync: which downloads, reads and waits count."""

from __future__ import annotations

import pytest

from rltrefactor.matching.matchers.residency.download_reads import NonBlockingDownloadReadBeforeSync

from .helpers import hits

MATCHER = NonBlockingDownloadReadBeforeSync("non-blocking-download-read-before-sync", {})

TEMPLATE = """
import torch


def step(x, event, stream):
    y = x.to("cpu", non_blocking=True)
    {between}
    return {read}
"""


def _lines(code: str) -> list[int]:
    return [line for line, _ in hits(MATCHER, code)]


@pytest.mark.parametrize("read", ["y.item()", "y.tolist()", "y.numpy()", "y[0]", "int(y[0])", "float(y.sum())",
                                  "y[0].view(-1).tolist()", 'f"{y}"', "str(y)"])
def test_every_host_read_of_the_result_before_a_wait_is_reported(read):
    found = hits(MATCHER, TEMPLATE.format(between="pass", read=read))
    assert [line for line, _ in found] == [8]
    assert found[0][1]["X"] == "y" and found[0][1]["COPY_LINE"] == "6"


@pytest.mark.parametrize("wait", ["torch.cuda.synchronize()", "event.synchronize()", "stream.synchronize()",
                                  "torch.cuda.current_stream().wait_event(event)", "stream.wait_stream(other)",
                                  "done = x.sum().cpu()", "n = x.sum().item()", "event.wait()"])
def test_a_wait_between_the_copy_and_the_read_leaves_it_alone(wait):
    assert _lines(TEMPLATE.format(between=wait, read="y.tolist()")) == []


def test_a_recorded_event_nobody_waits_on_is_no_wait():
    assert _lines(TEMPLATE.format(between="event.record()", read="y.tolist()")) == [8]


def test_only_the_first_read_of_a_download_is_reported():
    code = TEMPLATE.format(between="first = y[0]", read="y.tolist()")
    assert _lines(code) == [7]


def test_a_copy_into_a_host_buffer_is_a_download_too():
    code = """
import torch


class Runner:
    def step(self, ids):
        self.ids_cpu.copy_(ids, non_blocking=True)
        return self.ids_cpu[0].item()

    def pinned(self, ids):
        buf = torch.empty(4, pin_memory=True)
        buf.copy_(ids, non_blocking=True)
        return buf.tolist()
"""
    assert _lines(code) == [8, 13]


@pytest.mark.parametrize("code", [
    # The source is already on the host: .to("cpu") returns it as it is.
    "def f(x):\n    x_cpu = x.cpu()\n    y = x_cpu.to('cpu', non_blocking=True)\n    return y.tolist()\n",
    # A copy to the device, not from it.
    "def f(x, device):\n    y = x.to(device, non_blocking=True)\n    return y.tolist()\n",
    # A blocking download.
    "def f(x):\n    y = x.to('cpu')\n    return y.tolist()\n",
    # Rebound before the read.
    "def f(x, z):\n    y = x.to('cpu', non_blocking=True)\n    y = z\n    return y.tolist()\n",
    # Read in a nested function: it runs at another time.
    "def f(x):\n    y = x.to('cpu', non_blocking=True)\n    return lambda: y.tolist()\n",
    # A device-to-host copy into a device buffer.
    "def f(self, x):\n    self.out_gpu.copy_(x, non_blocking=True)\n    return self.out_gpu[0]\n",
    # Another value is read; the download is passed on untouched.
    "def f(x, other):\n    y = x.to('cpu', non_blocking=True)\n    return other.tolist(), y\n",
])
def test_look_alikes_stay_quiet(code):
    assert _lines(code) == []


def test_a_blocking_copy_to_the_host_between_waits_for_the_download_before_it():
    code = """
import torch


def split_sizes(counts, totals):
    sent = counts.sum(dim=1).to(torch.device("cpu"), non_blocking=True)
    received = totals.sum(dim=1).to(torch.device("cpu"), non_blocking=False)
    return sent.tolist(), received.tolist()
"""
    assert _lines(code) == []
    assert _lines(code.replace("non_blocking=False", "non_blocking=True")) == [8, 8]  # each download read


def test_a_slice_and_a_download_handed_back_to_the_caller_read_nothing():
    code = """
class HostMirror:
    def pull(self, n=None):
        if n is None:
            return self.host.copy_(self.dev, non_blocking=True)
        return self.host[:n].copy_(self.dev[:n], non_blocking=True)

    def pull_and_read(self):
        self.host.copy_(self.dev, non_blocking=True)
        return self.host[0]
"""
    assert _lines(code) == [10]
