"""Vendor stress tools run by `check --deep`, read so their numbers survive, not only a verdict.

- `dcgmi diag -r 2 -j` (NVIDIA DCGM 3.x JSON): `{"DCGM GPU Diagnostic": {"test_categories":
  [{"category", "tests": [{"name", "results": [{"gpu_ids" | "entity_id", "status", "info",
  "warnings"}]}]}]}}`; the PCIe plugin's info lines read `GPU 0 GPU to Host bandwidth:\t\t13.08
  GB/s` (shape of NVIDIA DCGM's own per-GPU test JSON, and of the info string quoted in
  NVIDIA/DCGM issue #215). DCGM 4 names the GPU `entity_id` and drops the `GPU n` prefix.
- ROCm Validation Suite (`rvs`): the shapes AMD publishes, named where they are read below and
  kept as fixtures in tests/fixtures/published/rvs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from labgpu_agent.facts import Diagnostic, Facts
from labgpu_agent.parsers._text import strip_annotations

_DCGM_BANDWIDTH = re.compile(
    r"(?:GPU (?P<gpu>\d+) )?(?P<dir>GPU to Host|Host to GPU|bidirectional) bandwidth:\s*"
    r"(?P<value>[\d.]+) GB/s"
)
_DIRECTION = {"GPU to Host": "d2h", "Host to GPU": "h2d", "bidirectional": "bidir"}
_DCGM_TEMP = re.compile(r"GPU (?P<gpu>\d+) temperature average:\s*(?P<value>[\d.]+) C")
_DCGM_POWER = re.compile(r"GPU (?P<gpu>\d+) .*?power[^\d]*(?P<value>[\d.]+) ?W", re.IGNORECASE)


def _gpu_ids(result: dict[str, Any]) -> list[int]:
    if "entity_id" in result:
        return [int(result["entity_id"])]
    return [int(g) for g in str(result.get("gpu_ids", "")).split(",") if g.strip().isdigit()]


def _texts(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [str(i.get("warning", i)) if isinstance(i, dict) else str(i) for i in items]


def parse_dcgmi_diag_json(text: str) -> Facts:
    """`dcgmi diag -r N -j` → one diagnostic per test and GPU, plus the measurements in `info`."""
    data = json.loads(strip_annotations(text))
    root = data.get("DCGM GPU Diagnostic", data)
    categories = root.get("test_categories") or []
    if not isinstance(categories, list) or not categories:
        raise ValueError("no test_categories in dcgmi diag JSON")
    facts = Facts()
    for category in categories:
        for test in category.get("tests", []):
            name = str(test.get("name", "?"))
            for result in test.get("results") or []:
                status = str(result.get("status", "")).lower()
                info = _texts(result.get("info"))
                warnings = _texts(result.get("warnings"))
                gpus = _gpu_ids(result)
                targets: list[int | None] = list(gpus) or [None]
                for gpu in targets:
                    facts.diagnostics.append(
                        Diagnostic(
                            tool="dcgmi",
                            test=f"{name} gpu {gpu}" if gpu is not None else name,
                            result=status,
                            detail="; ".join(
                                w
                                for w in warnings
                                if gpu is None or f"GPU {gpu}" in w or len(gpus) == 1
                            )[:500]
                            or None,
                        )
                    )
                for line in info:
                    if (bw := _DCGM_BANDWIDTH.search(line)) is not None:
                        gpu_text = bw.group("gpu")
                        on: int | None = (
                            int(gpu_text) if gpu_text else (gpus[0] if len(gpus) == 1 else None)
                        )
                        facts.measurements.append(
                            {
                                "tool": "dcgmi",
                                "test": name,
                                "gpu": on,
                                "metric": f"pcie_{_DIRECTION[bw.group('dir')]}_gb_per_s",
                                "value": float(bw.group("value")),
                                "unit": "GB/s",
                            }
                        )
                    elif (temp := _DCGM_TEMP.search(line)) is not None:
                        facts.measurements.append(
                            {
                                "tool": "dcgmi",
                                "test": name,
                                "gpu": int(temp.group("gpu")),
                                "metric": "temperature_average_c",
                                "value": float(temp.group("value")),
                                "unit": "°C",
                            }
                        )
                    elif (power := _DCGM_POWER.search(line)) is not None:
                        facts.measurements.append(
                            {
                                "tool": "dcgmi",
                                "test": name,
                                "gpu": int(power.group("gpu")),
                                "metric": "power_w",
                                "value": float(power.group("avg") or power.group("value")),
                                "unit": "W",
                            }
                        )
    return facts


# ROCm Validation Suite, as AMD publishes its output (RVS user guide docs/ug1main.md at 21584e14,
# 8x MI355X; ROCm/system-acceptance-docs docs/common/system-validation.md, 8x MI300X). Lines are
# `[RESULT] [<timestamp>] [<action>] <payload>`; a GPU is `[GPU:: <gpu_id>]` (gst, iet) or
# `[GPU:: <node> - <gpu_id> - <bdf>]` (pebb, pbqt), babel's table rows start with the gpu_id, and
# the summary table maps each gpu_id to its index and BDF (`AMD Instinct MI355X - 42583` over
# `0 - 2 - 0000:05:00.0`). gpu_id is the KFD's id, not an index: it is kept as `gpu_id`, and
# `gpu` is the index where the summary gives it.
_RVS_PREFIX = re.compile(r"^\[(?:RESULT|INFO\s*|ERROR|DEBUG|TRACE)\s*\]\s*\[\s*[\d.]+\s*\]\s*")
_RVS_ACTION = re.compile(r"^\[(?P<action>[^\]]+)\]\s*")
_RVS_TAGGED_GPU = (
    r"\[GPU::\s*(?:(?P<{p}node>\d+)\s*-\s*)?(?P<{p}id>\d+)"
    r"(?:\s*-\s*(?P<{p}bdf>[0-9a-fA-F:.]+))?\s*\]"
)
_GPU_TAG = re.compile(_RVS_TAGGED_GPU.format(p=""))
_BABEL_ROW = re.compile(
    r"^\s*(?:(?P<gpu_id>\d+)\s+)?(?P<fn>Read|Write|Copy|Mul|Add|Triad|Dot)\s+"
    r"(?P<best>[\d.]+)\s+(?P<max>[\d.]+)\s+(?P<min>[\d.]+)\s+(?P<avg>[\d.]+)\s*$"
)
_BABEL_UNIT = re.compile(r"GPU Id\s+Function\s+(?P<unit>MBytes|MiBytes)/sec")
_IET_POWER = re.compile(r"Power\(W\)\s+(?P<value>[\d.]+)")
_IET_PASS = re.compile(r"\]\s*pass:\s*(?P<ok>TRUE|FALSE)\b", re.IGNORECASE)
_ACTION_WATTS = re.compile(r"(?P<w>\d+)W(?![a-z])")
_GST_MET = re.compile(
    r"GFLOPS\s+(?P<value>\d+)\s+Target GFLOPS:\s*(?P<target>\d+)\s+met:\s*(?P<met>\w+)"
)
_PEBB = re.compile(
    r"pcie-bandwidth\s*\[\s*\d+/\d+\]\s*\[CPU::\s*(?P<cpu>\d+)\]\s*"
    + _RVS_TAGGED_GPU.format(p="")
    + r"\s*h2d::(?P<h2d>true|false)\s+d2h::(?P<d2h>true|false)\s+(?P<value>[\d.]+)\s*GBps"
)
_PBQT = re.compile(
    r"p2p-bandwidth\s*\[\s*\d+/\d+\]\s*"
    + _RVS_TAGGED_GPU.format(p="")
    + r"\s*"
    + _RVS_TAGGED_GPU.format(p="peer_")
    + r"\s*bidirectional:\s*(?P<bidir>true|false)\s+(?P<value>[\d.]+)\s*GBps"
)
_MEM_BANDWIDTH = re.compile(r"mem Test (?P<test>\d+):.*bandwidth = (?P<value>[\d.]+)\s*GB/s")
_GPUP = re.compile(r"^gpup (?P<gpu_id>\d+) (?P<prop>[a-z_0-9]+) (?P<value>\d+)$")
_SUMMARY_NAMES = re.compile(r"\|\s*(?P<model>[^|]*?)\s+-\s+(?P<gpu_id>\d+)\s*(?=\|)")
_SUMMARY_PLACES = re.compile(
    r"\|\s*(?P<index>\d+)\s+-\s+(?P<node>\d+)\s+-\s+(?P<bdf>[0-9a-fA-F:.]+)\s*(?=\|)"
)


def _rvs_lines(text: str) -> list[tuple[str | None, str]]:
    """(action, payload) per line, the `[RESULT] [timestamp]` prefix removed."""
    rows: list[tuple[str | None, str]] = []
    for raw in strip_annotations(text).splitlines():
        line = _RVS_PREFIX.sub("", raw.strip())
        action = _RVS_ACTION.match(line)
        if action is not None:
            rows.append((action.group("action").strip(), line[action.end() :]))
        else:
            rows.append((None, line))
    return rows


def rvs_gpu_places(text: str) -> dict[int, dict[str, Any]]:
    """gpu_id → {"index", "bdf", "model"} from RVS's summary table (where the output has one)."""
    places: dict[int, dict[str, Any]] = {}
    names: list[tuple[str, int]] = []
    for line in strip_annotations(text).splitlines():
        if found := _SUMMARY_NAMES.findall(line):
            names = [(model.strip(), int(gpu_id)) for model, gpu_id in found]
        elif names and (spots := list(_SUMMARY_PLACES.finditer(line))):
            for (model, gpu_id), spot in zip(names, spots, strict=False):
                places[gpu_id] = {
                    "index": int(spot.group("index")),
                    "bdf": spot.group("bdf").lower(),
                    "model": model,
                }
            names = []
    return places


