"""Reliability sources the health checks need beyond inventory: AMD bad pages and XGMI links,
NVIDIA NVLink state and row-remap failure.

Shapes, with where they were published:
- `amd-smi bad-pages` (text and `--json`): sections RETIRED / PENDING / UN_RES per GPU, each
  either "No bad pages found." or page records (`PAGE_ADDRESS`/`ADDRESS`, `PAGE_SIZE`, `STATUS`:
  RESERVED | PENDING | UNRESERVABLE, the `amdsmi_memory_page_status_t` values of the AMD SMI
  API reference). AMD's own node health check (AMD-AGI/Primus-SaFE,
  node-agent/pkg/monitors/scripts/gpu_bad_pages_003.sh) treats any listed address as a fault.
- `amd-smi xgmi --link-status`: the `XGMI LINK STATUS` table (`GPU0 0000:08:00.0 U U D X`,
  `U:Up D:Down X:Disabled`), and the `LINK METRIC TABLE` of plain `amd-smi xgmi` (`bit_rate`,
  `max_bandwidth` per GPU) — both from the AMD SMI changelog (ROCm/amdsmi CHANGELOG.md, ROCm
  6.4 / AMD SMI 25.3); in multi-VF guests every status is `N/A` (same changelog, ROCm 7.x).
- `nvidia-smi nvlink -s`: `GPU 0: NAME (UUID: …)` then `Link N: 26.562 GB/s` or `<inactive>`.
- `nvidia-smi -q -x`: `<remapped_rows><remapped_row_failure>` (Yes/No).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, InterconnectLink, normalise_bdf
from labgpu_agent.parsers._text import strip_annotations

_GPU_HEADER = re.compile(r"^\s*GPU\s*[:\[]?\s*(?P<index>\d+)\]?\s*:?\s*$", re.IGNORECASE)
_SECTION = re.compile(r"^\s*(?P<name>RETIRED|PENDING|UN_RES|UNRESERVABLE)\s*:", re.IGNORECASE)
_ADDRESS = re.compile(r"(?:PAGE_)?ADDRESS\s*:\s*(?P<addr>0x[0-9a-f]+|\d+)", re.IGNORECASE)
_STATUS = re.compile(r"^\s*STATUS\s*:\s*(?P<status>\w+)", re.IGNORECASE)


def _classify(section: str | None, status: str | None) -> str:
    """retired | pending | unreservable, from the record's STATUS or else its section."""
    word = (status or section or "").upper()
    if word.startswith("PEND"):
        return "pending"
    if word.startswith(("UNRES", "UN_RES")):
        return "unreservable"
    return "retired"


def _bad_pages_facts(pages: dict[int, list[str]], gpus_seen: set[int]) -> Facts:
    facts = Facts()
    for index in sorted(gpus_seen | set(pages)):
        kinds = pages.get(index, [])
        facts.gpus.append(
            GpuFacts(
                index=index,
                vendor="amd",
                retired_pages=kinds.count("retired"),
                pending_retired_pages=kinds.count("pending"),
                unreservable_pages=kinds.count("unreservable"),
            )
        )
    return facts


def parse_amd_smi_bad_pages(text: str) -> Facts:
    """`amd-smi bad-pages [--json]` → per GPU: retired, pending and unreservable page counts."""
    body = strip_annotations(text).strip()
    if body.startswith(("[", "{")):
        return _bad_pages_json(json.loads(body))
    pages: dict[int, list[str]] = {}
    gpus_seen: set[int] = set()
    gpu: int | None = None
    section: str | None = None
    records: list[list[str | None]] = []  # [gpu, section, status] per address, status filled later
    for line in body.splitlines():
        if (header := _GPU_HEADER.match(line)) is not None:
            gpu, section = int(header.group("index")), None
            gpus_seen.add(gpu)
            continue
        if (sec := _SECTION.match(line)) is not None:
            section = sec.group("name")
        if _ADDRESS.search(line) and gpu is not None:
            records.append([str(gpu), section, None])
        elif (status := _STATUS.match(line)) is not None and records:
            records[-1][2] = status.group("status")
    if gpu is None and body:
        raise ValueError(f"no `GPU: N` block in amd-smi bad-pages output: {body.splitlines()[0]!r}")
    for gpu_text, sec_name, status_name in records:
        pages.setdefault(int(str(gpu_text)), []).append(_classify(sec_name, status_name))
    return _bad_pages_facts(pages, gpus_seen)


def _bad_pages_json(data: Any) -> Facts:
    devices = data.get("gpu_data", data) if isinstance(data, dict) else data
    if isinstance(devices, dict):
        devices = [devices]
    if not isinstance(devices, list):
        raise ValueError("amd-smi bad-pages JSON is neither a list nor {gpu_data: [...]}")
    pages: dict[int, list[str]] = {}
    gpus_seen: set[int] = set()
    for position, device in enumerate(devices):
        if not isinstance(device, dict):
            continue
        index = int(device.get("gpu", position))
        gpus_seen.add(index)
        for key, value in device.items():
            if key == "gpu" or not isinstance(value, list):
                continue  # "No bad pages found." is a string
            for record in value:
                if isinstance(record, dict):
                    status = record.get("status")
                    pages.setdefault(index, []).append(
                        _classify(key, str(status) if status is not None else None)
                    )
    return _bad_pages_facts(pages, gpus_seen)


