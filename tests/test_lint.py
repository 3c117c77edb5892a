"""The tree passes its static checks: the import layers (`lint-imports`, contracts in pyproject.toml),
`ruff check` and `ruff format --check` (settings in pyproject.toml), declared against imported dependencies (`deptry`).
Each runs the tool from this interpreter's environment in the repository root and fails with its output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run_tool(*command: str) -> None:
    exe = BIN / command[0]
    if not exe.exists():
        pytest.fail(f"{exe} not found: install the test extra (pip install -e '.[test]')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([str(exe), *command[1:]], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"`{' '.join(command)}` failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"


def test_import_layers():
    run_tool("lint-imports")


def test_ruff_check():
    run_tool("ruff", "check", ".")


def test_ruff_format():
    run_tool("ruff", "format", "--check", ".")


def test_declared_dependencies():
    """Every package the code imports is declared where it is needed (deptry; settings in pyproject.toml): a
    runtime import of a test-only package would fail on the README's install, which has no extras."""
    run_tool("deptry", ".")
