"""Host values followed through the forms engines write them in: a cast that names no
device keeps a host tensor on the host, a ``torch.nn.functional`` op runs where its input
is, and an assertion that a value is on the CPU makes it a host value for what follows.
Each beside a look-alike that stays reported, in two engines' styles, end to end."""

from __future__ import annotations

import pytest

VLLM_PACKING = '''import torch
from torch import nn


class Siglip2Packer(nn.Module):
    def forward(self, pixel_values, spatial_shapes):
        {assertion}
        lengths = (spatial_shapes[:, 0] * spatial_shapes[:, 1]).to(dtype=torch.int64)
        lengths_list = lengths.tolist()
        return pixel_values.split(lengths_list)
'''

SGLANG_WINDOWS = '''import torch
import torch.nn.functional as F
from torch import nn


class VisionWindows(nn.Module):
    def forward(self, hidden, grid_t, grid_h, grid_w):
        index = torch.arange(grid_t * grid_h * grid_w{device}).reshape(grid_t, grid_h, grid_w)
        index_padded = F.pad(index, (0, 2, 0, 2), "constant", -100)
        kept = index_padded[index_padded != -100]
        return hidden[kept]
'''


@pytest.mark.parametrize(("assertion", "reported"), [
    ('assert spatial_shapes.device.type == "cpu", "keep the shapes on the host"', False),
    ("assert spatial_shapes.is_cpu", False),
    ("assert spatial_shapes.dim() == 2 and spatial_shapes.is_cpu", False),  # a conjunct holds it
    ("assert spatial_shapes.dim() == 2", True),  # says nothing of where it lives
    ("assert not spatial_shapes.is_cpu", True),  # asserts the opposite
    ("assert spatial_shapes.is_cpu or pixel_values.is_cpu", True),  # either may hold
], ids=["device-type", "is-cpu", "conjunct", "unrelated-assert", "negated", "either"])
def test_an_assertion_that_a_value_is_on_the_cpu_makes_it_a_host_value(review_new_file, assertion, reported):
    found = review_new_file("vllm/model_executor/models/siglip2_packing.py", VLLM_PACKING.format(assertion=assertion))
    assert (9 in found) is reported, found


@pytest.mark.parametrize(("device", "reported"), [
    ("", False),  # a factory with no device: the padded index is a host tensor
    (", device=hidden.device", True),
], ids=["host-index", "device-index"])
def test_a_functional_op_runs_where_its_input_is(review_new_file, device, reported):
    found = review_new_file("sglang/srt/models/vision_windows.py", SGLANG_WINDOWS.format(device=device))
    assert (10 in found) is reported, found
