#!/usr/bin/env python
"""Fault injection on the tiny config: crashes, concurrent runs, swapped and stale files, read-only results.

Each scenario runs the workflow (tests/configs/tiny.yaml) in its own copy of one work directory, injects
one fault, and checks what happened against what must happen; the outcome of every scenario is written
to a Markdown report (scenario, command, observed outcome, verdict). Exit status 1 if any scenario
failed its check.

    python scripts/faults.py                          # all scenarios, report in /tmp/faults_report.md
    python scripts/faults.py --only a,c --keep        # some scenarios; keep the work directories

Scenarios: a) kill -9 of the whole snakemake process group during training, then rerun; b) kill -9 of one
`locus train` process; c) two snakemake runs on one directory at once; d) a run's checkpoint (and scores)
replaced by another run's; e) the encodings replaced by another encoder's encodings of the same data;
f) an input with an mtime in the future; g) results/ read-only (the workflow run as an unprivileged user);
h) an output directory below a directory the user may not enter.
Needs about 5 minutes on 2 cores. The jobs import the locus of this checkout (PYTHONPATH).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from locus import run_artifacts  # noqa: E402
from locus.data.encodings import read_encodings, write_encodings  # noqa: E402

TINY = REPO / "tests" / "configs" / "tiny.yaml"
ENCODER = "all-MiniLM-L6-v2"
OTHER_ENCODER = "all-mpnet-base-v2"
ENCODINGS = f"results/encodings/synthetic/{ENCODER}.parquet"
DATA = [f"results/data/synthetic/{n}" for n in ("queries.parquet", "models.parquet", "scores.parquet", "dataset.json")]
RUNS = {
    "locus32": f"results/runs/synthetic/{ENCODER}/locus/n32/d16/s0",
    "locus64": f"results/runs/synthetic/{ENCODER}/locus/n64/d16/s0",
    "knn32": f"results/runs/synthetic/{ENCODER}/knn_router/n32/d0/s0",
    "knn64": f"results/runs/synthetic/{ENCODER}/knn_router/n64/d0/s0",
}
TABLE = "results/tables/routing.tex"
LOCUS_RUNS = [f"{RUNS['locus32']}/metrics.json", f"{RUNS['locus64']}/metrics.json"]
ALL_RUNS = [f"{r}/metrics.json" for r in RUNS.values()]
LOCK_MESSAGE = "Directory cannot be locked"


class Check(AssertionError):
    """A scenario's outcome is not the one required."""


def need(condition, message):
    if not condition:
        raise Check(message)


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [e.get("PYTHONPATH")])])
    return e


def smk_cmd(workdir, *args):
    """A snakemake command on the tiny config: targets and options first, --configfile last."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        *args,
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--cores",
        "1",
        "--configfile",
        str(TINY),
    ]


def show(cmd):
    """A command as the report shows it (paths shortened)."""
    text = " ".join(str(c) for c in cmd)
    return text.replace(sys.executable, "python").replace(str(REPO) + "/", "").replace(str(TINY), "tiny.yaml")


def run(cmd, cwd, timeout=600, **kw):
    res = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout, **kw)
    res.out = res.stdout + res.stderr
    return res


def start(cmd, cwd, log):
    """A background command in its own process group (session), output to `log`."""
    fh = open(log, "w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env(), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    proc.log = Path(log)
    return proc


def train_processes(workdir, python_only=True):
    """{pid: --out value} of the `locus train` processes running now in `workdir` (the job's python, not its
    shell). Only this script's jobs run there: another workflow's processes on the machine are never touched."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if Path(os.readlink(f"/proc/{pid}/cwd")) != Path(workdir).resolve():
                continue
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if "locus" in argv and "train" in argv and "--out" in argv:
            if python_only and not Path(argv[0]).name.startswith("python"):
                continue
            found[int(pid)] = argv[argv.index("--out") + 1]
    return found


def wait_for(predicate, timeout, what, poll=0.05):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        value = predicate()
        if value:
            return value
        time.sleep(poll)
    raise Check(f"timed out after {timeout}s waiting for {what}")


def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def snapshot(workdir, paths):
    """{path: (SHA-256, mtime_ns)} of files under `workdir`."""
    return {p: (sha(workdir / p), (workdir / p).stat().st_mtime_ns) for p in paths}


