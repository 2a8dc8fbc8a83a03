"""What else the machine did while a bench ran, so that a pasted figure says whether it was quiet.

A bench's numbers move with the machine's load (docs/benchmarks.md has figures that a later run on
a busy machine did not reproduce). Every bench under bench/ prints, through this module:

  at the start   # bench: commit 1a2b3c4-dirty, <UTC time>, load average 0.42 0.61 0.70, 2 cores
                 # command: .venv/bin/python bench/booking_storm.py --clients 32 (in /work/labgpu)
  at the end     # machine: <seconds>, load average (1 min) at start and end, the cores this bench
                 #   used, the cores others used and their share of the machine
                 # WARNING: ... when others used more than BUSY_CORES, naming the top others

"Others" is CPU time read from /proc/<pid>/stat (utime + stime) of every process that is not the
bench's own. The bench's own: the bench process, the pids it registers (Sampler(own_pids=...),
`start --pid`), everything descended from those (gunicorn and its workers, wrk, redis-server,
celery, Chromium), and the PostgreSQL backends that serve their connections: a backend's title
names its client's address and port ("postgres: 15/main: bob db 127.0.0.1(51234) idle"); the
socket with that local port in /proc/net/tcp belongs to one of the bench's processes or not. The
shared PostgreSQL's background processes (checkpointer, WAL writer) and a shared Redis count as
others: they serve everyone. /proc is scanned every SCAN_S seconds, so a process that lived less
than that between two scans is missed; the summary shows the machine's busy time (/proc/stat)
that neither side accounts for as "unattributed".

Python benches:   with machine.watch(): sys.exit(main())
Shell benches:    python bench/lib/machine.py start STATE [--pid PID]  (default: the caller)
                  ... the bench ...
                  python bench/lib/machine.py stop STATE               (prints the summary)
No psutil: it is not a requirement of the project (only a dependency of dependencies); /proc is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[2]
TICK_S = 1 / os.sysconf("SC_CLK_TCK")
# More than a tenth of one core used by others, on average over the bench: an idle machine's
# daemons stay at a few hundredths; a tenth of a core taken from a bench that keeps both cores of
# a 2-core machine busy (gunicorn workers + PostgreSQL) is 5 % of its CPU, the size of the
# differences docs/benchmarks.md reports between two trees.
BUSY_CORES = 0.10
SCAN_S = 0.5
TOP_OTHERS = 5
# Set by watch() for the processes it starts: a bench run by another bench prints nothing itself.
WATCHED_ENV = "LABGPU_BENCH_WATCHED"
_PG_CLIENT_PORT = re.compile(r"\(([0-9]+)\)")
_PG_PARALLEL_LEADER = re.compile(r"parallel worker for PID ([0-9]+)")


@dataclass(frozen=True)
class ProcStat:
    """The fields of /proc/<pid>/stat this module reads (proc(5): fields 2, 4, 14, 15, 22)."""

    pid: int
    comm: str
    ppid: int
    cpu_ticks: (
        int  # utime + stime: this process's own CPU, not its waited-for children's
    )
    start_ticks: int  # since boot

    @property
    def key(self) -> tuple[int, int]:
        """A pid is reused; a pid and its start time name one process."""
        return (self.pid, self.start_ticks)


def parse_stat(text: str) -> ProcStat:
    # comm (field 2) is in parentheses and may itself hold spaces and ")": split after the last ")".
    head, _, rest = text.rpartition(")")
    pid, _, comm = head.partition(" (")
    fields = rest.split()  # fields[0] is field 3 (state), so field n is fields[n - 3]
    return ProcStat(
        pid=int(pid),
        comm=comm,
        ppid=int(fields[1]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
        start_ticks=int(fields[19]),
    )


def read_processes() -> dict[int, ProcStat]:
    procs = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    procs[int(entry.name)] = parse_stat(f.read())
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                continue  # it exited between the listing and the read
    return procs


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of all cores since boot, from /proc/stat's first line (proc(5));
    guest time is already inside user and nice."""
    with open("/proc/stat") as f:
        name, *values = f.readline().split()
    assert name == "cpu", name
    user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in values[:8])
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def uptime_ticks() -> int:
    with open("/proc/uptime") as f:
        return int(float(f.read().split()[0]) / TICK_S)


def load_1min() -> float:
    return os.getloadavg()[0]


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return shlex.join(
                a.decode(errors="replace") for a in f.read().split(b"\0") if a
            )
    except OSError:
        return ""


