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


def test_full_disk_without_a_file_name_is_one_line(tmp_path, monkeypatch, capsys):
    """pyarrow reports ENOSPC without a file name: still one line about the output, exit 2 (the file set
    swap itself leaves an earlier data set intact; checked by hand on a full tmpfs)."""
    import errno

    from locus.cli import main
    from locus.data import canonical

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(canonical, "write_dataset", full)
    csv = tmp_path / "e.csv"
    csv.write_text("prompt,model,score\n" + "".join(f"q{i},m,{i % 2}\n" for i in range(12)))
    rc = main(["data", "csv", "--out", str(tmp_path / "out"), "--params", f'{{"path": "{csv}"}}'])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "cannot write" in err[0] and "No space left" in err[0], err
