"""The critical path and core use of a finished Snakemake run, from its log.

    python scripts/critical_path.py .snakemake/log/<newest>.snakemake.log [--cores 2]

A job's time is from its start line to its "Finished jobid" line (whole seconds, as the log has them); a
job depends on another when it reads one of its outputs. Prints the run's wall time, the longest chain of
dependent jobs (no scheduler can finish sooner), the seconds spent with each number of threads busy, and
the bound the cores set (the jobs' thread-seconds / cores). When the critical path is far below the wall
time and the cores were busy throughout, only less work makes the run shorter.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
FIELD = re.compile(r"^\s+(input|output|jobid|threads): (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")


@dataclass
class Job:
    rule: str
    start: dt.datetime
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    threads: int = 1
    end: dt.datetime | None = None

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


def parse_log(text: str) -> dict[str, Job]:
    """{jobid: Job} of every job the log shows starting and finishing."""
    jobs, stamp, rule, fields, job = {}, None, None, {}, None

    def files(key: str) -> list[str]:
        return [s.strip() for s in fields.get(key, "").split(",") if s.strip()]

    for line in text.splitlines():
        if m := STAMP.match(line):
            stamp = dt.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := RULE.match(line):
            rule, fields, job = m.group(1), {}, None
        elif rule and (m := FIELD.match(line)):
            key, value = m.groups()
            fields[key] = value
            if key == "jobid":
                job = jobs[value] = Job(rule, stamp, files("input"), files("output"))
            elif key == "threads" and job is not None:
                job.threads = int(value)
        elif m := FINISHED.match(line):
            if m.group(1) in jobs:
                jobs[m.group(1)].end = stamp
    return {k: j for k, j in jobs.items() if j.end is not None}


def critical_path(jobs: dict[str, Job]) -> tuple[float, list[str]]:
    """(seconds, jobids) of the longest chain of jobs each reading an output of the one before."""
    producer = {out: jid for jid, job in jobs.items() for out in job.outputs}
    finish: dict[str, tuple[float, list[str]]] = {}

    def longest(jid: str) -> tuple[float, list[str]]:
        if jid not in finish:
            parents = {producer[i] for i in jobs[jid].inputs if i in producer and producer[i] != jid}
            best = max((longest(p) for p in parents), default=(0.0, []), key=lambda t: t[0])
            finish[jid] = (best[0] + jobs[jid].seconds, best[1] + [jid])
        return finish[jid]

    sys.setrecursionlimit(max(1000, 4 * len(jobs)))
    return max((longest(j) for j in jobs), default=(0.0, []), key=lambda t: t[0])


def busy_threads(jobs: dict[str, Job]) -> dict[int, float]:
    """{threads busy: seconds} over the run, from each job's start, end and threads."""
    events = sorted(
        [(j.start, j.threads) for j in jobs.values()] + [(j.end, -j.threads) for j in jobs.values()],
        key=lambda e: (e[0], e[1]),
    )
    out: dict[int, float] = {}
    busy, previous = 0, events[0][0] if events else None
    for when, change in events:
        out[busy] = out.get(busy, 0.0) + (when - previous).total_seconds()
        busy, previous = busy + change, when
    return {k: v for k, v in sorted(out.items()) if v > 0}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path, help="a Snakemake log (.snakemake/log/*.snakemake.log) of a finished run")
    ap.add_argument("--cores", type=int, default=2, help="the cores the run had (default 2)")
    args = ap.parse_args(argv)
    if not args.log.is_file():
        print(f"critical_path: {args.log} not found; give a .snakemake/log/*.snakemake.log file", file=sys.stderr)
        return 2
    jobs = parse_log(args.log.read_text(encoding="utf-8"))
    if not jobs:
        print(f"critical_path: {args.log} shows no finished job; give the log of a run that ran jobs", file=sys.stderr)
        return 2
    wall = (max(j.end for j in jobs.values()) - min(j.start for j in jobs.values())).total_seconds()
    seconds, chain = critical_path(jobs)
    thread_seconds = sum(j.seconds * j.threads for j in jobs.values())
    print(f"{len(jobs)} jobs, wall {wall:.0f} s")
    print(f"critical path {seconds:.0f} s ({len(chain)} jobs):")
    for jid in chain:
        job = jobs[jid]
        print(f"  {job.seconds:7.0f} s  {job.rule}  {job.outputs[0] if job.outputs else ''}")
    print(f"cores bound: {thread_seconds:.0f} thread-s / {args.cores} cores = {thread_seconds / args.cores:.0f} s")
    print("seconds with n threads busy: " + ", ".join(f"{n}: {s:.0f}" for n, s in busy_threads(jobs).items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
