"""What a runner process starts with: an environment scrubbed of credentials, the
checkout's import roots, and the modules it replaces with import stubs.

The perf hook executes the reviewed repository's code. Its processes get only the
variables named in ``ALLOWED`` (and those the configuration's ``perf-env`` adds): tokens,
keys and cloud credentials in the caller's environment (``GITHUB_TOKEN``, ``HF_TOKEN``,
``AWS_*``, ...) never reach that code. This is not a sandbox: the code can still read
any file the user can.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Mapping

from .layout import import_roots

# Names and globs (case-sensitive) a runner process keeps: what Python, the tool, torch,
# the accelerator stacks and the thread pools read; none of them holds a credential.
ALLOWED: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "NO_COLOR", "TZ",
    "LANG", "LANGUAGE", "LC_*", "TMPDIR", "TEMP", "TMP", "XDG_CACHE_HOME",
    "PYTHON*", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH",
    "CUDA_*", "NVIDIA_*", "CUBLAS_*", "CUDNN_*", "NCCL_*", "ROCM_*", "ROCR_*", "HIP_*", "HSA_*",
    "TORCH_*", "TORCHINDUCTOR_*", "PYTORCH_*", "TRITON_*",
    "OMP_*", "MKL_*", "KMP_*", "OPENBLAS_*",
)

_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class RunnerSetup:
    """The configuration's say in every runner process of a run (both sides alike)."""

    stubs: tuple[str, ...] = ()  # modules replaced by import stubs (``perf-stubs``)
    keep_env: tuple[str, ...] = ()  # names or globs kept beside ``ALLOWED`` (``perf-env``)

    def stub_args(self) -> list[str]:
        """The runner's command-line options that install the stubs."""
        return [f"--stub={name}" for name in self.stubs]


def scrubbed(environ: Mapping[str, str], keep: tuple[str, ...] = ()) -> dict[str, str]:
    """The variables of ``environ`` whose names match ``ALLOWED`` or ``keep``."""
    patterns = ALLOWED + keep
    return {name: value for name, value in environ.items() if any(fnmatchcase(name, p) for p in patterns)}


def runner_env(root: str, setup: RunnerSetup) -> dict[str, str]:
    """The environment of a runner process for the checkout at ``root``."""
    env = scrubbed(os.environ, setup.keep_env)
    # The checkout's import roots come first: an editable install of the repository
    # elsewhere must not stand in for the revision under measurement.
    env["PYTHONPATH"] = os.pathsep.join([*import_roots(root), _PACKAGE_PARENT])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # never leave __pycache__ in the reviewed tree
    env["PYTHONUNBUFFERED"] = "1"
    return env
