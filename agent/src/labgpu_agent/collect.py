"""Collection: run the tools (or replay a fixture profile's recorded outputs) and parse them.

Live and fixture mode share everything after the raw outputs are in hand: a source's text goes
through the same parser either way, so fixture mode exercises the real parsing and checks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from labgpu_agent.facts import Facts, merge
from labgpu_agent.parsers import ParseError, parse
from labgpu_agent.parsers._text import shown
from labgpu_agent.parsers.nvidia_smi import QUERY_FIELDS
from labgpu_agent.parsers.processes import COMPUTE_APPS_FIELDS
from labgpu_agent.parsers.system import WATCHED_ENV, parse_devices, parse_id
from labgpu_agent.smoke.base import SmokeResult
from labgpu_agent.telemetry import SAMPLE_SOURCES

TOOL_TIMEOUT_S = 30


@dataclass(frozen=True)
class Source:
    parser: str  # key in PARSERS
    vendor: str | None  # None: every host
    command: tuple[str, ...] = ()
    path: str | None = None  # a file read instead of a command
    also: tuple[str, ...] = ()  # further parsers that read the same output


# Order matters: for a fact two sources both report, the first listed wins.
SOURCES: dict[str, Source] = {
    "nvidia-smi-xml": Source(
        "nvidia-smi-xml",
        "nvidia",
        ("nvidia-smi", "-q", "-x"),
        also=("nvidia-smi-remap", "nvidia-smi-processes"),
    ),
    "nvidia-smi-csv": Source(
        "nvidia-smi-csv", "nvidia", ("nvidia-smi", f"--query-gpu={QUERY_FIELDS}", "--format=csv")
    ),
    # The text form of -q carries the same fields as the XML; published captures (the H100 one
    # healthy-h100 replays) often have only it. Live collection reads the XML instead.
    "nvidia-smi-q": Source("nvidia-smi-q", "nvidia", ("nvidia-smi", "-q")),
    "nvidia-smi-apps": Source(
        "nvidia-smi-apps",
        "nvidia",
        ("nvidia-smi", f"--query-compute-apps={COMPUTE_APPS_FIELDS}", "--format=csv"),
    ),
    "amd-smi-static": Source("amd-smi-static", "amd", ("amd-smi", "static", "--json")),
    "amd-smi-metric": Source("amd-smi-metric", "amd", ("amd-smi", "metric", "--json")),
    "amd-smi-list": Source("amd-smi-list", "amd", ("amd-smi", "list", "--json")),
    "amd-smi-version": Source("amd-smi-version", "amd", ("amd-smi", "version")),
    # `amd-smi monitor -putm`: what AMD's acceptance guides print for whole 8-GPU nodes (the
    # healthy-*8 profiles replay those); live collection reads the JSON views instead.
    "amd-smi-monitor": Source("amd-smi-monitor", "amd", ("amd-smi", "monitor", "-putm")),
    "amd-smi-bad-pages": Source("amd-smi-bad-pages", "amd", ("amd-smi", "bad-pages")),
    "amd-smi-xgmi": Source("amd-smi-xgmi", "amd", ("amd-smi", "xgmi", "--link-status")),
    "nvidia-smi-nvlink": Source("nvidia-smi-nvlink", "nvidia", ("nvidia-smi", "nvlink", "-s")),
    "rocm-smi": Source(
        "rocm-smi",
        "amd",
        (
            "rocm-smi",
            "--showproductname",
            "--showtemp",
            "--showpower",
            "--showmaxpower",
            "--showuse",
            "--showmeminfo",
            "vram",
            "--json",
        ),
    ),
    "rocminfo": Source("rocminfo", "amd", ("rocminfo",)),
    "rocm-version": Source("rocm-version", "amd", path="/opt/rocm/.info/version"),
    "lspci-amd": Source("lspci", "amd", ("lspci", "-vvv", "-d", "1002:")),
    "lspci-nvidia": Source("lspci", "nvidia", ("lspci", "-vvv", "-d", "10de:")),
    "uname": Source("uname", None, ("uname", "-r")),
    "modules": Source("modules", None, path="/proc/modules"),
    "dmesg": Source("dmesg", None, ("dmesg", "--level=err,warn")),
    "id": Source("devices", None, ("id",)),  # the user's groups, read with `devices`
    "devices": Source("devices", None, ("ls", "-l")),
    "env": Source("env", None),
}
# `check --deep`: the vendors' own stress tools, minutes long, run only on request. RVS's `-m
# MODULE` runs that module's platform-specific configuration (conf/<MI300X|MI355X|…>/, with the
# model's targets); its user guide warns the generic conf/ files "may not reflect the correct
# thresholds" (docs/ug1main.md at 21584e14). The `rvs` parser adds RVS's own per-GPU verdicts.
DEEP_SOURCES: dict[str, Source] = {
    "dcgmi-diag": Source("dcgmi-diag-json", "nvidia", ("dcgmi", "diag", "-r", "2", "-j"), also=()),
    **{
        f"rvs-{module}": Source("rvs-measurements", "amd", ("rvs", "-m", module), also=("rvs",))
        for module in ("babel", "gst", "iet", "pebb", "pbqt")
    },
}
DEEP_TIMEOUT_S = 1800
_DEVICE_PATHS = {"amd": ("/dev/kfd", "/dev/dri"), "nvidia": ("/dev/nvidiactl", "/dev/nvidia0")}


@dataclass
class RawOutput:
    text: str | None  # None: the tool is not installed / the file does not exist
    exit_code: int = 0
    error: str | None = None


@dataclass
class FixtureProfile:
    name: str
    instance_profile: str
    description: str
    fault: str
    hostname: str
    outputs: dict[str, RawOutput]
    smoke: list[SmokeResult] = field(default_factory=list)
    expected_verdict: str | None = None
    expected_findings: list[str] = field(default_factory=list)


def collect_deep(vendor: str | None) -> dict[str, RawOutput]:
    """Run the vendor's stress tools one after the other (they load every GPU); absent → None."""
    return {
        name: _run(source.command, timeout_s=DEEP_TIMEOUT_S)
        for name, source in DEEP_SOURCES.items()
        if vendor is None or source.vendor == vendor
    }