def tree(workdir, sub="results"):
    """{relative path: SHA-256} of every file under workdir/sub (hidden temporaries included)."""
    root = workdir / sub
    return {str(p.relative_to(workdir)): sha(p) for p in sorted(root.rglob("*")) if p.is_file()}


def run_files(run_dir):
    return [f"{run_dir}/{name}" for name in run_artifacts.run_files(run_dir.split("/")[-4])]


def check_run(workdir, run_dir, encoder=ENCODER):
    """A finished run: every file present, each one the file its metrics.json records (SHA-256), trained on
    the encoder its path names."""
    root = workdir / run_dir
    method = run_dir.split("/")[-4]
    missing = [n for n in run_artifacts.run_files(method) if not (root / n).is_file()]
    need(not missing, f"{run_dir}: missing {missing}")
    metrics = json.loads((root / "metrics.json").read_text())
    need(metrics.get(run_artifacts.DIGESTS) == run_artifacts.file_digests(root, method), f"{run_dir}: digests differ")
    need(metrics.get("encoder") == encoder, f"{run_dir}: trained on {metrics.get('encoder')!r} encodings")
    return metrics


def leftovers(workdir, run_dir):
    """Hidden temporaries left beside a run directory (an atomic write interrupted by SIGKILL)."""
    parent = workdir / run_dir
    return sorted(p.name for p in parent.parent.glob(f".{parent.name}.*"))


def jobs_run(output):
    """The (rule, output path) of every job a snakemake log shows as started."""
    jobs, rule = [], None
    for line in output.splitlines():
        s = line.strip()
        if s.startswith(("rule ", "localrule ")) and s.endswith(":"):
            rule = s.split()[1].rstrip(":")
        elif rule and s.startswith("output:"):
            jobs.append((rule, s.removeprefix("output:").strip().split(",")[0]))
            rule = None
    return jobs


def one_line(stderr):
    return [line for line in stderr.splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------------------
class Session:
    def __init__(self, root: Path):
        self.root = root
        self.rows = []
        self._base = None
        self._full = None
        self.extra = []  # directories outside root (see copy)

    def copy(self, src, name, shared=False):
        """A copy of work directory `src`; with `shared`, in a new directory of /tmp that other users may
        enter (the unprivileged user of g and h could not reach the root's temporary directories)."""
        if shared:
            parent = Path(tempfile.mkdtemp(prefix="locus-faults-"))
            parent.chmod(0o755)
            self.extra.append(parent)
        dst = (parent if shared else self.root) / name
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst, symlinks=True)  # copy2: mtimes kept, so nothing looks updated
        shutil.rmtree(dst / ".snakemake" / "locks", ignore_errors=True)
        return dst

    def base(self):
        """Data set and encodings built once (the expensive encoder runs once per session)."""
        if self._base is None:
            wd = self.root / "base"
            wd.mkdir(parents=True, exist_ok=True)
            res = run(smk_cmd(wd, ENCODINGS), wd)
            need(res.returncode == 0, f"building the base directory failed:\n{res.out[-3000:]}")
            self._base = wd
        return self._base

    def full(self):
        """Every run of the routing table and the table itself (built by scenario c when it runs)."""
        if self._full is None:
            wd = self.copy(self.base(), "full")
            res = run(smk_cmd(wd, *ALL_RUNS, TABLE), wd)
            need(res.returncode == 0, f"building the full directory failed:\n{res.out[-3000:]}")
            self._full = wd
        return self._full

    def record(self, scenario, command, outcome, verdict):
        self.rows.append({"scenario": scenario, "command": command, "outcome": outcome, "verdict": verdict})


