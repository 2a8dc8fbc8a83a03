"""bench/lib/machine.py: a bench warns when the machine was busy beyond its own processes.

Read against this machine's real /proc and the kernel's own accounting of a child (wait4's
rusage), never against a typed sample of /proc. Each test samples about a second.
"""

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parents[4]
MACHINE = REPO / "bench" / "lib" / "machine.py"
# The sampler's scan period in these tests: a process's CPU after the last scan before it exits is
# missed, so every bound below allows one scan period of one core.
SCAN_S = 0.1

pytestmark = pytest.mark.skipif(not MACHINE.exists(), reason="bench/ is not part of this checkout")


def _machine():
    spec = importlib.util.spec_from_file_location("bench_machine", MACHINE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


machine = _machine() if MACHINE.exists() else None


def burn(cpu_s: float) -> str:
    """Python that spins until it has used `cpu_s` of CPU (however long a busy machine makes it)."""
    return f"import time\nwhile time.process_time() < {cpu_s}: pass"


def start_stranger_burner(cpu_s: float) -> int:
    """A CPU burner that is not the bench's: its parent exits at once, so it is nobody's child
    here (reparented to init) and in a session of its own. (Not on our stdout pipe, or run()
    would wait for it.)"""
    launcher = (
        "import subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', {burn(cpu_s)!r}], start_new_session=True,\n"
        "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(p.pid)"
    )
    out = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True)
    return int(out.stdout)


def rusage_cpu_s(proc: subprocess.Popen) -> float:
    """The kernel's own count of a finished child's CPU, independent of /proc/<pid>/stat."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def others_pids(summary) -> set[int]:
    return set(summary.others)


def test_a_busy_process_that_is_not_the_benchs_own_makes_the_bench_warn():
    stranger = start_stranger_burner(cpu_s=3)
    try:
        time.sleep(0.1)  # it runs
        sampler = machine.Sampler(scan_s=SCAN_S).start()
        time.sleep(1.0)
        summary = sampler.stop()
    finally:
        os.kill(stranger, 9)

    # The stranger alone is over the threshold (on a busy machine too: it gets its share of a core).
    assert summary.others[stranger] > machine.BUSY_CORES
    assert summary.busy
    warning = summary.lines()[-1]
    assert warning.startswith("# WARNING: the machine was busy beyond this bench")
    busiest_name, busiest_pid, _ = summary.top_others[0]
    assert f"{busiest_name} (pid {busiest_pid})" in warning


def test_the_same_burner_started_by_the_bench_counts_as_its_own():
    before = os.times()
    sampler = machine.Sampler(scan_s=SCAN_S).start()
    child = subprocess.Popen([sys.executable, "-c", burn(1.0)])
    child_cpu_s = rusage_cpu_s(child)
    summary = sampler.stop()
    after = os.times()

    assert child.pid not in others_pids(summary)
    # The bench's own CPU is this process's (its sampler thread included) plus the child's.
    this_process_s = (after.user + after.system) - (before.user + before.system)
    child_counted_s = summary.own_cores * summary.seconds - this_process_s
    # What ran after the last scan is missed: one scan period, more when a loaded machine delays
    # the sampler's thread; not following children at all would count none of the second.
    assert child_counted_s >= child_cpu_s - 3 * SCAN_S, (child_counted_s, child_cpu_s)


@pytest.mark.skipif(
    str(connection.settings_dict.get("HOST") or "127.0.0.1").startswith("/"),
    reason="over a Unix socket a backend's title names no client port",
)
def test_the_postgresql_backend_serving_the_benchs_connection_is_its_own():
    import psycopg

    from labgpu.core.testing import database_url

    with psycopg.connect(database_url(database="postgres")) as conn:
        backend = conn.info.backend_pid
        sampler = machine.Sampler(scan_s=SCAN_S).start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.0:
            conn.execute("SELECT sum(i) FROM generate_series(1, 200000) AS i").fetchone()
        summary = sampler.stop()
    assert backend not in others_pids(summary)
    assert summary.own_cores > machine.BUSY_CORES  # the backend did the summing


def test_proc_stat_is_parsed_as_the_kernel_counts_a_process():
    # A name with spaces and parentheses, as a process may call itself (proc(5): comm is "(…)").
    name = "x) y (z"
    child = subprocess.Popen(
        [sys.executable, "-c", f"open('/proc/self/comm', 'w').write({name!r})\n{burn(0.3)}"]
    )
    # Exited, not yet reaped: its /proc/<pid>/stat holds its final count, which wait4 then reports.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    stat = machine.read_processes()[child.pid]
    kernel_cpu_s = rusage_cpu_s(child)

    assert stat.comm == name and stat.ppid == os.getpid()
    assert abs(stat.cpu_ticks * machine.TICK_S - kernel_cpu_s) <= 2 * machine.TICK_S
    busy, total = machine.machine_ticks()
    assert 0 < busy < total


def test_a_shell_bench_prints_commit_command_and_summary():
    state = f"/tmp/bench-machine-test-{os.getpid()}"
    script = (
        f'"{sys.executable}" "{MACHINE}" start {state} --scan-s {SCAN_S} && '
        f'"{sys.executable}" -c \'while __import__("time").process_time() < 0.2: pass\' && '
        f'"{sys.executable}" "{MACHINE}" stop {state}; rm -f {state}'
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)

    assert out.returncode == 0, out.stderr
    bench, command, summary, *busy = out.stdout.splitlines()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    assert bench.startswith(f"# bench: commit {head}")
    assert command.startswith("# command: bash -c ")
    assert summary.startswith("# machine: ") and "load average (1 min)" in summary
    # Whether a WARNING follows is the machine's business; that it agrees with the figure is ours.
    others = float(summary.split(", others ")[1].split(" ")[0])
    if abs(others - machine.BUSY_CORES) > 0.01:  # the line rounds to hundredths
        assert bool(busy) == (others > machine.BUSY_CORES), out.stdout
    assert not busy or busy[0].startswith("# WARNING: the machine was busy beyond this bench")
