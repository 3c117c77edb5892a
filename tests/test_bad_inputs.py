"""Bad inputs, table-driven: each case must fail with exit code 2, one clear error line, no traceback,
and leave its workspace untouched. Cases: tests/bad_inputs/cases_*.py; harness: tests/bad_inputs/harness.py."""

from __future__ import annotations

import collections
import importlib
import pkgutil

import pytest

pytest.importorskip("torch")

import bad_inputs  # noqa: E402  (tests/ is on sys.path, see conftest.py)
from bad_inputs.harness import Workspace, build_base, run_case  # noqa: E402


def _all_cases():
    cases = []
    for info in sorted(pkgutil.iter_modules(bad_inputs.__path__), key=lambda i: i.name):
        if info.name.startswith("cases_"):
            cases += importlib.import_module(f"bad_inputs.{info.name}").CASES
    return cases


CASES = _all_cases()


def test_case_table_is_large_and_ids_are_unique():
    ids = [c.id for c in CASES]
    dupes = [i for i, n in collections.Counter(ids).items() if n > 1]
    assert not dupes, f"duplicate case ids: {dupes}"
    assert len(CASES) >= 250, f"only {len(CASES)} bad-input cases"


@pytest.fixture(scope="session")
def base(tmp_path_factory):
    return build_base(tmp_path_factory.mktemp("bad-input-base"))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, base, tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    run_case(case, Workspace(root, base), monkeypatch)
