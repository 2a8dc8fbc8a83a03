"""Clocks, power and temperature sampled while the deep check loads the GPUs.

A thread runs the vendor's one-shot query (the same commands and parsers as the health report:
`nvidia-smi --query-gpu=… --format=csv`, `amd-smi metric --json`) every `interval_s`, so what a
burn shows is read by the code that reads a node at rest.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from labgpu_agent.facts import Facts

SAMPLE_SOURCES = {"nvidia": "nvidia-smi-csv", "amd": "amd-smi-metric"}


@dataclass
class Sample:
    at_s: float  # seconds since the sampler started
    gpu: int | None
    sm_clock_mhz: float | None
    power_w: float | None
    temperature_c: float | None
    hbm_temperature_c: float | None
    utilisation_pct: float | None
    throttle_reasons: list[str] = field(default_factory=list)


def samples_from_facts(facts: Facts, at_s: float) -> list[Sample]:
    return [
        Sample(
            at_s=round(at_s, 2),
            gpu=g.index,
            sm_clock_mhz=g.sm_clock_mhz,
            power_w=g.power_draw_w,
            temperature_c=g.temperature_hotspot_c,
            hbm_temperature_c=g.temperature_memory_c,
            utilisation_pct=g.utilisation_pct,
            throttle_reasons=list(g.throttle_reasons),
        )
        for g in facts.gpus
    ]


class Sampler:
    """`with Sampler(read) as s: …` samples in the background; `s.samples` afterwards.

    `read()` returns the facts of one query (None when the tool is absent); a failing read is a
    missing sample, never an error in the burn."""

    def __init__(self, read: Callable[[], Facts | None], interval_s: float = 1.0) -> None:
        self.read, self.interval_s = read, interval_s
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="labgpu-telemetry", daemon=True)
        self._started = 0.0

    def __enter__(self) -> Sampler:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            at = time.perf_counter() - self._started
            try:
                facts = self.read()
            except Exception:  # a tool that breaks mid-burn costs a sample, not the check
                facts = None
            if facts is not None:
                self.samples.extend(samples_from_facts(facts, at))
            self._stop.wait(self.interval_s)


def summarise(samples: list[Sample], gpu: int | None) -> dict[str, Any]:
    """Per GPU: how many samples, min / median / max of each reading, throttle reasons seen."""
    mine = [s for s in samples if s.gpu == gpu]
    summary: dict[str, Any] = {"samples": len(mine)}
    for name in ("sm_clock_mhz", "power_w", "temperature_c", "hbm_temperature_c"):
        values = [v for v in (getattr(s, name) for s in mine) if v is not None]
        if values:
            summary[name] = {
                "min": min(values),
                "median": round(statistics.median(values), 1),
                "max": max(values),
            }
    summary["throttle_reasons"] = sorted({r for s in mine for r in s.throttle_reasons})
    return summary