def process_title(pid: int) -> str:
    """PostgreSQL rewrites argv[0] into one title with spaces; keep it as written."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _socket_inodes_by_local_port(ports: set[int]) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    port = int(cols[1].rsplit(":", 1)[1], 16)
                    if port in ports:
                        found.setdefault(port, set()).add(cols[9])
        except OSError:
            continue
    return found


def _socket_inodes_of(pids: Iterable[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


@dataclass
class Summary:
    seconds: float
    load_start: float
    load_end: float
    cores: int
    own_cores: float
    other_cores: float
    machine_busy_cores: float
    top_others: list[
        tuple[str, int, float]
    ]  # (name, pid, cores), the TOP_OTHERS busiest
    others: dict[int, float] = field(
        default_factory=dict
    )  # every other process: pid -> cores

    @property
    def busy(self) -> bool:
        return self.other_cores > BUSY_CORES

    @property
    def unattributed_cores(self) -> float:
        return max(0.0, self.machine_busy_cores - self.own_cores - self.other_cores)

    def lines(self) -> list[str]:
        share = 100 * self.other_cores / self.cores
        summary = (
            f"# machine: {self.seconds:.1f} s; load average (1 min) {self.load_start:.2f} at start, "
            f"{self.load_end:.2f} at end; this bench used {self.own_cores:.2f} cores, others "
            f"{self.other_cores:.2f} ({share:.1f} % of the machine's {self.cores} cores; "
            f"{self.unattributed_cores:.2f} unattributed: short-lived processes, the kernel)"
        )
        lines = [summary]
        if self.busy:
            top = ", ".join(
                f"{name} (pid {pid}) {c:.2f}" for name, pid, c in self.top_others
            )
            lines.append(
                f"# WARNING: the machine was busy beyond this bench: others used "
                f"{self.other_cores:.2f} cores on average (more than {BUSY_CORES:.2f} of one "
                f"core), so these figures are not a quiet machine's. Top others: {top}"
            )
        return lines


@dataclass
class Sampler:
    """CPU time of the bench's own processes and of everyone else's over [start(), stop()]."""

    own_pids: set[int] = field(default_factory=set)
    scan_s: float = SCAN_S
    _first: dict[tuple[int, int], int] = field(default_factory=dict)
    _last: dict[tuple[int, int], int] = field(default_factory=dict)
    _names: dict[tuple[int, int], str] = field(default_factory=dict)
    _own: set[tuple[int, int]] = field(default_factory=set)
    _not_ours: set[tuple[int, int]] = field(
        default_factory=set
    )  # PostgreSQL backends checked
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.own_pids = {os.getpid(), *self.own_pids}

    def register(self, pid: int) -> None:
        """Count `pid` (and what descends from it) as the bench's own, e.g. a server it did not
        start as a child."""
        self.own_pids.add(pid)

    def start(self) -> Sampler:
        self._t0 = time.monotonic()
        self._up0 = uptime_ticks()
        self._machine0 = machine_ticks()
        self._load0 = load_1min()
        self.scan()
        self._thread = threading.Thread(
            target=self._run, name="bench-machine", daemon=True
        )
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.scan_s):
            self.scan()

    def scan(self) -> None:
        with self._lock:
            procs = read_processes()
            own = self._own_pids(procs)
            self._claim_postgres_backends(procs, own)
            for pid, p in procs.items():
                if p.key not in self._first:
                    # Born after start(): all its CPU is inside the interval.
                    self._first[p.key] = (
                        0 if p.start_ticks >= self._up0 else p.cpu_ticks
                    )
                    self._names[p.key] = p.comm
                self._last[p.key] = p.cpu_ticks
                if pid in own:
                    self._own.add(p.key)

    def _own_pids(self, procs: dict[int, ProcStat]) -> set[int]:
        children: dict[int, list[int]] = {}
        for pid, p in procs.items():
            children.setdefault(p.ppid, []).append(pid)
        # Once own, always own: a server whose parent exited is reparented to init.
        todo = [
            pid
            for pid, p in procs.items()
            if pid in self.own_pids or p.key in self._own
        ]
        own: set[int] = set()
        while todo:
            pid = todo.pop()
            if pid not in own:
                own.add(pid)
                todo.extend(children.get(pid, ()))
        return own

    def _claim_postgres_backends(
        self, procs: dict[int, ProcStat], own: set[int]
    ) -> None:
        ports: dict[int, ProcStat] = {}
        for pid, p in procs.items():
            if p.comm != "postgres" or pid in own or p.key in self._not_ours:
                continue
            title = process_title(pid)
            if not title.startswith("postgres: "):
                continue  # the postmaster, or a backend not yet retitled: look again next scan
            self._names[p.key] = title
            if leader := _PG_PARALLEL_LEADER.search(title):
                if int(leader[1]) in own:
                    own.add(pid)
                else:
                    self._not_ours.add(p.key)
            elif port := _PG_CLIENT_PORT.search(title):
                ports[int(port[1])] = p
            else:
                self._not_ours.add(
                    p.key
                )  # a background process, or a Unix-socket client
        if not ports:
            return
        by_port = _socket_inodes_by_local_port(set(ports))
        ours = _socket_inodes_of(own) if by_port else set()
        for port, p in ports.items():
            if by_port.get(port, set()) & ours:
                own.add(p.pid)
            else:
                self._not_ours.add(p.key)

    def stop(self) -> Summary:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.scan()
        seconds = max(time.monotonic() - self._t0, 1e-6)
        busy1, _ = machine_ticks()
        own_ticks, other = 0, dict[tuple[int, int], int]()
        for key, last in self._last.items():
            used = max(0, last - self._first[key])
            if key in self._own:
                own_ticks += used
            elif used:
                other[key] = used

        def cores(ticks: int) -> float:
            return ticks * TICK_S / seconds

        top = sorted(other.items(), key=lambda kv: -kv[1])[:TOP_OTHERS]
        return Summary(
            seconds=seconds,
            load_start=self._load0,
            load_end=load_1min(),
            cores=os.cpu_count() or 1,
            own_cores=cores(own_ticks),
            other_cores=cores(sum(other.values())),
            machine_busy_cores=cores(busy1 - self._machine0[0]),
            top_others=[(self._names[k], k[0], cores(t)) for k, t in top],
            others={k[0]: cores(t) for k, t in other.items()},
        )


def commit() -> str:
    """`git rev-parse --short HEAD`, with -dirty when tracked or untracked files differ."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(ROOT), *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.strip()

    try:
        return git("rev-parse", "--short", "HEAD") + (
            "-dirty" if git("status", "--porcelain") else ""
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout)"


