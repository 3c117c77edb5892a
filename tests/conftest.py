"""Shared pytest fixtures: the repository root and a real single-node SLURM cluster (tests/slurm_cluster.py)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slurm_cluster  # noqa: E402  (tests/ is not a package)


def skip_or_fail(requirement: str, message: str) -> None:
    """Skip a test whose tool is missing, loudly; fail instead when LOCUS_REQUIRE_<REQUIREMENT>=1.

    CI (.ci/run) sets LOCUS_REQUIRE_SLURM=1 and LOCUS_REQUIRE_BROWSER=1, so a SLURM or browser test that
    cannot run fails there instead of passing by skipping.
    """
    sys.stderr.write(f"\n{'!' * 80}\n{message}\n{'!' * 80}\n")
    if os.environ.get(f"LOCUS_REQUIRE_{requirement.upper()}") == "1":
        pytest.fail(f"{message} (LOCUS_REQUIRE_{requirement.upper()}=1)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny data set with its encodings and one LOCUS run in ``run/`` (tests/test_views.py's
    ``write_tiny``), built once per test module that asks for it."""
    import torch
    from test_views import N_REF, PARAMS, write_tiny

    from locus.runs import execute

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("views")
    data, enc = write_tiny(root)
    execute("locus", PARAMS, data, enc, N_REF, 0, root / "run")
    return root


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return slurm_cluster.REPO


@pytest.fixture(scope="session", name="slurm_cluster")
def slurm_cluster_fixture():
    """Start the test cluster once per session (installing the Debian packages if needed) and stop it.

    When SLURM cannot be installed (not root, no apt) the tests are skipped with a loud message,
    unless LOCUS_REQUIRE_SLURM=1 (CI), which turns that into a failure so CI cannot pass by skipping.
    """
    reason = slurm_cluster.ensure_installed()
    if reason:
        skip_or_fail("slurm", f"SLURM TESTS NOT RUN: {reason}. Run scripts/slurm/install.sh as root to enable them.")
    # Not under tmp_path_factory: pytest's base dir is 0700, but munged and mariadbd run as their own
    # users and must reach their sockets; unix socket paths must also stay short (< 108 bytes).
    state = Path(tempfile.mkdtemp(prefix="locus-slurm-"))
    cluster = slurm_cluster.SlurmCluster.start(state)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(state, ignore_errors=True)