# --- a: kill -9 of the whole snakemake process group during a training job --------------------------------
def scenario_a(s: Session):
    wd = s.copy(s.base(), "a")
    cmd = smk_cmd(wd, *LOCUS_RUNS)
    proc = start(cmd, wd, wd / "first.log")
    done = wait_for(lambda: [r for r in LOCUS_RUNS if (wd / r).is_file()], 300, "the first training run to finish")
    finished = done[0].rsplit("/", 1)[0]
    killed = next(r.removesuffix("/metrics.json") for r in LOCUS_RUNS if r not in done)
    wait_for(lambda: killed in train_processes(wd).values(), 120, f"training of {killed} to start")
    time.sleep(0.3)  # into the job, well before it ends (on a busy machine a tiny run can end within about 1 s)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # what the rerun must leave as it is; hashed after the kill, which check_run's digests cover
    kept = snapshot(wd, [*DATA, ENCODINGS, *run_files(finished)])
    time.sleep(0.5)
    survivors = [p for p, out in train_processes(wd, python_only=False).items() if out == killed]
    for pid in survivors:  # not expected; never left running
        os.kill(pid, signal.SIGKILL)
    need(not survivors, f"`locus train` outlived its killed snakemake: pids {survivors}")
    need(not (wd / killed / "metrics.json").exists(), f"{killed}/metrics.json exists after the kill")
    temps = leftovers(wd, killed)

    locked = run(cmd, wd)
    need(locked.returncode != 0 and LOCK_MESSAGE in locked.out, "rerun after kill -9 not refused by the stale lock")
    unlock = run(smk_cmd(wd, "--unlock", *LOCUS_RUNS), wd)
    need(unlock.returncode == 0, f"--unlock failed: {unlock.out[-2000:]}")
    rerun = run(cmd, wd)
    need(rerun.returncode == 0, f"rerun failed: {rerun.out[-3000:]}")
    jobs = jobs_run(rerun.out)
    need(len(jobs) == 1 and jobs[0][1].startswith(killed), f"rerun ran {jobs}, expected only the job of {killed}")
    reason = next((ln.strip() for ln in rerun.out.splitlines() if ln.strip().startswith("reason:")), "")
    need("Missing output" in reason or "Incomplete" in reason, f"rerun's reason for the job: {reason!r}")
    need(snapshot(wd, kept) == kept, "a finished output (data, encodings, finished run) changed on the rerun")
    check_run(wd, killed)
    check_run(wd, finished)
    s.record(
        "a. kill -9 of the snakemake process group during `locus train`",
        f"`{show(cmd)}`; `kill -9 -PGID`; rerun; `--unlock`; rerun",
        f"the job's `locus train` died with the group (no survivor); no metrics.json of {killed}. "
        f"The first rerun is refused: `{LOCK_MESSAGE}` (the dead run's lock stays; `snakemake --unlock` clears "
        f"it). The second rerun runs exactly 1 job, {jobs[0][0]} of {killed} (`{reason}`: the run directory "
        f"is renamed into place only when complete, so a killed job leaves no output to mark incomplete); data, encodings and the finished run {finished} keep "
        f"their SHA-256 and mtime; both runs' files match their recorded digests. "
        f"Hidden temporaries left beside the killed run: {temps or 'none'} (never read: not outputs).",
        "PASS",
    )


# --- b: kill -9 of one `locus train` process --------------------------------------------------------------
def scenario_b(s: Session):
    wd = s.copy(s.base(), "b")
    cmd = smk_cmd(wd, *LOCUS_RUNS)
    proc = start(cmd, wd, wd / "first.log")
    pid, out = next(iter(wait_for(lambda: train_processes(wd), 300, "a `locus train` process").items()))
    t0 = time.monotonic()
    # kill it while its temporary run directory is being written if that is seen, else after 4 s of training
    when = wait_for(
        lambda: (
            ("while writing its temporary run directory" if leftovers(wd, out) else None)
            or ("while training" if time.monotonic() - t0 > 4 else None)
        ),
        60,
        "the moment to kill",
        poll=0.01,
    )
    os.kill(pid, signal.SIGKILL)
    rc = proc.wait(timeout=300)
    log = proc.log.read_text()
    need(rc != 0, "snakemake exited 0 after its job was killed")
    need("Error in rule train_run" in log and out in log, "snakemake does not report the killed job")
    present = [f for f in run_files(out) if (wd / f).exists()]
    need(not present, f"files of the killed run left at their final paths: {present}")
    temps = leftovers(wd, out)
    rerun = run(cmd, wd)
    need(rerun.returncode == 0, f"rerun failed: {rerun.out[-3000:]}")
    need(any(o.startswith(out) for _, o in jobs_run(rerun.out)), f"rerun did not rebuild {out}")
    for r in LOCUS_RUNS:
        check_run(wd, r.removesuffix("/metrics.json"))
    s.record(
        "b. kill -9 of one `locus train` process",
        f"`{show(cmd)}`; `kill -9 PID` of the job's python {when}; rerun",
        f"snakemake exits {rc}, `Error in rule train_run` naming {out} (log shown: show-failed-logs); "
        f"no file of the run at its final path (written to a hidden temporary, renamed only when complete; "
        f"snakemake also removes a failed job's outputs). Temporaries left: {temps or 'none'}. The rerun "
        f"(no --unlock needed: snakemake exited itself) rebuilds {out}; both runs match their digests.",
        "PASS",
    )


