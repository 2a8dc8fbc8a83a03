"""`rocm-smi --json` (older ROCm; being replaced by amd-smi).

Keys changed across versions: MI300 prints `Current Socket Graphics Package Power (W)` where
MI200 printed `Average Graphics Package Power (W)`; MI300X has no edge sensor at all.
"""

from __future__ import annotations

import json
import re
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, normalise_bdf
from labgpu_agent.parsers._text import strip_annotations, to_float, to_int, to_str

_POWER_DRAW_KEYS = (
    "Current Socket Graphics Package Power (W)",
    "Average Graphics Package Power (W)",
)
_MODEL_KEYS = ("Card Series", "Card series", "Device Name", "Card model")


def parse_rocm_smi(text: str) -> Facts:
    data: dict[str, Any] = json.loads(strip_annotations(text))
    facts = Facts()
    system = data.get("system", {})
    if isinstance(system, dict) and (driver := to_str(system.get("Driver version"))):
        facts.driver_name, facts.driver_version = "amdgpu", driver
    for key, card in data.items():
        match = re.fullmatch(r"card(\d+)", key)
        if not match or not isinstance(card, dict):
            continue
        model = next((to_str(card[k]) for k in _MODEL_KEYS if to_str(card.get(k))), None)
        vram_total = to_float(card.get("VRAM Total Memory (B)"))
        vram_used = to_float(card.get("VRAM Total Used Memory (B)"))
        facts.gpus.append(
            GpuFacts(
                index=int(match.group(1)),
                vendor="amd",
                bdf=normalise_bdf(to_str(card.get("PCI Bus"))),
                model=model,
                uuid=to_str(card.get("Unique ID")),
                gfx_target=to_str(card.get("GFX Version")),
                temperature_edge_c=to_float(card.get("Temperature (Sensor edge) (C)")),
                temperature_hotspot_c=to_float(card.get("Temperature (Sensor junction) (C)")),
                temperature_memory_c=to_float(card.get("Temperature (Sensor memory) (C)")),
                power_cap_w=to_float(card.get("Max Graphics Package Power (W)")),
                power_draw_w=next((to_float(card[k]) for k in _POWER_DRAW_KEYS if k in card), None),
                utilisation_pct=to_float(card.get("GPU use (%)")),
                vram_total_mib=vram_total / 2**20 if vram_total is not None else None,
                vram_used_mib=vram_used / 2**20 if vram_used is not None else None,
                ecc_uncorrectable=to_int(card.get("Uncorrectable ECC errors")),
                virtual_function=model.upper().endswith(" VF") if model else None,
            )
        )
    if facts.gpus:
        facts.driver_loaded = True
    return facts