_LINK_ROW = re.compile(r"^\s*GPU(?P<gpu>\d+)\s+(?P<bdf>[0-9a-fA-F:.]+)\s+(?P<rest>.*)$")
_RATE = re.compile(r"(?P<value>[\d.]+)\s*Gb/s", re.IGNORECASE)
_XGMI_STATE = {"U": "up", "D": "down", "X": "disabled", "N/A": "unknown"}
_PEER_COLUMN = re.compile(r"\bGPU(\d+)\b")
_XGMI_ERR = re.compile(r"XGMI_ERR(?:OR)?(?:_STATUS)?\s*:\s*(?P<value>.+)$", re.IGNORECASE)


def parse_amd_smi_xgmi(text: str) -> Facts:
    """`amd-smi xgmi [--link-status]` text: link states per GPU, link rate and lanes."""
    facts = Facts()
    table: str | None = None
    gpu_for_error: int | None = None
    rates: dict[int, tuple[float, float]] = {}
    peer_columns: list[int] | None = None  # per-peer layout: the peer GPU of each cell
    for line in strip_annotations(text).splitlines():
        upper = line.strip().upper()
        if upper.startswith("XGMI LINK STATUS") or upper.startswith("GPU LINK PORT STATUS"):
            table = "status"
            continue
        if upper.startswith("LINK METRIC TABLE"):
            table = "metric"
            continue
        if table == "status" and upper.startswith("BDF"):
            # Newer amd-smi prints one column per peer GPU (SELF on the diagonal) instead of
            # one per link port; the row's cells then follow these peers.
            peers = [int(n) for n in _PEER_COLUMN.findall(upper)]
            peer_columns = peers or None
            continue
        if (header := _GPU_HEADER.match(line)) is not None:
            gpu_for_error = int(header.group("index"))
            continue
        if (err := _XGMI_ERR.search(line)) is not None and gpu_for_error is not None:
            value = err.group("value").strip().upper()
            count = 0 if value in ("NO ERROR", "0", "NONE") else 1
            facts.interconnect.append(
                InterconnectLink(kind="xgmi", gpu=gpu_for_error, state=None, errors=count)
            )
            continue
        row = _LINK_ROW.match(line)
        if row is None:
            continue
        gpu = int(row.group("gpu"))
        if table == "metric":
            found = [float(m.group("value")) for m in _RATE.finditer(row.group("rest"))]
            if len(found) >= 2:
                rates[gpu] = (found[0], found[1])
            continue
        if table == "status":
            tokens = row.group("rest").split()
            for position, token in enumerate(tokens):
                if token.upper() == "SELF":
                    continue  # the GPU's own column in the per-peer layout
                link = peer_columns[position] if peer_columns else position
                state = _XGMI_STATE.get(token.upper())
                if state is None:
                    raise ValueError(f"unknown XGMI link state {token!r} in {line.strip()!r}")
                facts.interconnect.append(
                    InterconnectLink(kind="xgmi", gpu=gpu, link=link, state=state)
                )
            facts.gpus.append(GpuFacts(index=gpu, bdf=normalise_bdf(row.group("bdf"))))
    for gpu, (bit_rate, max_bw) in sorted(rates.items()):
        width = round(max_bw / bit_rate) if bit_rate else None
        facts.interconnect.append(
            InterconnectLink(
                kind="xgmi", gpu=gpu, bit_rate_gbps=bit_rate, max_bandwidth_gbps=max_bw, width=width
            )
        )
    return facts


_NV_GPU = re.compile(r"^GPU (?P<gpu>\d+): ")
_NV_LINK = re.compile(r"^\s*Link (?P<link>\d+): (?P<value>.+)$")


def parse_nvidia_smi_nvlink(text: str) -> Facts:
    """`nvidia-smi nvlink -s`: one state per link; a GPU with no NVLink prints no links."""
    facts = Facts()
    gpu: int | None = None
    for line in strip_annotations(text).splitlines():
        if (header := _NV_GPU.match(line)) is not None:
            gpu = int(header.group("gpu"))
            continue
        link = _NV_LINK.match(line)
        if link is None or gpu is None:
            continue
        value = link.group("value").strip()
        rate = re.match(r"([\d.]+)\s*GB/s", value)
        inactive = "inactive" in value.lower() or "down" in value.lower()
        facts.interconnect.append(
            InterconnectLink(
                kind="nvlink",
                gpu=gpu,
                link=int(link.group("link")),
                state="down" if inactive else "up" if rate else "unknown",
                bit_rate_gbps=float(rate.group(1)) if rate else None,
            )
        )
    return facts


def parse_nvidia_remap_xml(text: str) -> Facts:
    """`nvidia-smi -q -x`: whether a row remap failed, per GPU (the main XML parser skips it)."""
    root = ET.fromstring(strip_annotations(text).strip())
    facts = Facts()
    for position, gpu_el in enumerate(root.findall("gpu")):
        failure = gpu_el.findtext("remapped_rows/remapped_row_failure")
        value = (failure or "").strip().lower()
        minor = (gpu_el.findtext("minor_number") or "").strip()
        facts.gpus.append(
            GpuFacts(
                index=int(minor) if minor.isdigit() else position,
                bdf=normalise_bdf(gpu_el.findtext("pci/pci_bus_id") or gpu_el.get("id")),
                row_remap_failure=True if value == "yes" else False if value == "no" else None,
            )
        )
    return facts