# --- c: two snakemake runs on one directory at once -------------------------------------------------------
def scenario_c(s: Session):
    wd = s.copy(s.base(), "c")
    cmd = smk_cmd(wd, *ALL_RUNS, TABLE)
    first = start(cmd, wd, wd / "first.log")
    wait_for(lambda: train_processes(wd), 300, "the first run's first training job")
    second = run(cmd, wd)
    need(second.returncode != 0, "the second snakemake was not refused")
    need(LOCK_MESSAGE in second.out, f"no lock message from the second run:\n{second.out[-2000:]}")
    need(not jobs_run(second.out), f"the second run started jobs: {jobs_run(second.out)}")
    rc = first.wait(timeout=600)
    need(rc == 0, f"the first run failed:\n{first.log.read_text()[-3000:]}")
    for r in RUNS.values():
        check_run(wd, r)
    need((wd / TABLE).is_file(), "no routing table")
    s._full = wd
    line = next(ln.strip() for ln in second.out.splitlines() if LOCK_MESSAGE in ln)
    s.record(
        "c. two snakemake runs on one directory at once",
        f"`{show(cmd)}` twice, the second while the first trains",
        f"the second exits {second.returncode} at once with `{line}` (+ Snakemake's hint about --unlock) and "
        f"starts no job; the first finishes (exit 0), all 4 runs match their digests, the table is written.",
        "PASS",
    )


# --- d: a run's checkpoint (and test scores) replaced by another run's --------------------------------------
def scenario_d(s: Session):
    wd = s.copy(s.full(), "d")
    src, dst = wd / RUNS["locus32"], wd / RUNS["locus64"]
    shutil.copy(src / "model.safetensors", dst / "model.safetensors")
    phrase = "not the file this run wrote"  # the run's digests; the checkpoint's own check may come first

    def refused(res, name):
        lines = one_line(res.stderr)
        ok = res.returncode == 2 and len(lines) == 1 and name in lines[0]
        need(ok and (phrase in lines[0] or "does not match" in lines[0]), f"{res.returncode} {lines}")
        return lines[0]

    outcomes = []
    queries = ["What is the derivative of x^2?"]
    route = [sys.executable, "-m", "locus", "route", "--checkpoint", RUNS["locus64"], *queries]
    line = refused(run(route, wd), "model.safetensors")
    outcomes.append(f"`locus route` exits 2: `{line}`")
    import pandas as pd

    q = pd.read_parquet(wd / DATA[0]).head(20)
    pd.DataFrame({"prompt": q["prompt"], "score": np.arange(20) % 2}).to_csv(wd / "new_model.csv", index=False)
    embed = [sys.executable, "-m", "locus", "embed", "--checkpoint", RUNS["locus64"], "--scores", "new_model.csv"]
    line = refused(run(embed, wd), "model.safetensors")
    outcomes.append(f"`locus embed` exits 2: `{line}`")
    # the routing table reads metrics and test scores: swap the test scores, snakemake reruns the table
    shutil.copy(src / "scores_test.parquet", dst / "scores_test.parquet")
    table = smk_cmd(wd, TABLE)
    res = run(table, wd)
    need(res.returncode != 0, "the routing table was rebuilt from a swapped score file")
    log = (wd / "results/logs/tables/routing.log").read_text()
    bad = [ln for ln in log.splitlines() if phrase in ln]
    need(len(bad) == 1 and "scores_test.parquet" in bad[0], f"table log: {log[-2000:]}")
    need(not (wd / TABLE).exists(), "a routing table is left beside the refused inputs")
    outcomes.append(
        f"with `scores_test.parquet` swapped too, `{show(table)}` reruns routing_table (newer input), which "
        f"fails with one line in its log (shown by snakemake): `{bad[0].strip()}`; no routing.tex is left"
    )
    s.record(
        "d. model.safetensors of locus/n64 replaced by locus/n32's (then scores_test.parquet too)",
        f"`cp`; `{show(route)}`; `{show(embed)}`; `{show(table)}`",
        "; ".join(outcomes) + ". Nothing read the foreign file.",
        "PASS",
    )


