"""While the hook measures, ``torch.inference_mode`` behaves as ``no_grad``: every op
reaches the dispatch counter. Run in a process of its own, as the hook's sides are."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

PROBE = """
import torch
from rltrefactor.perf.grad_modes import measure_through_inference_mode
measure_through_inference_mode()

@torch.inference_mode()
def called(x):
    return torch.is_grad_enabled(), torch.is_inference_mode_enabled(), (x * 2).is_inference()

@torch.inference_mode
def bare(x):
    return torch.is_grad_enabled()

x = torch.ones(2, requires_grad=True)
with torch.inference_mode():
    inside = torch.is_grad_enabled()
with torch.inference_mode(False):
    disabled = torch.is_grad_enabled()
print(called(x), bare(x), inside, disabled)
"""


def test_inference_mode_measures_as_no_grad_and_false_changes_nothing():
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", PROBE], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(False, False, False) False False True"
