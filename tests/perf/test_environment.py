"""The environment of a runner process: credentials removed, what Python, torch and the
accelerator stacks read kept, and ``perf-env`` adding names or globs; the README lists
the allow-list as it is."""

from __future__ import annotations

from pathlib import Path

from rltrefactor.perf.environment import ALLOWED, RunnerSetup, runner_env, scrubbed

PARENT = {
    "PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TMPDIR": "/tmp",
    "PYTHONHASHSEED": "0", "VIRTUAL_ENV": "/venv", "CUDA_VISIBLE_DEVICES": "0", "TORCH_LOGS": "dynamo",
    "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NVIDIA_VISIBLE_DEVICES": "all", "OMP_NUM_THREADS": "4",
    "GITHUB_TOKEN": "ghp_x", "HF_TOKEN": "hf_x", "AWS_SECRET_ACCESS_KEY": "a", "AWS_REGION": "eu-west-1",
    "MY_SECRET_TOKEN": "s", "MYAPP_REGION": "eu", "https_proxy": "http://user:pw@proxy", "SSH_AUTH_SOCK": "/s",
}
KEPT = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONHASHSEED", "VIRTUAL_ENV", "CUDA_VISIBLE_DEVICES",
        "TORCH_LOGS", "PYTORCH_CUDA_ALLOC_CONF", "NVIDIA_VISIBLE_DEVICES", "OMP_NUM_THREADS"}


def test_credentials_and_unknown_variables_are_removed_and_the_runtime_ones_kept():
    assert set(scrubbed(PARENT)) == KEPT
    assert scrubbed(PARENT)["PATH"] == "/usr/bin"


def test_perf_env_keeps_names_and_globs_and_matches_case_sensitively():
    kept = scrubbed(PARENT, ("MYAPP_*", "AWS_REGION", "https_PROXY"))
    assert set(kept) == KEPT | {"MYAPP_REGION", "AWS_REGION"}  # https_proxy differs in case: still removed


def test_the_runner_environment_is_scrubbed_and_names_the_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SECRET_TOKEN", "s")
    monkeypatch.setenv("MYAPP_REGION", "eu")
    env = runner_env(str(tmp_path), RunnerSetup(keep_env=("MYAPP_*",)))
    assert "MY_SECRET_TOKEN" not in env and env["MYAPP_REGION"] == "eu"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["PYTHONPATH"].startswith(str(tmp_path.resolve()))


def test_stubs_reach_the_runner_as_options():
    assert RunnerSetup(stubs=("flash_attn", "triton")).stub_args() == ["--stub=flash_attn", "--stub=triton"]
    assert RunnerSetup().stub_args() == []


def test_the_readme_lists_every_kept_name_in_the_perf_section():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The perf hook", 1)[1].split("\n## ", 1)[0]
    assert [name for name in ALLOWED if f"`{name}`" not in section] == []
