"""The workflow's code style: `snakefmt --check` and `snakemake --lint` (default and tiny configs).

Three of Snakemake's lints do not fit this workflow and are accepted (every other lint fails the test):

- "Specify a conda environment or container for each rule": every job runs the interpreter that runs
  Snakemake (`LOCUS` in common.smk), from the virtual environment `install.sh` builds from
  pyproject.toml; a conda file per rule would be a second, unchecked list of the dependencies.
- "Shell command directly uses variable LOCUS": that interpreter path is deliberately a global, not a
  param: as a param it would be recorded with every output, so moving the environment would rerun
  every job.
- "Mixed rules and functions in same snakefile": the rule files' helpers are plain Python in
  workflow/rules/rule_helpers.py, which common.smk configures and star-imports; should a rule file define one
  again, it is accepted. The config's cross-field checks are Python, in locus/workflow_config.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "configs" / "tiny.yaml"
SNAKEFMT_LINE_LENGTH = "120"  # as the Python code's line length
ACCEPTED_LINTS = (
    "Specify a conda environment or container for each rule.",
    "Shell command directly uses variable LOCUS from outside of the rule",
    "Mixed rules and functions in same snakefile.",
)


def test_snakefmt_check():
    snakefmt = Path(sys.executable).parent / "snakefmt"
    if not snakefmt.exists():
        pytest.skip("snakefmt is not installed beside this interpreter")
    cmd = [str(snakefmt), "--line-length", SNAKEFMT_LINE_LENGTH, "Snakefile", "workflow"]
    res = subprocess.run([*cmd, "--check"], cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    if res.returncode != 0:
        diff = subprocess.run(
            [*cmd, "--compact-diff"], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
        )
        pytest.fail(
            "snakefmt would reformat (run `snakefmt --line-length 120 Snakefile workflow`):\n"
            + res.stderr
            + diff.stdout
            + diff.stderr
        )


def unaccepted_lints(output: str) -> list[str]:
    """The lints of `snakemake --lint` output that are not accepted, each with the rule or file it is for."""
    found, where = [], ""
    for line in output.splitlines():
        if line.startswith("Lints for "):
            where = line.removeprefix("Lints for ").rstrip(":")
        elif (m := re.match(r"^    \* (.*):$", line)) and m.group(1) not in ACCEPTED_LINTS:
            found.append(f"{where}: {m.group(1)}")
    return found


@pytest.mark.parametrize("configfile", [None, TINY], ids=["default", "tiny"])
def test_snakemake_lint(tmp_path, configfile):
    cmd = [sys.executable, "-m", "snakemake", "--lint", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path)]
    if configfile is not None:
        cmd += ["--configfile", str(configfile)]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    output = res.stdout + res.stderr
    assert "Lints for " in output or res.returncode == 0, output  # the lint ran (no error before it)
    assert "Traceback" not in output and "Error" not in output, output
    found = unaccepted_lints(output)
    assert not found, "snakemake --lint:\n" + "\n".join(found) + "\n\n" + output
