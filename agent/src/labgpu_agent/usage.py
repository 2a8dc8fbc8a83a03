"""Live utilisation for the heartbeat: per-GPU utilisation, memory used and power, plus the
number of SSH sessions and of processes on the GPUs (see agent/README.md, "Heartbeat").

Live mode runs one cheap tool per vendor (`nvidia-smi -q -x`, or `amd-smi` whose default table
carries the numbers and the process list; `rocm-smi --json` on ROCm < 6) through the parsers the
health report uses. Fixture mode (the emulator's agents) has no GPUs to read, so it makes varying
numbers from the fixture's recorded facts; a control file tells it to go idle and come back.

Nothing here may stop the agent: any failure yields fewer fields, never an exception.
"""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts
from labgpu_agent.parsers import ParseError, parse
from labgpu_agent.parsers._text import strip_annotations

# What the server accepts (backend labgpu/health/limits.py mirrors these).
MAX_GPUS = 64
USAGE_TIMEOUT_S = 10
# A row of the process table in `amd-smi`'s default view: `|    0       1823  N/A  …  0.0 % |`.
_AMD_PROCESS_ROW = re.compile(r"^\|\s+\d+\s+\d+\s+\S.*\|$")
IDLE_WORDS = ("idle",)
# Where cloud-init mounts the persistent volume (backend labgpu/providers/cloudinit.py).
DATA_MOUNT = "/data"


def count_processes_amd_default(text: str) -> int | None:
    """Rows of the `Processes:` table in `amd-smi`'s default view; None without that table."""
    body = strip_annotations(text)
    if "Processes:" not in body:
        return None
    section = body.split("Processes:", 1)[1]
    return sum(1 for line in section.splitlines() if _AMD_PROCESS_ROW.match(line.strip()))


def count_processes_nvidia_xml(text: str) -> int | None:
    """`<process_info>` entries under every GPU's `<processes>` of `nvidia-smi -q -x`."""
    body = strip_annotations(text).strip()
    start = body.find("<nvidia_smi_log")
    if start < 0:
        return None
    try:
        root = ET.fromstring(body[start:])
    except ET.ParseError:
        return None
    blocks = root.findall("gpu/processes")
    if not blocks:
        return None
    return sum(len(block.findall("process_info")) for block in blocks)


def count_processes_nvidia_q(text: str) -> int | None:
    """`Process ID` lines of `nvidia-smi -q` (the text view)."""
    if "Processes" not in text:
        return None
    return len(re.findall(r"^\s*Process ID\s*:\s*\d+", text, re.MULTILINE))


def count_ssh_sessions(ss_output: str) -> int:
    """Established TCP connections to port 22 (`ss -Htn state established '( sport = :22 )'`).

    Counting connections rather than utmp entries also sees sessions without a terminal
    (`ssh host cmd`, VS Code Remote, scp), which keep a researcher's work alive just the same."""
    return sum(1 for line in ss_output.splitlines() if line.strip())


def data_disk_usage(path: str = DATA_MOUNT) -> dict[str, int] | None:
    """`/data`'s used and total bytes as `df` counts them (statvfs: used = blocks − free), or
    None when no volume is mounted there: the bare directory's numbers would be the boot disk's
    (a pool without persistent data, or cloud-init has not mounted it yet)."""
    try:
        if not os.path.ismount(path):
            return None
        stats = os.statvfs(path)
    except OSError:
        return None
    total = stats.f_blocks * stats.f_frsize
    if total <= 0:
        return None
    used = max(0, (stats.f_blocks - stats.f_bfree) * stats.f_frsize)
    return {"used_bytes": used, "total_bytes": total}


def gpu_usage(gpu: GpuFacts, position: int) -> dict[str, Any]:
    """One GPU's heartbeat entry; a value no tool reported is left out (unknown, not zero)."""
    entry: dict[str, Any] = {"index": gpu.index if gpu.index is not None else position}
    for key, value in (
        ("utilisation_pct", gpu.utilisation_pct),
        ("vram_used_mib", gpu.vram_used_mib),
        ("vram_total_mib", gpu.vram_total_mib),
        ("power_w", gpu.power_draw_w),
    ):
        if value is not None and math.isfinite(value) and value >= 0:
            entry[key] = round(float(value), 1)
    return entry


def usage_from_facts(
    facts: Facts, *, gpu_processes: int | None, ssh_sessions: int | None
) -> dict[str, Any]:
    usage: dict[str, Any] = {"gpus": [gpu_usage(g, i) for i, g in enumerate(facts.gpus[:MAX_GPUS])]}
    if gpu_processes is not None:
        usage["gpu_processes"] = gpu_processes
    if ssh_sessions is not None:
        usage["ssh_sessions"] = ssh_sessions
    return usage


def _run_text(command: tuple[str, ...]) -> str | None:
    from labgpu_agent.collect import _run

    raw = _run(command, timeout_s=USAGE_TIMEOUT_S)
    return raw.text if raw.text is not None and raw.exit_code == 0 else None


def _facts(parser: str, text: str | None) -> Facts | None:
    if text is None:
        return None
    try:
        return parse(parser, text)
    except ParseError:
        return None


