"""Convention matchers on real engines: what others own or decide is left alone."""

from __future__ import annotations

from rltrefactor.matching.matchers.registry import PYTHON_MATCHERS

from .helpers import hits

ENVIRONMENT = """
import os

def setup():
    rank = int(os.environ["RANK"])
    nccl = os.getenv("NCCL_DEBUG")
    depth = os.environ.get("ENGINE_DEPTH", "8")
    os.environ["NCCL_DEBUG"] = "INFO"
    del os.environ["RANK"]
    key = pick()
    return rank, nccl, depth, os.environ[key], "HF_HOME" in os.environ
"""


def _lines(matcher_id: str, code: str, **options) -> list[int]:
    matcher = PYTHON_MATCHERS[matcher_id].build("test-rule", matcher_id, options)
    return [line for line, _ in hits(matcher, code)]


def test_environment_reads_of_variables_others_set_are_left_alone():
    assert _lines("environment-read", ENVIRONMENT, **{"external-variables": ["RANK", "NCCL_*", "HF_*"]}) == [7, 11]


def test_environment_reads_a_project_documents_as_its_own_are_reported():
    options = {"external-variables": ["RANK", "NCCL_*", "HF_*"], "own-variables": ["NCCL_DEBUG"]}
    assert _lines("environment-read", ENVIRONMENT, **options) == [6, 7, 11]


def test_environment_reads_are_all_reported_without_a_list():
    assert _lines("environment-read", ENVIRONMENT) == [5, 6, 7, 11, 11]


FLAGS = """
import torch

HAS_FP8 = torch.cuda.get_device_capability() >= (8, 9)

class Layer:
    wide = torch.cuda.get_device_capability()[0] >= 9

    def __init__(self):
        self.use_fp8 = torch.cuda.get_device_capability()[0] >= 9
        use_wide = torch.cuda.get_device_capability()[0] >= 9

    def forward(self, x):
        self.use_fp8 = torch.cuda.get_device_capability()[0] >= 9
        return x

if torch.cuda.get_device_capability()[0] >= 9:
    HAS_FP8 = True
"""


def test_capability_flags_are_reported_except_where_they_are_defined():
    lines = _lines("compared-probe", FLAGS, calls=["get_device_capability"], **{"branches-only": False})
    assert lines == [11, 14, 17]
