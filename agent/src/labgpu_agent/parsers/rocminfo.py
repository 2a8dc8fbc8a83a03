"""`rocminfo`: the HSA agents. GPU agents give the gfx target, CU count, VRAM pool and address.

A partitioned GPU (CPX) shows up as several GPU agents with fewer CUs each.
"""

from __future__ import annotations

import re

from labgpu_agent.facts import Facts, GpuFacts
from labgpu_agent.parsers._text import (
    UnknownLines,
    is_elision,
    numbered_lines,
    strip_annotations,
    to_int,
)

# rocminfo's lines: banners, `Agent N`, `Key: value` at any depth, and the bare `x  1024(0x400)`
# lines under "… per Dimension:".
_KNOWN_LINE = re.compile(
    r"^(?:=+|\*+|Agent \d+|HSA System Attributes|HSA Agents|\*\*\* Done \*\*\*|ROCk module.*"
    r"|\s*[^:]+:.*|\s+[xyz]\s+\d+.*|\s*(?:ISA|Pool) \d+)$"
)

_AGENT_SPLIT = re.compile(r"^\*+\s*\n\s*Agent \d+\s*\n\*+\s*$", re.MULTILINE)


def parse_rocminfo(text: str) -> Facts:
    body = strip_annotations(text)
    facts = Facts()
    if module := re.search(r"ROCk module(?: version)?\s*([\w.\-]*)\s*is loaded", body):
        facts.driver_loaded = True
        facts.driver_name = "amdgpu"
        facts.driver_version = module.group(1) or None
    elif "ROCk module is NOT loaded" in body:
        facts.driver_loaded = False
    if runtime := re.search(r"^Runtime Version:\s*(\S+)", body, re.MULTILINE):
        facts.tool_versions["hsa-runtime"] = runtime.group(1)
    gpu_index = 0
    for agent in _AGENT_SPLIT.split(body)[1:]:
        if _field(agent, "Device Type") != "GPU":
            continue
        model = _field(agent, "Marketing Name")
        facts.gpus.append(
            GpuFacts(
                index=gpu_index,
                vendor="amd",
                gfx_target=_field(agent, "Name"),
                model=model,
                uuid=_field(agent, "Uuid"),
                compute_units=to_int(_field(agent, "Compute Unit")),
                bdf=_bdf_from_id(to_int(_field(agent, "BDFID"))),
                vram_total_mib=_vram_pool_mib(agent),
                virtual_function=model.upper().endswith(" VF") if model else None,
            )
        )
        gpu_index += 1
    unknown = UnknownLines()
    for number, line in numbered_lines(text):
        if line.strip() and not is_elision(line) and not _KNOWN_LINE.match(line):
            unknown.add(number, line)
    if not _AGENT_SPLIT.search(body) and facts.driver_loaded is None and not unknown.count:
        unknown.reason = "no HSA agent and no ROCk module line in the output"
        for number, line in numbered_lines(text):
            if line.strip():
                unknown.add(number, line)
                break
    facts.parse_problems = unknown.problems()
    return facts


def _field(agent: str, name: str) -> str | None:
    # Only top-level fields (two-space indent), so pool and ISA `Name:` lines are not taken.
    match = re.search(rf"^  {re.escape(name)}:\s*(.*?)\s*$", agent, re.MULTILINE)
    return match.group(1) if match and match.group(1) else None


def _bdf_from_id(bdf_id: int | None) -> str | None:
    """rocminfo's BDFID packs bus<<8 | device<<3 | function (33536 → 0000:83:00.0)."""
    if bdf_id is None or bdf_id == 0:
        return None
    bus, device, function = bdf_id >> 8 & 0xFF, bdf_id >> 3 & 0x1F, bdf_id & 0x7
    return f"{bdf_id >> 16:04x}:{bus:02x}:{device:02x}.{function}"


def _vram_pool_mib(agent: str) -> float | None:
    """The first GLOBAL COARSE GRAINED pool is the card's VRAM (size printed in KB)."""
    match = re.search(
        r"Segment:\s*GLOBAL; FLAGS: COARSE GRAINED\s*\n\s*Size:\s*(\d+)\(0x[0-9a-f]+\)\s*KB",
        agent,
    )
    return int(match.group(1)) / 1024 if match else None
