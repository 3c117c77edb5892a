"""A real single-node SLURM cluster for the tests, started and stopped around a test session.

The cluster (munged, MariaDB, slurmdbd, slurmctld, slurmd on 127.0.0.1, one fake GPU, partitions
``cpu`` and ``gpu``, account ``locus``) is brought up by ``scripts/slurm/start.sh`` in a private
state directory, so it never touches /etc/slurm or a system cluster, and stopped by
``scripts/slurm/stop.sh`` through PID files (never by process name). The shell scripts are the one
implementation; this module adds what tests need around them:

* ``ensure_installed()``: install the Debian packages with ``scripts/slurm/install.sh`` when they
  are missing; returns why that is impossible (not root, no apt) so the tests can skip loudly.
* ``SlurmCluster``: the environment for client commands (``SLURM_CONF``, ``PATH`` and the
  ``LOCUS_SLURM_*`` variables read by ``profiles/slurm``), ``sacct`` as dicts, ``cancel_all``.
* ``run_bounded()``: run a command with a hard time limit. On timeout it sends SIGINT first
  (Snakemake then cancels its SLURM jobs; SIGTERM can leave it waiting), SIGKILL 30 s later.
  ``interrupt_when()`` does the same as soon as a line of output matches a pattern. Both start the
  command with SIGINT at its default action, whatever the test process inherited.

Every wait has a time limit, so a broken cluster fails a test instead of hanging it.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts" / "slurm"
# Binaries the cluster needs; any one missing means the Debian packages are not (all) installed.
DAEMONS = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sbatch", "sacct", "sacctmgr")
SBIN_PATH = os.pathsep.join(["/usr/sbin", "/sbin"])

INSTALL_TIMEOUT_S = 600
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 90


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=SBIN_PATH)


def missing_binaries() -> list[str]:
    return [name for name in DAEMONS if _which(name) is None]


def ensure_installed() -> str | None:
    """Install the SLURM packages when missing; return None when ready, else the reason why not.

    Root is needed either way: start.sh chowns state dirs and runs munged/mariadbd as their users.
    """
    if os.geteuid() != 0:
        return "the test cluster needs root (e.g. `sudo -E .venv/bin/pytest -m slurm`)"
    missing = missing_binaries()
    if not missing:
        return None
    if shutil.which("apt-get") is None:
        return f"no apt-get to install the SLURM packages (missing: {', '.join(missing)})"
    try:
        res = subprocess.run(
            ["bash", str(SCRIPTS / "install.sh")],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"scripts/slurm/install.sh took longer than {INSTALL_TIMEOUT_S} s"
    if res.returncode != 0:
        return f"scripts/slurm/install.sh failed (rc {res.returncode}): {(res.stderr or res.stdout)[-1500:]}"
    still = missing_binaries()
    if still:
        return f"still missing after install.sh: {', '.join(still)}"
    return None


def _default_sigint() -> None:
    """Popen's preexec_fn: SIGINT back to its default action and unblocked in the child.

    A process started in the background of a non-interactive shell (``cmd &`` in a script, as a CI runner
    may start the test suite) inherits SIGINT *ignored* (POSIX), and so would every process it starts;
    Python then keeps it ignored instead of installing its KeyboardInterrupt handler. Snakemake would
    silently ignore the SIGINT these helpers stop it with (seen: a CI run where the interrupt test's
    Snakemake never reacted until SIGKILL). The child therefore starts as from an interactive terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@dataclass
class Bounded:
    """Result of ``run_bounded``: like CompletedProcess, plus whether the time limit hit and
    whether SIGKILL was needed (the command ignored SIGINT for 30 s)."""

    args: list[str]
    returncode: int
    stdout: str
    timed_out: bool
    killed: bool = False

    @property
    def output(self) -> str:
        return self.stdout


