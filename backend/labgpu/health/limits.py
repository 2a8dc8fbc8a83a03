"""What an agent report may contain (I-9; docs/security.md, "Input limits").

Whoever holds a node holds its agent token (the researcher has root there), so a report is hostile
input. `labgpu_agent.validate_report` checks the shape both ends share; the bounds below are the
backend's own: sizes, finite numbers inside physical ranges, strings the database can store, a
real date. `smoke_value` is also what the baselines use to read stored reports, so a row written
before these bounds (or straight into the database) is skipped there, never trusted.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from labgpu.core.timeutils import EARLIEST_ACCEPTED, LATEST_ACCEPTED

MAX_REPORT_BYTES = 256 * 1024  # a real report is 5–8 KB for one GPU, ~40 KB for eight
MAX_DEPTH = 12  # a real report nests 6 levels; room for richer evidence
MAX_VALUES = 20_000  # every value, key and container counted
MAX_LIST = 1024
MAX_OBJECT_KEYS = 256
MAX_KEY_CHARS = 128
MAX_STRING_CHARS = 8192
MAX_NUMBER = 1e15  # facts beyond this are not physical (VRAM in bytes: ~1e12)
# The columns the report's strings land in.
MAX_AGENT_VERSION = 32
MAX_PROFILE = 64
MAX_HOSTNAME = 255
_COLLECTED_AT = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|\+00:00)$", re.ASCII
)


@dataclass(frozen=True)
class SmokeBound:
    units: frozenset[str]
    maximum: float  # per node, all GPUs together (8 GPUs of the fastest type, with headroom)


# Physical ranges per smoke test; the agent's units (labgpu_agent/smoke). MI355X: ~2.5 PFLOP/s
# dense bf16 and 8 TB/s per GPU; an 8-GPU node stays well inside these.
SMOKE_BOUNDS: dict[str, SmokeBound] = {
    "matmul": SmokeBound(frozenset({"TFLOP/s", "TFLOPS"}), 50_000.0),
    "bandwidth": SmokeBound(frozenset({"GB/s"}), 200_000.0),
    "sdxl": SmokeBound(frozenset({"images/s"}), 1_000.0),
    "llm": SmokeBound(frozenset({"tokens/s"}), 10_000_000.0),
}
MAX_SMOKE_DURATION_S = 86_400.0
# Per-GPU facts with a physical range (others need only be finite and ≤ MAX_NUMBER).
GPU_FACT_BOUNDS: dict[str, tuple[float, float]] = {
    "index": (0, 1023),
    "compute_units": (0, 100_000),
    "vram_total_mib": (0, 16 * 1024 * 1024),
    "temperature_hotspot_c": (-60, 250),
    "temperature_memory_c": (-60, 250),
    "temperature_edge_c": (-60, 250),
    "power_draw_w": (0, 10_000),
    "power_cap_w": (0, 10_000),
    "pcie_gen": (0, 16),
    "pcie_width": (0, 64),
    "ecc_uncorrectable": (0, 1e12),
}


class ReportRefused(ValueError):
    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_text(text: str, path: str, limit: int, what: str) -> None:
    if len(text) > limit:
        raise ReportRefused(f"{what} longer than {limit} characters", path)
    if "\x00" in text:
        raise ReportRefused(f"{what} contains a NUL character", path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ReportRefused(f"{what} is not valid Unicode (lone surrogate)", path) from None


def check_sizes(payload: Any) -> None:
    """Depth, counts, lengths, finite numbers and storable strings, everywhere in the report."""
    seen = 0
    stack: list[tuple[Any, str, int]] = [(payload, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise ReportRefused(f"more than {MAX_VALUES} values", "")
        if depth > MAX_DEPTH:
            raise ReportRefused(f"nested deeper than {MAX_DEPTH} levels", path)
        if isinstance(value, dict):
            if len(value) > MAX_OBJECT_KEYS:
                raise ReportRefused(f"more than {MAX_OBJECT_KEYS} keys", path)
            for key, item in value.items():
                child = f"{path}/{key}" if path else str(key)
                _check_text(str(key), child, MAX_KEY_CHARS, "key")
                stack.append((item, child, depth + 1))
        elif isinstance(value, list):
            if len(value) > MAX_LIST:
                raise ReportRefused(f"more than {MAX_LIST} items", path)
            stack.extend((item, f"{path}/{i}", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            _check_text(value, path, MAX_STRING_CHARS, "text")
        elif _is_number(value) and not (
            math.isfinite(value) and -MAX_NUMBER <= value <= MAX_NUMBER
        ):
            raise ReportRefused(f"number out of range (|x| ≤ {MAX_NUMBER:g})", path)


def smoke_value(result: Any) -> tuple[str, str, str, float] | None:
    """(name, metric, unit, value) of a passed smoke result inside its physical range, else None.

    Reads stored rows too, whatever they hold: anything unexpected is None, never an error.
    """
    if not isinstance(result, dict) or result.get("status") != "passed":
        return None
    name, metric, unit, value = (result.get(k) for k in ("name", "metric", "unit", "value"))
    bound = SMOKE_BOUNDS.get(name) if isinstance(name, str) else None
    if bound is None or not isinstance(metric, str) or len(metric) > MAX_KEY_CHARS:
        return None
    if unit not in bound.units or not _is_number(value):
        return None
    value = float(value)
    if not (math.isfinite(value) and 0 <= value <= bound.maximum):
        return None
    return name, metric, unit, value


def check_semantics(payload: dict[str, Any]) -> datetime:
    """Bounds the schema cannot say; returns `collected_at` as an aware UTC datetime."""
    for key, limit in (
        ("agent_version", MAX_AGENT_VERSION),
        ("profile", MAX_PROFILE),
        ("hostname", MAX_HOSTNAME),
    ):
        if isinstance(payload.get(key), str) and len(payload[key]) > limit:
            raise ReportRefused(f"longer than {limit} characters", key)
    for index, result in enumerate(payload["smoke"]):
        bound = SMOKE_BOUNDS.get(result["name"])
        path = f"smoke/{index}"
        if bound is None:  # a smoke test the schema knows and these bounds do not yet
            raise ReportRefused(f"no bounds for smoke test {result['name']!r}", f"{path}/name")
        if result["unit"] not in bound.units:
            raise ReportRefused(f"unit must be one of {sorted(bound.units)}", f"{path}/unit")
        for key in ("value", "baseline"):
            number = result.get(key)
            if number is not None and not (0 <= number <= bound.maximum):
                raise ReportRefused(f"must be between 0 and {bound.maximum:g}", f"{path}/{key}")
        duration = result.get("duration_s")
        if duration is not None and duration > MAX_SMOKE_DURATION_S:
            raise ReportRefused(f"longer than {MAX_SMOKE_DURATION_S:g} s", f"{path}/duration_s")
    for index, gpu in enumerate(payload["facts"].get("gpus", [])):
        for key, (low, high) in GPU_FACT_BOUNDS.items():
            number = gpu.get(key)
            if _is_number(number) and not (low <= number <= high):
                raise ReportRefused(
                    f"must be between {low:g} and {high:g}", f"facts/gpus/{index}/{key}"
                )
    return parse_collected_at(payload["collected_at"])


def parse_collected_at(text: str) -> datetime:
    """`YYYY-MM-DDTHH:MM:SS[.ffffff](Z|+00:00)`, ASCII digits, a real date in the accepted range."""
    if not _COLLECTED_AT.match(text):
        raise ReportRefused("not an ISO 8601 UTC timestamp (YYYY-MM-DDTHH:MM:SSZ)", "collected_at")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except (ValueError, OverflowError):
        raise ReportRefused("not a real date and time", "collected_at") from None
    if not EARLIEST_ACCEPTED <= moment <= LATEST_ACCEPTED:
        raise ReportRefused(
            f"outside {EARLIEST_ACCEPTED:%Y-%m-%d} … {LATEST_ACCEPTED:%Y-%m-%d}", "collected_at"
        )
    return moment


# --- Heartbeats (issue 15): `{"status": "alive", "usage": {...}}` from labgpu_agent.usage ---------
MAX_HEARTBEAT_BYTES = 16 * 1024  # 64 GPUs of five numbers each is ~6 KB
MAX_HEARTBEAT_GPUS = 64
HEARTBEAT_GPU_BOUNDS: dict[str, tuple[float, float]] = {
    "utilisation_pct": (0, 100),
    "vram_used_mib": (0, 16 * 1024 * 1024),
    "vram_total_mib": (0, 16 * 1024 * 1024),
    "power_w": (0, 10_000),
}
HEARTBEAT_COUNT_BOUNDS: dict[str, int] = {"gpu_processes": 1_000_000, "ssh_sessions": 100_000}
# `/data` in bytes: DigitalOcean's largest volume is 16 TiB; past 64 TiB it is not our volume.
MAX_DATA_BYTES = 64 * 2**40


@dataclass(frozen=True)
class DataUsage:
    """`/data` as the agent's statvfs saw it: 0 ≤ used ≤ total, 1 ≤ total ≤ MAX_DATA_BYTES."""

    used_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class Usage:
    """A heartbeat's utilisation, validated: only known keys, every number inside its range."""

    gpus: list[dict[str, float | int]]
    gpu_processes: int | None
    ssh_sessions: int | None
    data: DataUsage | None = None


