"""Where a runner process imports a checkout's packages from: the root, the package roots
that pyproject.toml declares, and a ``src/`` that holds Python code."""

from __future__ import annotations

import os

import pytest

from rltrefactor.perf.environment import RunnerSetup, runner_env
from rltrefactor.perf.layout import import_roots


def _tree(root, files: dict[str, str]):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _relative(root) -> list[str]:
    real = os.path.realpath(root)
    return [os.path.relpath(path, real).replace(os.sep, "/") for path in import_roots(str(root))]


@pytest.mark.parametrize("pyproject, package", [
    ('[tool.setuptools.packages.find]\nwhere = ["python"]\n', "python/eng/__init__.py"),
    ('[tool.setuptools]\npackage-dir = {"" = "python"}\n', "python/eng/__init__.py"),
    ('[tool.setuptools.package-dir]\n"acme.eng" = "python/acme/eng"\n', "python/acme/eng/__init__.py"),
    ('[tool.hatch.build.targets.wheel]\npackages = ["python/eng"]\n', "python/eng/__init__.py"),
    ('[tool.poetry]\npackages = [{ include = "eng", from = "python" }]\n', "python/eng/__init__.py"),
])
def test_each_packaging_table_declares_its_package_root(tmp_path, pyproject, package):
    root = _tree(tmp_path, {"pyproject.toml": pyproject, package: ""})
    assert _relative(root) == [".", "python"]


def test_a_src_directory_holding_a_package_or_a_namespace_package_is_a_root(tmp_path):
    assert _relative(_tree(tmp_path / "flat", {"src/eng/__init__.py": ""})) == [".", "src"]
    assert _relative(_tree(tmp_path / "namespace", {"src/acme/eng/core.py": ""})) == [".", "src"]


def test_a_src_directory_without_python_code_is_not_a_root(tmp_path):
    root = _tree(tmp_path, {"src/kernels/attention.cu": "", "src/README.md": "", "eng/__init__.py": ""})
    assert _relative(root) == ["."]


def test_declared_roots_outside_the_checkout_missing_or_unexpressible_add_nothing(tmp_path):
    pyproject = (
        '[tool.setuptools.packages.find]\nwhere = ["../elsewhere", "missing"]\n'
        '[tool.setuptools.package-dir]\neng = "code"\n'  # a folder named otherwise than its package
    )
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "mod.py").write_text("")
    root = _tree(tmp_path / "repo", {"pyproject.toml": pyproject, "code/__init__.py": ""})
    assert _relative(root) == ["."]


def test_an_unreadable_pyproject_still_gives_the_root_and_src(tmp_path):
    root = _tree(tmp_path, {"pyproject.toml": "[tool.setuptools\n", "src/eng/__init__.py": ""})
    assert _relative(root) == [".", "src"]


def test_the_runner_imports_the_checkout_before_the_tool_itself(tmp_path):
    root = _tree(tmp_path, {"src/eng/__init__.py": ""})
    paths = runner_env(str(root), RunnerSetup())["PYTHONPATH"].split(os.pathsep)
    real = os.path.realpath(root)
    assert paths[:2] == [real, os.path.join(real, "src")]
    assert len(paths) == 3 and os.path.isdir(os.path.join(paths[2], "rltrefactor"))