# --- e: the encodings replaced by another encoder's encodings of the same data ----------------------------
def scenario_e(s: Session):
    wd = s.copy(s.full(), "e")
    enc = read_encodings(wd / ENCODINGS)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(enc.prompt_ids), 768)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # another encoder's file as `locus encode` writes it: same prompt ids and data fingerprint, its own name
    write_encodings(wd / ENCODINGS, enc.prompt_ids, vectors, OTHER_ENCODER, True, enc.data_fingerprint)
    target = f"{RUNS['locus32']}/metrics.json"
    dry = run(smk_cmd(wd, "-n", target), wd)
    cmd = smk_cmd(wd, target)
    res = run(cmd, wd)
    used = json.loads((wd / target).read_text()).get("encoder") if (wd / target).exists() else None
    log = wd / "results" / "logs" / "train" / f"{RUNS['locus32'].removeprefix('results/runs/')}.log"
    refusal = (
        next((ln for ln in log.read_text().splitlines() if "but this run is for" in ln), "") if log.exists() else ""
    )
    outcome = (
        f"snakemake reruns train_run (the encodings are newer than the run; encode is not rerun: its own "
        f"inputs are older). snakemake exits {res.returncode}; "
        + (f"the run under `{ENCODER}/` records encoder `{used}`" if used else "no run is left at its path")
        + (f"; the job's log: `{refusal.strip()}`" if refusal else "")
    )
    verdict = "PASS" if res.returncode != 0 and used in (None, ENCODER) and refusal else "FAIL"
    if verdict == "FAIL":
        outcome += (
            ": the other encoder's vectors WERE used for a run filed under the configured encoder, and every "
            "table/figure reading it would report them as such (readers do not compare the run's encoder "
            "with its path). Needs `locus train --encoder NAME` (from the rule's {encoder} wildcard) refusing "
            "encodings whose recorded encoder differs."
        )
    else:
        outcome += "; the foreign encodings were refused."
    s.record(
        f"e. {ENCODINGS} replaced by `{OTHER_ENCODER}` encodings of the same data",
        f"`{show(cmd)}` (dry run first: {len(jobs_run(dry.out))} job(s))",
        outcome,
        verdict,
    )
    need(verdict == "PASS", "training used another encoder's encodings without refusing them")


# --- f: an input with an mtime in the future ---------------------------------------------------------------
def scenario_f(s: Session):
    wd = s.copy(s.full(), "f")
    run_dir = RUNS["locus32"]
    before = json.loads((wd / run_dir / "metrics.json").read_text())
    future = time.time() + 86400
    os.utime(wd / ENCODINGS, (future, future))
    target = f"{run_dir}/metrics.json"
    dry = run(smk_cmd(wd, "-n", *ALL_RUNS, TABLE), wd)
    planned = jobs_run(dry.out)
    need(len(planned) == len(RUNS) + 1, f"planned {planned}, expected every run reading the file and the table")
    cmd = smk_cmd(wd, target)
    res = run(cmd, wd)
    need(res.returncode != 0, "the job whose outputs stay older than their input was accepted")
    skew = next((ln.strip() for ln in res.out.splitlines() if "clock skew" in ln), "")
    need(skew, f"no clock-skew message:\n{res.out[-3000:]}")
    left = [f for f in run_files(run_dir) if (wd / f).exists()]
    need(not left, f"files of the refused job left at their final paths: {left}")
    os.utime(wd / ENCODINGS)  # the fix: the file's mtime back to now (`touch`)
    res = run(cmd, wd)
    need(res.returncode == 0, f"rerun after touch failed: {res.out[-3000:]}")
    after = check_run(wd, run_dir)
    need(after["test"] == before["test"] and after["val"] == before["val"], "the rebuilt run's metrics differ")
    s.record(
        f"f. {ENCODINGS} given an mtime one day in the future",
        f"`touch -d +1day`; `{show(smk_cmd(wd, '-n', 'RUNS...', TABLE))}`; `{show(cmd)}`; `touch`; again",
        f"the dry run plans {len(planned)} jobs (every run reading the file and the table; encode is not rerun: "
        f"its inputs are older). The real run trains, then Snakemake fails the job: `{skew[:160]}...`, and "
        f"removes its outputs (`Removing output files of failed job`), so no run is left that looks older than "
        f"its input; every run fails the same way until the clock passes the input's mtime. After `touch` of "
        f"the file the rerun succeeds: the run matches its digests and its val/test metrics equal the "
        f"original's. No wrong output at any point; the cost is the rebuild of everything below the file.",
        "PASS",
    )