def mark_own_processes(facts: Facts, pid: int | None = None) -> Facts:
    """The agent's own GPU context (a smoke test or deep test ran in this process) is not a
    process holding the GPU."""
    own = os.getpid() if pid is None else pid
    for proc in facts.gpu_processes:
        proc.own = proc.pid == own
    return facts


def telemetry_reader(vendor: str | None) -> Callable[[], Facts | None] | None:
    """One-shot clocks/power/temperature query for the deep check's sampler (None: no tool)."""
    vendor = vendor or ("nvidia" if _vendor_present("nvidia") else "amd")
    source = SOURCES.get(SAMPLE_SOURCES.get(vendor, ""))
    if source is None or shutil.which(source.command[0]) is None:
        return None

    def read() -> Facts | None:
        raw = _run(source.command)
        if raw.text is None or raw.exit_code != 0:
            return None
        try:
            return parse(source.parser, raw.text)
        except ParseError:
            return None

    return read


def facts_from_outputs(outputs: Mapping[str, RawOutput]) -> Facts:
    """Parse every raw output with its source's parser and merge the results."""
    parts: list[Facts] = []
    status: dict[str, str] = {}
    for name, source in {**SOURCES, **DEEP_SOURCES}.items():
        raw = outputs.get(name)
        if raw is None or name == "id":
            continue
        if raw.text is None:
            status[name] = "missing" if raw.error is None else f"error: {raw.error}"
            continue
        extra: list[Facts] = []
        try:
            if name == "devices":
                uid, groups = (
                    parse_id(outputs["id"].text or "") if "id" in outputs else (None, None)
                )
                part = parse_devices(raw.text, groups=groups, uid=uid)
            else:
                part = parse(source.parser, raw.text)
                extra = [parse(other, raw.text) for other in source.also]
        except ParseError as exc:
            # Printable and bounded: the status goes into the report, which refuses NUL bytes.
            first_line = (
                shown(raw.text.strip().splitlines()[0]) if raw.text.strip() else "no output"
            )
            status[name] = f"error: exit {raw.exit_code}: {first_line}"
            if raw.exit_code == 0 and exc.problem is not None:
                parts.append(Facts(parse_problems=[exc.problem]))  # a shape we cannot read
            continue
        if raw.exit_code != 0:
            for read in (part, *extra):
                read.parse_problems = []  # a failed tool prints its error, not its format
        status[name] = "ok" if raw.exit_code == 0 else f"exit {raw.exit_code}"
        parts.append(part)
        parts.extend(extra)
    facts = merge(parts)
    facts.sources = status
    return facts