def header(pid: int | None = None) -> list[str]:
    pid = pid or os.getpid()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = os.getcwd()
    command = cmdline(pid).replace(
        "\n", "\\n"
    )  # one line, however the arguments were quoted
    return [
        f"# bench: commit {commit()}, {when}, load average {load}, {os.cpu_count()} cores",
        f"# command: {command} (in {cwd})",
    ]


def _print(lines: list[str], out: TextIO) -> None:
    for line in lines:
        print(line, file=out, flush=True)


@contextlib.contextmanager
def watch(out: TextIO | None = None) -> Iterator[Sampler | None]:
    """Print the header, sample while the block runs, then print the summary (and WARNING).
    On stderr, so that a bench's --json stdout stays JSON."""
    out = out or sys.stderr
    if os.environ.get(WATCHED_ENV) or {"-h", "--help"} & set(sys.argv[1:]):
        yield None
        return
    os.environ[WATCHED_ENV] = str(os.getpid())
    _print(header(), out)
    sampler = Sampler().start()
    try:
        yield sampler
    finally:
        _print(sampler.stop().lines(), out)


def _sample(state: Path, pid: int, scan_s: float) -> None:
    """The shell benches' sampler, detached: until SIGTERM, then its summary into STATE."""
    sampler = Sampler(own_pids={pid}, scan_s=scan_s).start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    state.write_text(json.dumps({"sampler": os.getpid()}))
    while not stopped.wait(3600):
        pass
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps({"lines": sampler.stop().lines()}))
    tmp.replace(state)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="action", required=True)
    start = sub.add_parser("start", help="print the header; sample in the background")
    start.add_argument(
        "state", type=Path, help="a file of the bench's own (e.g. in its tmp dir)"
    )
    start.add_argument(
        "--pid", type=int, default=os.getppid(), help="the bench (default: caller)"
    )
    start.add_argument("--scan-s", type=float, default=SCAN_S)
    stop = sub.add_parser(
        "stop", help="print the summary, and a WARNING when others were busy"
    )
    stop.add_argument("state", type=Path)
    sample = sub.add_parser("_sample")
    sample.add_argument("state", type=Path)
    sample.add_argument("--pid", type=int, required=True)
    sample.add_argument("--scan-s", type=float, default=SCAN_S)
    args = p.parse_args(argv)

    if args.action == "_sample":
        _sample(args.state, args.pid, args.scan_s)
    elif args.action == "start":
        _print(header(args.pid), sys.stdout)
        args.state.unlink(missing_ok=True)
        subprocess.Popen(
            [sys.executable, __file__, "_sample", str(args.state), "--pid", str(args.pid),
             "--scan-s", str(args.scan_s)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not args.state.exists():  # its first scan is the start of the interval
            if time.monotonic() > deadline:
                sys.exit(f"machine.py: the sampler did not start ({args.state})")
            time.sleep(0.02)
    else:
        sampler = json.loads(args.state.read_text())["sampler"]
        os.kill(sampler, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while "lines" not in (state := json.loads(args.state.read_text() or "{}")):
            if time.monotonic() > deadline:
                sys.exit(f"machine.py: the sampler {sampler} did not answer")
            time.sleep(0.02)
        _print(state["lines"], sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