# --- g: results/ read-only ---------------------------------------------------------------------------------
def scenario_g(s: Session):
    wd = s.copy(s.full(), "g", shared=True)
    for f in [*run_files(RUNS["locus64"]), TABLE, TABLE.replace(".tex", ".csv")]:
        (wd / f).unlink()
    home = wd / "home"
    home.mkdir()
    before = tree(wd)
    cmd = smk_cmd(wd, TABLE)
    if os.geteuid() == 0:  # root ignores permissions: the workflow runs as `nobody`, the directory its own
        subprocess.run(["chown", "-R", "65534:65534", str(wd)], check=True)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    subprocess.run(["chmod", "-R", "a-w", str(wd / "results")], check=True)
    e = env()
    e.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), MPLCONFIGDIR=str(home / "mpl"))
    res = subprocess.run(cmd, cwd=wd, env=e, capture_output=True, text=True, timeout=600)
    out = res.stdout + res.stderr
    subprocess.run(["chmod", "-R", "u+w", str(wd / "results")], check=True)
    after = tree(wd)
    need(res.returncode != 0, "the run succeeded although results/ is read-only")
    need(after == before, f"results/ changed: {sorted(set(after) ^ set(before))}")
    errors = [ln.strip() for ln in out.splitlines() if "Permission denied" in ln or "Read-only" in ln]
    need(errors, f"no permission error named:\n{out[-3000:]}")
    # locus's own error, without snakemake: `locus train` into the read-only run directory
    subprocess.run(["chmod", "-R", "a-w", str(wd / "results")], check=True)
    train = [
        sys.executable, "-m", "locus", "train", "--method", "locus", "--data", "results/data/synthetic",
        "--encodings", ENCODINGS, "--train-size", "64", "--dim", "16", "--params", '{"max_steps": 5}',
        "--threads", "1", "--out", RUNS["locus64"],
    ]  # fmt: skip
    direct = subprocess.run(cmd[: cmd.index(sys.executable)] + train, cwd=wd, env=e, capture_output=True, text=True)
    subprocess.run(["chmod", "-R", "u+w", str(wd / "results")], check=True)
    lines = one_line(direct.stderr)
    # an --out checked as an argument: argparse's usage, then one error line naming the directory
    errs = [ln for ln in lines if ln.startswith("locus train: error:")]
    need(direct.returncode == 2 and len(errs) == 1 and RUNS["locus64"] in errs[0], f"locus train: {lines}")
    lines = errs
    need(tree(wd) == before, "results/ changed by `locus train`")
    s.record(
        "g. results/ read-only (run as an unprivileged user; locus/n64 and the table to rebuild)",
        f"`chmod -R a-w results`; `setpriv --reuid=nobody {show(smk_cmd(wd, TABLE))}`; `locus train --out RUN`",
        f"snakemake exits {res.returncode}; first error: `{errors[0]}` (Snakemake creating the job's log). "
        f"`locus train --out` the read-only run directory directly: exit 2, usage and `{lines[0]}`. results/ holds exactly "
        f"the files it held before (no half-written run, table or temporary).",
        "PASS",
    )