def check_heartbeat(payload: Any) -> Usage | None:
    """The heartbeat body, refused with the path of the first bad field; None without `usage`.

    Unknown keys are ignored (a newer agent may send more) and never stored."""
    if payload is None:
        return None  # the oldest agents post no body at all
    if not isinstance(payload, dict):
        raise ReportRefused("must be a JSON object", "")
    status = payload.get("status", "alive")
    if not isinstance(status, str) or len(status) > 32:
        raise ReportRefused("must be a short string", "status")
    usage = payload.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise ReportRefused("must be an object", "usage")
    gpus = usage.get("gpus", [])
    if not isinstance(gpus, list):
        raise ReportRefused("must be a list", "usage/gpus")
    if len(gpus) > MAX_HEARTBEAT_GPUS:
        raise ReportRefused(f"more than {MAX_HEARTBEAT_GPUS} GPUs", "usage/gpus")
    clean: list[dict[str, float | int]] = []
    seen: set[int] = set()
    for position, gpu in enumerate(gpus):
        path = f"usage/gpus/{position}"
        if not isinstance(gpu, dict):
            raise ReportRefused("must be an object", path)
        index = gpu.get("index")
        if not (isinstance(index, int) and not isinstance(index, bool) and 0 <= index <= 1023):
            raise ReportRefused("must be an integer between 0 and 1023", f"{path}/index")
        if index in seen:
            raise ReportRefused("repeats another GPU's index", f"{path}/index")
        seen.add(index)
        entry: dict[str, float | int] = {"index": index}
        for key, (low, high) in HEARTBEAT_GPU_BOUNDS.items():
            value = gpu.get(key)
            if value is None:
                continue
            if not (_is_number(value) and math.isfinite(value) and low <= value <= high):
                raise ReportRefused(
                    f"must be a number between {low:g} and {high:g}", f"{path}/{key}"
                )
            entry[key] = round(float(value), 1)
        clean.append(entry)
    counts: dict[str, int | None] = {}
    for key, high in HEARTBEAT_COUNT_BOUNDS.items():
        value = usage.get(key)
        if value is not None and not (
            isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= high
        ):
            raise ReportRefused(f"must be an integer between 0 and {high}", f"usage/{key}")
        counts[key] = value
    return Usage(
        gpus=clean,
        gpu_processes=counts["gpu_processes"],
        ssh_sessions=counts["ssh_sessions"],
        data=check_data_usage(usage.get("data")),
    )


def check_data_usage(data: Any) -> DataUsage | None:
    """`usage.data` (`{"used_bytes", "total_bytes"}` of `/data`); None when the agent sent none
    (no volume mounted). Whole numbers only: a float, a string or a bool is refused."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ReportRefused("must be an object", "usage/data")
    numbers: dict[str, int] = {}
    for key in ("used_bytes", "total_bytes"):
        value = data.get(key)
        if not (
            isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_DATA_BYTES
        ):
            raise ReportRefused(
                f"must be an integer between 0 and {MAX_DATA_BYTES}", f"usage/data/{key}"
            )
        numbers[key] = value
    if numbers["total_bytes"] == 0:
        raise ReportRefused("must be more than 0", "usage/data/total_bytes")
    if numbers["used_bytes"] > numbers["total_bytes"]:
        raise ReportRefused("must not be more than total_bytes", "usage/data/used_bytes")
    return DataUsage(used_bytes=numbers["used_bytes"], total_bytes=numbers["total_bytes"])