def run_bounded(cmd: list[str], *, timeout: float, env: dict, cwd: str | os.PathLike | None = None) -> Bounded:
    """Run ``cmd`` (stdout+stderr merged) for at most ``timeout`` s; SIGINT, then SIGKILL after 30 s."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the signals reach its children too
        preexec_fn=_default_sigint,
    )
    timed_out = killed = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            killed = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    return Bounded(list(cmd), proc.returncode, out or "", timed_out, killed)


def interrupt_when(
    cmd: list[str],
    pattern: str,
    *,
    timeout: float,
    env: dict,
    cwd: str | os.PathLike | None = None,
    grace: float = 30,
    ready=None,
    group: bool = True,
) -> tuple[Bounded, float]:
    """Run ``cmd`` until a line matches ``pattern`` (or ``timeout`` s pass), then SIGINT it.

    ``ready(match)``, if given, is polled after the match until it returns true (within the same
    ``timeout``) before the signal is sent: e.g. "the submitted job is running". ``group``: SIGINT the
    whole process group (a terminal's Ctrl-C) or only ``cmd``'s own process (``kill -INT PID``).
    Returns the result and how many seconds it took to exit after SIGINT (SIGKILL after ``grace`` s).
    """
    # PYTHONFAULTHANDLER: a SIGABRT makes Python print every thread's stack (see _why_stuck)
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env={**env, "PYTHONFAULTHANDLER": "1"},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        bufsize=1,
        preexec_fn=_default_sigint,
    )
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=0.5):
                continue
            line = proc.stdout.readline()
            if not line:  # exited before the pattern appeared
                break
            lines.append(line)
            if re.search(pattern, line):
                break
    match = next((m for m in map(lambda line: re.search(pattern, line), lines) if m), None)
    timed_out = match is None
    while match is not None and ready is not None and proc.poll() is None and not ready(match):
        if time.monotonic() > deadline:
            timed_out = True
            break
        time.sleep(0.3)
    interrupted = time.monotonic()
    killed = False
    if proc.poll() is None:
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            killed = True
            rest = _why_stuck(proc)
    else:
        rest, _ = proc.communicate()
    took = time.monotonic() - interrupted
    return Bounded(list(cmd), proc.returncode, "".join(lines) + (rest or ""), timed_out, killed), took


def _signal_state(pid: int) -> str:
    """Each thread's blocked / ignored / caught / pending signal masks (hex, bit N-1 = signal N)."""
    lines = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        try:
            status = (task / "status").read_text().splitlines()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        keep = [
            row.replace("\t", " ")
            for row in status
            if row.startswith(("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"))
        ]
        lines.append(f"thread {task.name} ({name}): " + "; ".join(keep))
    return "\n".join(lines) + "\n"


def _why_stuck(proc: subprocess.Popen) -> str:
    """For a failure message: the process tree of ``proc``'s session and, from SIGABRT with
    PYTHONFAULTHANDLER set, the Python stack of each of its threads; then SIGKILL the whole group."""
    tree = subprocess.run(
        ["ps", "-o", "pid,ppid,stat,wchan:24,etime,args", "--forest", "-s", str(proc.pid)],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    tree += _signal_state(proc.pid)
    os.kill(proc.pid, signal.SIGABRT)
    try:
        rest, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        rest = ""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is gone already
        pass
    more, _ = proc.communicate()
    return f"{rest or ''}{more or ''}\n--- processes when SIGKILLed ---\n{tree}"


@dataclass
class SlurmCluster:
    """A running test cluster; ``env`` is what client commands and Snakemake need to use it."""

    state: Path
    partition: str = "cpu"
    gpu_partition: str = "gpu"
    account: str = "locus"
    env: dict = field(default_factory=dict)

    @classmethod
    def start(cls, state: Path) -> "SlurmCluster":
        """Run scripts/slurm/start.sh STATE (raises RuntimeError with the logs when it fails)."""
        state = Path(state)
        cluster = cls(state=state)
        env = _clean_env()
        env.update(
            LOCUS_TEST_PARTITION=cluster.partition,
            LOCUS_TEST_GPU_PARTITION=cluster.gpu_partition,
            LOCUS_TEST_ACCOUNT=cluster.account,
        )
        res = run_bounded(["bash", str(SCRIPTS / "start.sh"), str(state)], timeout=START_TIMEOUT_S, env=env)
        if res.returncode != 0 or res.timed_out:
            cluster.stop()
            raise RuntimeError(f"scripts/slurm/start.sh failed (rc {res.returncode}):\n{res.output[-4000:]}")
        env["SLURM_CONF"] = str(state / "etc" / "slurm.conf")
        # bin/ holds the srun wrapper that restores SLURM_CONF inside jobs (see start.sh).
        env["PATH"] = os.pathsep.join([str(state / "bin"), str(Path(sys.executable).parent), env["PATH"], SBIN_PATH])
        env.update(
            LOCUS_SLURM_PARTITION=cluster.partition,
            LOCUS_SLURM_GPU_PARTITION=cluster.gpu_partition,
            LOCUS_SLURM_ACCOUNT=cluster.account,
            LOCUS_SLURM_INIT_SECONDS="2",  # poll soon: jobs here take seconds, not hours
            LOCUS_SLURM_JOBS="4",
            LOCUS_SLURM_MEM_MB="500",  # small, so two jobs fit next to each other
            LOCUS_SLURM_TRAIN_MEM_MB="1000",
            LOCUS_SLURM_RUNTIME="10",
            LOCUS_SLURM_TRAIN_RUNTIME="10",
        )
        cluster.env = env
        return cluster

    def run(self, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout)

    def sacct(self, job_ids: list[str] | None = None) -> list[dict]:
        """One dict per job allocation (no steps): JobID, JobName, Partition, Account, State, AllocTRES, ExitCode."""
        fields = ["JobID", "JobName", "Partition", "Account", "State", "AllocTRES", "ExitCode", "WorkDir"]
        cmd = ["sacct", "-X", "-n", "-P", "--starttime=now-1days", "-o", ",".join(fields)]
        if job_ids:
            cmd += ["-j", ",".join(job_ids)]
        res = self.run(*cmd, timeout=30)
        if res.returncode != 0:
            raise RuntimeError(f"sacct failed: {res.stderr}")
        return [dict(zip(fields, line.split("|"))) for line in res.stdout.splitlines() if line.strip()]

    def controller_log(self, job_ids: list[str]) -> str:
        """The controller's log lines that name these jobs (for failure messages)."""
        log = self.state / "log" / "slurmctld.log"
        if not log.is_file():
            return "(no slurmctld.log)"
        pattern = re.compile(r"\bJobId=(%s)\b" % "|".join(map(re.escape, job_ids)))
        return "".join(
            line for line in log.read_text(errors="replace").splitlines(keepends=True) if pattern.search(line)
        )[-4000:]

    def cancel_all(self) -> None:
        """scancel every job of this cluster (best effort, bounded)."""
        try:
            self.run("scancel", "--quiet", "--user", str(os.getuid()), timeout=15)
        except (subprocess.TimeoutExpired, OSError):
            pass

    def stop(self) -> None:
        """Cancel the jobs, then stop the daemons by PID file (scripts/slurm/stop.sh)."""
        run_bounded(["bash", str(SCRIPTS / "stop.sh"), str(self.state)], timeout=STOP_TIMEOUT_S, env=_clean_env())


def _clean_env() -> dict:
    """The current environment without SLURM/LOCUS_SLURM settings that could point elsewhere."""
    return {
        k: v
        for k, v in os.environ.items()
        if not (
            k.startswith("SLURM_")
            or k.startswith("LOCUS_SLURM_")
            or k.startswith("SBATCH_")
            or k.startswith("SNAKEMAKE_PROFILE")
        )
    }
