"""stream-handoff-without-wait: values handed between a side stream and the current one."""

from __future__ import annotations

from .helpers import engine_lines as lines

RULE = "stream-handoff-without-wait"


def test_a_value_made_on_the_side_stream_and_used_after_it_without_a_wait():
    code = '''
import torch

class Prefetcher:
    def next_layer(self, i):
        with torch.cuda.stream(self.side):
            w = self.host_weights[i].to("cuda", non_blocking=True)
        return self.hidden @ w

    def next_layer_waited(self, i):
        with torch.cuda.stream(self.side):
            w = self.host_weights[i].to("cuda", non_blocking=True)
        torch.cuda.current_stream().wait_stream(self.side)
        return self.hidden @ w
'''
    assert lines(RULE, code) == [8]


def test_a_device_value_read_on_the_side_stream_without_the_side_waiting():
    code = '''
import torch

class Offloader:
    def offload(self, x):
        y = x.cuda() * 2
        with torch.cuda.stream(self.side):
            host = y.to("cpu", non_blocking=True)
        return host

    def offload_waited(self, x):
        y = x.cuda() * 2
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            host = y.to("cpu", non_blocking=True)
        return host

    def offload_parameter(self, y):
        with torch.cuda.stream(self.side):
            host = y.to("cpu", non_blocking=True)
        return host
'''
    assert lines(RULE, code) == [8]


def test_events_helpers_and_metadata_order_or_read_nothing():
    code = '''
import torch

class Prefetcher:
    def with_event(self, i):
        with torch.cuda.stream(self.side):
            w = self.host_weights[i].to("cuda", non_blocking=True)
            done = self.side.record_event()
        torch.cuda.current_stream().wait_event(done)
        return self.hidden @ w

    def with_helper(self, i):
        with torch.cuda.stream(self.side):
            w = self.host_weights[i].to("cuda", non_blocking=True)
        _wait_for_stream(self.side)
        return self.hidden @ w

    def metadata_only(self, i):
        with torch.cuda.stream(self.side):
            w = torch.empty(4, device="cuda")
            v = self.host_weights[i].to("cuda", non_blocking=True)
        assert v is not None
        return w.zero_(), v.shape

    def current_stream(self, x):
        stream = torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            y = x.cuda() + 1
        return y * 2

    def python_values(self, i):
        with torch.cuda.stream(self.side):
            task_id = self.connector.store(i)
        if task_id < 0:
            return None
        return task_id
'''
    assert lines(RULE, code) == []


def test_views_and_containers_made_after_the_side_waits_launch_nothing():
    # vLLM's drafter style: the side stream waits, then slices and a dict of views go to
    # its kernel; the same slice of a value made after the wait is still unordered.
    code = '''
import torch

class Drafter:
    def tiers(self, q, out, main, side):
        q = q.cuda()
        side.wait_stream(main)
        rows = q[:4].view(2, -1)
        args = dict(self.common, query=q[4:], out=out[:4])
        with torch.cuda.stream(side):
            self.kernel(rows, **args)
        return out

    def scaled(self, q, out, main, side):
        side.wait_stream(main)
        scaled = q.cuda() * 2
        rows = scaled[:4].view(2, -1)
        with torch.cuda.stream(side):
            self.kernel(rows)
        return out
'''
    assert lines(RULE, code) == [19]
