"""scripts/faults.py on the tiny config: every injected fault (crashes, two runs at once, swapped run files and
encodings, a future mtime, read-only results) has the outcome the script requires; one test per scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = "abcdefgh"


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    work = tmp_path_factory.mktemp("faults")
    cmd = [
        sys.executable,
        str(REPO / "scripts" / "faults.py"),
        "--workdir",
        str(work / "dirs"),
        "--report",
        str(work / "report.md"),
        "--json",
        str(work / "rows.json"),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    assert (work / "rows.json").is_file(), res.stderr[-4000:]
    report = (work / "report.md").read_text()
    assert report.count("\n| ") == 1 + len(SCENARIOS), report  # header + one row per scenario
    rows = json.loads((work / "rows.json").read_text())
    return {row["scenario"][0]: row for row in rows}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fault_outcome(rows, scenario):
    row = rows[scenario]
    assert row["verdict"] == "PASS", row["outcome"]
