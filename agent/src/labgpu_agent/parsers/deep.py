"""Vendor stress tools run by `check --deep`, read so their numbers survive, not only a verdict.

- `dcgmi diag -r 2 -j` (NVIDIA DCGM 3.x JSON): `{"DCGM GPU Diagnostic": {"test_categories":
  [{"category", "tests": [{"name", "results": [{"gpu_ids" | "entity_id", "status", "info",
  "warnings"}]}]}]}}`; the PCIe plugin's info lines read `GPU 0 GPU to Host bandwidth:\t\t13.08
  GB/s` (shape of NVIDIA DCGM's own per-GPU test JSON, and of the info string quoted in
  NVIDIA/DCGM issue #215). DCGM 4 names the GPU `entity_id` and drops the `GPU n` prefix.
- ROCm Validation Suite: the `babel` module embeds BabelStream, whose table (`Function
  MBytes/sec Min (sec) Max Average`, rows Copy/Mul/Add/Triad/Dot) is BabelStream's published
  output. RVS modules log `[<action>] <module> <gpu_id> <message>` (RVS sources, e.g.
  iet_worker.cpp; some builds print `[<module>] [GPU:: N]`), which gives the GPU; `iet` reports
  `Average power met the target power : 745.000000` or `… Average power is : 612.0`
  (ROCm/ROCmValidationSuite PRs #569 and #835); `pebb` lines carry the host↔device bandwidth
  (`h2d … 52.3 GBps`; that wording is ours, not a capture).
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


_RVS_GPU = re.compile(
    r"\[(?P<module>\w+)\]\s*\[\s*GPU::\s*(?P<gpu>\d+)\s*\]"
    r"|\[[^\]]+\]\s+(?P<module2>babel|iet|pebb|gst|mem)\s+(?P<gpu2>\d+)\b"
)
_BABEL_ROW = re.compile(r"^\s*(?P<fn>Copy|Mul|Add|Triad|Dot)\s+(?P<mbs>[\d.]+)\s")
_IET_POWER = re.compile(
    r"(?:Average power[^:\n]*:\s*(?P<avg>[\d.]+))|(?:power[^\d\n]*(?P<value>[\d.]+)\s*W\b)",
    re.IGNORECASE,
)
_PEBB = re.compile(
    r"(?P<dir>h2d|d2h|host to device|device to host|bidirectional)[^\d\n]*?"
    r"(?P<value>[\d.]+)\s*GB(?:ps|/s)",
    re.IGNORECASE,
)
_PEBB_DIR = {"host to device": "h2d", "device to host": "d2h", "bidirectional": "bidir"}


def parse_rvs_measurements(text: str) -> Facts:
    """RVS babel / iet / pebb logs → memory bandwidth per kernel and GPU, power, PCIe bandwidth."""
    facts = Facts()
    gpu: int | None = None
    for line in strip_annotations(text).splitlines():
        tagged = _RVS_GPU.search(line)
        if tagged is not None:
            gpu = int(tagged.group("gpu") or tagged.group("gpu2"))
            module = (tagged.group("module") or tagged.group("module2")).lower()
            if module == "iet" and (power := _IET_POWER.search(line)) is not None:
                facts.measurements.append(
                    {
                        "tool": "rvs",
                        "test": "iet",
                        "gpu": gpu,
                        "metric": "power_w",
                        "value": float(power.group("avg") or power.group("value")),
                        "unit": "W",
                    }
                )
            elif module == "pebb" and (bw := _PEBB.search(line)) is not None:
                direction = bw.group("dir").lower()
                facts.measurements.append(
                    {
                        "tool": "rvs",
                        "test": "pebb",
                        "gpu": gpu,
                        "metric": f"pcie_{_PEBB_DIR.get(direction, direction)}_gb_per_s",
                        "value": float(bw.group("value")),
                        "unit": "GB/s",
                    }
                )
        if (row := _BABEL_ROW.match(line.split("]")[-1])) is not None:
            facts.measurements.append(
                {
                    "tool": "rvs",
                    "test": "babel",
                    "gpu": gpu,
                    "metric": f"memory_{row.group('fn').lower()}_gb_per_s",
                    "value": round(float(row.group("mbs")) / 1000, 1),
                    "unit": "GB/s",
                }
            )
    return facts