def parse_rvs_measurements(text: str) -> Facts:
    """RVS babel/iet/gst/pebb/pbqt/mem/gpup logs → per-GPU numbers.

    Memory bandwidth per babel kernel and mem's stress test, iet's highest power sample per GPU
    and action (with the target its action name states), gst's final GFLOPS with its target,
    PCIe bandwidth per direction and CPU, peer bandwidth per pair, gpup's integer properties.
    """
    facts = Facts()
    places = rvs_gpu_places(text)
    babel_scale = 1000.0  # MB/s → GB/s; `mibibytes: true` prints MiB/s
    powers: dict[tuple[str, int], list[float]] = {}
    passed: dict[tuple[str, int], bool] = {}

    def add(
        test: str, gpu_id: int | None, metric: str, value: float, unit: str, **extra: Any
    ) -> None:
        place = places.get(gpu_id) if gpu_id is not None else None
        bdf = extra.pop("bdf", None)
        facts.measurements.append(
            {
                "tool": "rvs",
                "test": test,
                "gpu": place["index"] if place else None,
                "gpu_id": gpu_id,
                "bdf": (bdf or (place["bdf"] if place else None)),
                "metric": metric,
                "value": value,
                "unit": unit,
                **extra,
            }
        )

    for action, line in _rvs_lines(text):
        if (unit := _BABEL_UNIT.search(line)) is not None:
            babel_scale = 1000.0 if unit.group("unit") == "MBytes" else 1000.0 / 1.048576
        elif (row := _BABEL_ROW.match(line)) is not None:
            gpu_id = int(row.group("gpu_id")) if row.group("gpu_id") else None
            add(
                "babel",
                gpu_id,
                f"memory_{row.group('fn').lower()}_gb_per_s",
                round(float(row.group("best")) / babel_scale, 1),
                "GB/s",
                average=round(float(row.group("avg")) / babel_scale, 1),
            )
        elif action is None:
            continue
        elif (verdict := _IET_PASS.search(line)) and (tag := _GPU_TAG.search(line)):
            passed[(action, int(tag.group("id")))] = verdict.group("ok").upper() == "TRUE"
        elif (power := _IET_POWER.search(line)) and (tag := _GPU_TAG.search(line)):
            powers.setdefault((action, int(tag.group("id"))), []).append(
                float(power.group("value"))
            )
        elif (met := _GST_MET.search(line)) and (tag := _GPU_TAG.search(line)):
            add(
                "gst",
                int(tag.group("id")),
                "gemm_gflops",
                float(met.group("value")),
                "GFLOPS",
                action=action,
                target=float(met.group("target")),
            )
        elif (bw := _PEBB.search(line)) is not None:
            h2d, d2h = bw.group("h2d") == "true", bw.group("d2h") == "true"
            direction = "bidir" if h2d and d2h else "h2d" if h2d else "d2h"
            add(
                "pebb",
                int(bw.group("id")),
                f"pcie_{direction}_gb_per_s",
                float(bw.group("value")),
                "GB/s",
                bdf=(bw.group("bdf") or "").lower() or None,
                cpu=int(bw.group("cpu")),
                action=action,
            )
        elif (p2p := _PBQT.search(line)) is not None:
            add(
                "pbqt",
                int(p2p.group("id")),
                "p2p_bidir_gb_per_s" if p2p.group("bidir") == "true" else "p2p_unidir_gb_per_s",
                float(p2p.group("value")),
                "GB/s",
                bdf=(p2p.group("bdf") or "").lower() or None,
                peer_gpu_id=int(p2p.group("peer_id")),
                peer_bdf=(p2p.group("peer_bdf") or "").lower() or None,
                action=action,
            )
        elif (mem := _MEM_BANDWIDTH.search(line)) is not None:
            # mem names no GPU on these lines: one reading per GPU, in completion order.
            add("mem", None, "memory_stress_gb_per_s", float(mem.group("value")), "GB/s")
        elif (prop := _GPUP.match(line)) is not None:
            add(
                "gpup",
                int(prop.group("gpu_id")),
                prop.group("prop"),
                float(prop.group("value")),
                "",
            )
    for (action, gpu_id), samples in powers.items():
        watts = _ACTION_WATTS.search(action)
        add(
            "iet",
            gpu_id,
            "power_w",
            max(samples),
            "W",
            action=action,
            samples=len(samples),
            target=float(watts.group("w")) if watts else None,
            passed=passed.get((action, gpu_id)),  # RVS's own verdict on reaching the target
        )
    return facts