# --- h: an output directory below a directory the user may not enter --------------------------------------
def scenario_h(s: Session):
    wd = s.copy(s.base(), "h", shared=True)
    runs = wd / "results" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    before = tree(wd)
    train = [
        sys.executable, "-m", "locus", "train", "--method", "locus", "--data", "results/data/synthetic",
        "--encodings", ENCODINGS, "--train-size", "64", "--dim", "16", "--params", '{"max_steps": 5}',
        "--threads", "1", "--out", RUNS["locus64"],
    ]  # fmt: skip
    e = env()
    if os.geteuid() == 0:  # root may enter any directory: the command runs as `nobody`
        subprocess.run(["chown", "-R", "65534:65534", str(wd)], check=True)
        train = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *train]
        e.update(HOME=str(wd), XDG_CACHE_HOME=str(wd / ".cache"), MPLCONFIGDIR=str(wd / ".mpl"))
    runs.chmod(0)
    res = subprocess.run(train, cwd=wd, env=e, capture_output=True, text=True, timeout=300)
    runs.chmod(0o755)
    lines = one_line(res.stderr)
    errs = [ln for ln in lines if ln.startswith("locus train: error:")]
    shown = errs[0] if errs else lines[-1] if lines else ""
    ok = res.returncode == 2 and len(errs) == 1 and "Traceback" not in res.stderr and tree(wd) == before
    s.record(
        "h. `locus train --out` below a directory the user may not enter (results/runs mode 000)",
        f"`chmod 000 results/runs`; `{show(train[train.index(sys.executable) :])}` (as nobody when root)",
        f"exit {res.returncode}; "
        + (f"`{shown}`" if ok else f"a traceback ending `{shown}` instead of one line naming the directory")
        + "; nothing written.",
        "PASS" if ok else "FAIL",
    )
    need(ok, "locus train: traceback for an output directory below one it may not enter")


SCENARIOS = {
    "a": scenario_a,
    "b": scenario_b,
    "c": scenario_c,
    "d": scenario_d,
    "e": scenario_e,
    "f": scenario_f,
    "g": scenario_g,
    "h": scenario_h,
}


def write_report(s: Session, path: Path, seconds: float):
    lines = [
        "# Fault injection on the tiny config",
        "",
        f"`python scripts/faults.py` ({seconds:.0f} s); DIR = the scenario's work directory under `{s.root}` "
        f"(the commands' cwd); RUNS = `{RUNS['locus32'].split('/locus/')[0]}`.",
        "",
        "| scenario | command | observed outcome | verdict |",
        "|---|---|---|---|",
    ]
    for r in s.rows:
        cells = [
            re.sub("|".join(re.escape(str(d)) + r"/\w+" for d in [s.root, *s.extra]), "DIR", r[k])
            .replace(RUNS["locus32"].split("/locus/")[0], "RUNS")
            .replace("|", "\\|")
            for k in ("scenario", "command", "outcome", "verdict")
        ]
        cells = [c.replace("\n", " ") for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(SCENARIOS), help="comma list of scenarios (default: all)")
    ap.add_argument("--workdir", help="where the work directories go (default: a new temporary directory)")
    ap.add_argument("--report", default="/tmp/faults_report.md", help="Markdown report (default: %(default)s)")
    ap.add_argument("--json", help="also write the rows as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    args = ap.parse_args(argv)
    wanted = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = [x for x in wanted if x not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; known: {', '.join(SCENARIOS)}")
    root = Path(args.workdir or tempfile.mkdtemp(prefix="locus-faults-")).resolve()
    s = Session(root)
    t0 = time.monotonic()
    for name in wanted:
        t = time.monotonic()
        n = len(s.rows)
        try:
            SCENARIOS[name](s)
        except Exception as exc:  # one scenario's failure is reported, the others still run
            detail = str(exc) if isinstance(exc, Check) else traceback.format_exc(limit=3)
            if len(s.rows) == n:
                s.record(name, "", detail, "FAIL")
            print(f"[{name}] FAIL ({time.monotonic() - t:.0f} s): {detail}", file=sys.stderr)
        else:
            print(f"[{name}] PASS ({time.monotonic() - t:.0f} s)", file=sys.stderr)
    write_report(s, Path(args.report), time.monotonic() - t0)
    if args.json:
        Path(args.json).write_text(json.dumps(s.rows, indent=1))
    if not args.keep:
        for d in [root, *s.extra]:
            subprocess.run(["chmod", "-R", "u+rwx", str(d)], check=False)
            shutil.rmtree(d, ignore_errors=True)
    print(f"report: {args.report}", file=sys.stderr)
    return 1 if any(r["verdict"] != "PASS" for r in s.rows) else 0


if __name__ == "__main__":
    sys.exit(main())