def collect_usage_live() -> dict[str, Any]:
    """Read the GPUs and sessions of this host now."""
    facts: Facts | None = None
    processes: int | None = None
    if shutil.which("nvidia-smi"):
        text = _run_text(("nvidia-smi", "-q", "-x"))
        facts = _facts("nvidia-smi-xml", text)
        processes = count_processes_nvidia_xml(text) if text else None
    elif shutil.which("amd-smi"):
        text = _run_text(("amd-smi",))
        facts = _facts("amd-smi-default", text)
        processes = count_processes_amd_default(text) if text else None
    elif shutil.which("rocm-smi"):
        text = _run_text(
            ("rocm-smi", "--showuse", "--showpower", "--showmeminfo", "vram", "--json")
        )
        facts = _facts("rocm-smi", text)
    sessions = None
    if shutil.which("ss"):
        ss = _run_text(("ss", "-Htn", "state", "established", "( sport = :22 )"))
        sessions = count_ssh_sessions(ss) if ss is not None else None
    usage = usage_from_facts(facts or Facts(), gpu_processes=processes, ssh_sessions=sessions)
    data = data_disk_usage()
    if data is not None:
        usage["data"] = data
    return usage


@dataclass
class FixtureUsage:
    """Varying, plausible numbers for a fixture-mode agent (the emulator has no GPUs).

    Busy: each GPU's utilisation wanders between 35 and 100 %, memory and power follow it, one
    or two SSH sessions and a process per GPU. Idle: 0 %, nothing allocated, idle power, no
    session. The mode is read on every heartbeat from `control_file` (its first word `idle` or
    `busy`; absent means busy), so a test or the demo can send a node idle and bring it back;
    `idle_after` (heartbeats) sends it idle on its own, for the demo. With `data_gb` (the size of
    the volume the emulator attached) it reports a /data that starts 10–50 % full and fills by
    0.1 % of its size per busy heartbeat, up to 95 %.
    """

    facts: Facts
    seed: str = ""
    control_file: Path | None = None
    idle_after: int | None = None
    data_gb: int | None = None
    beats: int = 0

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._level = [self._random.uniform(50, 90) for _ in self.facts.gpus[:MAX_GPUS]]
        # its own generator: the GPUs' numbers stay what they were for a seed
        self._data_fill = random.Random(f"{self.seed}/data").uniform(0.1, 0.5)

    def idle(self) -> bool:
        if self.control_file is not None:
            try:
                words = self.control_file.read_text("utf-8", errors="replace").split()
            except OSError:
                words = []
            if words:
                return words[0].lower() in IDLE_WORDS
        return self.idle_after is not None and self.beats > self.idle_after

    def sample(self) -> dict[str, Any]:
        self.beats += 1
        idle = self.idle()
        gpus = []
        for position, gpu in enumerate(self.facts.gpus[:MAX_GPUS]):
            total = gpu.vram_total_mib or 81_920.0
            cap = gpu.power_cap_w or 700.0
            if idle:
                util, used, power = 0.0, 0.0, cap * 0.15
            else:
                step = self._random.uniform(-12, 12)
                self._level[position] = min(100.0, max(35.0, self._level[position] + step))
                util = self._level[position]
                used = total * (0.3 + 0.6 * util / 100)
                power = cap * (0.2 + 0.75 * util / 100)
            gpus.append(
                {
                    "index": gpu.index if gpu.index is not None else position,
                    "utilisation_pct": round(util, 1),
                    "vram_used_mib": round(used, 1),
                    "vram_total_mib": round(total, 1),
                    "power_w": round(power, 1),
                }
            )
        usage: dict[str, Any] = {
            "gpus": gpus,
            "gpu_processes": 0 if idle else len(gpus),
            "ssh_sessions": 0 if idle else 1 + self.beats % 2,
        }
        if self.data_gb:
            if not idle:
                self._data_fill = min(0.95, self._data_fill + 0.001)
            total = self.data_gb * 2**30
            usage["data"] = {"used_bytes": int(total * self._data_fill), "total_bytes": total}
        return usage


def fixture_usage_from_env(facts: Facts, seed: str) -> FixtureUsage:
    """Fixture usage configured by the environment the emulator gives its agents:
    `LABGPU_USAGE_CONTROL` (a file; default `$LABGPU_AGENT_STATE_DIR/usage`) and
    `LABGPU_FIXTURE_IDLE_AFTER` (heartbeats) and `LABGPU_FIXTURE_DATA_GB` (the attached volume)."""
    control = os.environ.get("LABGPU_USAGE_CONTROL")
    state_dir = os.environ.get("LABGPU_AGENT_STATE_DIR")
    path = Path(control) if control else (Path(state_dir) / "usage" if state_dir else None)
    idle_after = os.environ.get("LABGPU_FIXTURE_IDLE_AFTER", "")
    data_gb = os.environ.get("LABGPU_FIXTURE_DATA_GB", "")
    return FixtureUsage(
        facts=facts,
        seed=seed,
        control_file=path,
        idle_after=int(idle_after) if idle_after.isdigit() else None,
        data_gb=int(data_gb) if data_gb.isdigit() else None,
    )