def _run(command: tuple[str, ...], timeout_s: float = TOOL_TIMEOUT_S) -> RawOutput:
    if shutil.which(command[0]) is None:
        return RawOutput(text=None)
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            errors="replace",  # binary noise from a broken tool must not crash the agent
            timeout=timeout_s,
            env={**os.environ, "LC_ALL": "C"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return RawOutput(text=None, error=str(exc))
    # ls reports missing device nodes on stderr; keep both streams for it.
    text = done.stdout + (done.stderr if command[0] == "ls" else "")
    return RawOutput(text=text, exit_code=done.returncode)


def collect_live(vendor: str | None = None) -> dict[str, RawOutput]:
    """Run every tool relevant to `vendor` (both vendors when None), in parallel."""
    vendors = {vendor} if vendor else {"amd", "nvidia"}
    wanted = {n: s for n, s in SOURCES.items() if s.vendor is None or s.vendor in vendors}
    if vendor is not None:
        # The other vendor's listing, where its driver is there: a node of the wrong vendor is
        # then reported as what it is, not as "no GPU driver loaded".
        other = "nvidia" if vendor == "amd" else "amd"
        listing = "nvidia-smi-csv" if other == "nvidia" else "amd-smi-list"
        if _vendor_present(other):
            wanted[listing] = SOURCES[listing]
    if vendor is None:
        # Unknown vendor: skip the tools of a vendor that has no trace on this host.
        wanted = {n: s for n, s in wanted.items() if s.vendor is None or _vendor_present(s.vendor)}
    for replay_only in ("nvidia-smi-q", "amd-smi-monitor"):
        wanted.pop(replay_only, None)  # the XML / JSON forms are read live
    if shutil.which("amd-smi"):
        wanted.pop("rocm-smi", None)  # rocm-smi is the fallback for ROCm < 6 only

    def one(item: tuple[str, Source]) -> tuple[str, RawOutput]:
        name, source = item
        if name == "env":
            lines = [f"{k}={v}" for k, v in os.environ.items() if k in WATCHED_ENV]
            return name, RawOutput(text="\n".join(lines))
        if source.path is not None:
            path = Path(source.path)
            return name, RawOutput(text=path.read_text() if path.exists() else None)
        if name == "devices":
            paths = [p for v in vendors for p in _DEVICE_PATHS[v]]
            return name, _run(("ls", "-l", *paths))
        if name == "dmesg":
            raw = _run(source.command)
            if raw.exit_code != 0 and shutil.which("journalctl"):
                # dmesg_restrict hides the ring buffer from non-root users; journald may not.
                raw = _run(("journalctl", "-k", "-p", "warning", "-b", "--no-pager", "-q"))
            return name, raw
        return name, _run(source.command)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(pool.map(one, wanted.items()))


def _vendor_present(vendor: str) -> bool:
    if vendor == "amd":
        return (
            any(shutil.which(t) for t in ("amd-smi", "rocm-smi", "rocminfo"))
            or Path("/sys/module/amdgpu").exists()
        )
    return shutil.which("nvidia-smi") is not None or Path("/sys/module/nvidia").exists()


def _profiles_root() -> Traversable:
    return resources.files("labgpu_agent").joinpath("fixture_profiles")


def fixture_profile_names() -> list[str]:
    return sorted(
        p.name for p in _profiles_root().iterdir() if p.joinpath("profile.json").is_file()
    )


class UnknownFixtureProfile(KeyError):
    pass


def load_fixture_profile(name: str) -> FixtureProfile:
    """Read a shipped fixture profile; `extends` inherits another profile's recorded outputs."""
    folder = _profiles_root().joinpath(name)
    if not folder.joinpath("profile.json").is_file():
        known = ", ".join(fixture_profile_names())
        raise UnknownFixtureProfile(f"unknown fixture profile {name!r}; known: {known}")
    meta: dict[str, Any] = json.loads(folder.joinpath("profile.json").read_text("utf-8"))
    outputs: dict[str, RawOutput] = {}
    smoke: list[SmokeResult] = []
    if base := meta.get("extends"):
        parent = load_fixture_profile(base)
        outputs, smoke = dict(parent.outputs), parent.smoke
    for source, spec in meta.get("sources", {}).items():
        if spec is None:
            outputs[source] = RawOutput(text=None)  # the tool is absent on this node
            continue
        spec = {"file": spec} if isinstance(spec, str) else spec
        text = folder.joinpath(spec["file"]).read_text("utf-8")
        outputs[source] = RawOutput(text=text, exit_code=int(spec.get("exit_code", 0)))
    if "smoke" in meta:
        smoke = [SmokeResult.from_dict(s) for s in meta["smoke"]]
    return FixtureProfile(
        name=name,
        instance_profile=meta["instance_profile"],
        description=meta["description"],
        fault=meta.get("fault", "none"),
        hostname=meta.get("hostname", name),
        outputs=outputs,
        smoke=smoke,
        expected_verdict=meta.get("expected_verdict"),
        expected_findings=list(meta.get("expected_findings", [])),
    )
