"""`amd-smi` in all its shapes: `static`/`metric`/`list` as JSON or text, the default summary
table, `monitor`, and `version`.

The JSON and text forms carry the same tree (text keys are upper case), so both are brought to
one lower-case dict per GPU and read by one function. ROCm 6 prints a JSON list; ROCm 7 wraps it
in `{"gpu_data": [...]}`; readings may be bare or `{"value": v, "unit": u}`; anything may be N/A.
"""

from __future__ import annotations

import json
import re
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, normalise_bdf
from labgpu_agent.parsers._text import (
    indented_tree,
    is_missing,
    strip_annotations,
    to_float,
    to_int,
    to_str,
)


def parse_amd_smi(text: str) -> Facts:
    """`amd-smi static|metric|list [--json]`: any subset of blocks, even several commands."""
    body = strip_annotations(text).strip()
    devices = _json_devices(body) if body[:1] in "[{" else _text_devices(body)
    facts = Facts(gpus=[_gpu_from_tree(dev) for dev in devices])
    for dev in devices:
        driver = dev.get("driver")
        if isinstance(driver, dict):
            facts.driver_name = facts.driver_name or to_str(driver.get("name"))
            facts.driver_version = facts.driver_version or to_str(driver.get("version"))
            facts.kernel_release = facts.kernel_release or to_str(driver.get("os_kernel_version"))
    if facts.gpus:
        facts.driver_loaded = True  # amd-smi lists GPUs only through a loaded amdgpu
    return facts


def _json_devices(body: str) -> list[dict[str, Any]]:
    data: Any = json.loads(body)
    if isinstance(data, dict):
        data = data.get("gpu_data", data.get("gpus", [data]))
    return [_lower_keys(d) for d in data if isinstance(d, dict)]


def _text_devices(body: str) -> list[dict[str, Any]]:
    tree = indented_tree(body)
    devices = []
    for key, block in tree.items():
        match = re.fullmatch(r"GPU: (\d+)", key)
        if match and isinstance(block, dict):
            devices.append({"gpu": int(match.group(1)), **_lower_keys(block)})
    return devices


def _lower_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k).lower().replace(" ", "_"): _lower_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower_keys(v) for v in value]
    return value


def _block(tree: dict[str, Any], *names: str) -> dict[str, Any]:
    for name in names:
        block = tree.get(name)
        if isinstance(block, dict):
            return block
    return {}


def _gpu_from_tree(dev: dict[str, Any]) -> GpuFacts:
    asic, bus, vram = _block(dev, "asic"), _block(dev, "bus"), _block(dev, "vram")
    limit, usage, power = _block(dev, "limit"), _block(dev, "usage"), _block(dev, "power")
    temp, pcie, ecc = _block(dev, "temperature"), _block(dev, "pcie"), _block(dev, "ecc")
    mem_usage, partition = _block(dev, "mem_usage"), _block(dev, "partition")
    ppt0 = _block(limit, "ppt0")
    model = to_str(asic.get("market_name"))
    gpu = GpuFacts(
        index=to_int(dev.get("gpu")),
        vendor="amd",
        bdf=normalise_bdf(to_str(dev.get("bdf")) or to_str(bus.get("bdf"))),
        uuid=_uuid(dev.get("uuid")),
        model=model,
        gfx_target=to_str(asic.get("target_graphics_version")),
        compute_units=to_int(asic.get("num_compute_units")),
        vram_total_mib=_mib(vram.get("size")) or _mib(mem_usage.get("total_vram")),
        vram_used_mib=_mib(mem_usage.get("used_vram")),
        pcie_max_width=to_int(bus.get("max_pcie_width")),
        pcie_max_gen=_gen_from_speed(to_float(bus.get("max_pcie_speed"))),
        pcie_width=to_int(pcie.get("width")),
        pcie_gen=_gen_from_speed(to_float(pcie.get("speed"))),
        temperature_edge_c=to_float(temp.get("edge")),
        temperature_hotspot_c=to_float(temp.get("hotspot", temp.get("junction"))),
        temperature_memory_c=to_float(temp.get("mem", temp.get("memory"))),
        power_draw_w=to_float(power.get("socket_power", power.get("average_socket_power"))),
        power_cap_w=_positive(limit.get("socket_power"))
        or _positive(ppt0.get("socket_power_limit"))
        or _positive(power.get("power_limit")),
        power_max_cap_w=_positive(limit.get("max_power")) or _positive(ppt0.get("max_power_limit")),
        utilisation_pct=to_float(usage.get("gfx_activity")),
        ecc_correctable=_ecc(ecc, dev, "correctable"),
        ecc_uncorrectable=_ecc(ecc, dev, "uncorrectable"),
        ecc_deferred=_ecc(ecc, dev, "deferred"),
        compute_partition=to_str(
            partition.get("compute_partition", partition.get("accelerator_partition"))
        ),
        memory_partition=to_str(partition.get("memory_partition")),
    )
    if model is not None:
        gpu.virtual_function = model.upper().endswith(" VF")
    gpu.retired_pages = _bad_pages(dev.get("bad_pages"))
    return gpu


def _uuid(value: Any) -> str | None:
    text = to_str(value)
    return None if text is None or text.startswith("<") else text  # `<redacted>` in samples


def _mib(value: Any) -> float | None:
    number = to_float(value)
    if number is None:
        return None
    unit = str(value.get("unit") if isinstance(value, dict) else value).upper()
    if "GB" in unit:
        return number * 1024
    if unit.endswith(" B") or unit == "B":
        return number / 2**20
    return number  # amd-smi says "MB" and means MiB (192 GiB prints as 196288 MB)


def _positive(value: Any) -> float | None:
    number = to_float(value)
    return number if number else None  # 0 W means "not set" in amd-smi's limit block


def _gen_from_speed(gts: float | None) -> int | None:
    return {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}.get(gts) if gts else None


def _ecc(ecc: dict[str, Any], dev: dict[str, Any], kind: str) -> int | None:
    total = to_int(ecc.get(f"total_{kind}_count"))
    if total is not None:
        return total
    blocks = _block(dev, "ecc_blocks")
    counts = [to_int(b.get(f"{kind}_count")) for b in blocks.values() if isinstance(b, dict)]
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def _bad_pages(value: Any) -> int | None:
    if isinstance(value, list):
        return len(value)
    if isinstance(value, str) and "no bad pages" in value.lower():
        return 0
    return None


_DEFAULT_HEADER = re.compile(
    r"AMD-SMI\s+(?P<smi>\S+).*?amdgpu version:\s*(?P<drv>\S+).*?ROCm version:\s*(?P<rocm>\S+)"
)
_DEFAULT_ROW1 = re.compile(
    r"^\|\s*(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+(?P<name>.+?)\s*\|"
    r"\s*(?P<mem>N/A|\d+\s*%)\s+(?P<temp>N/A|\d+\s*°?C)\s+(?P<uec>N/A|\d+)\s+"
    r"(?P<pw>N/A|\d+)\s*/\s*(?P<cap>N/A|\d+)\s*W\s*\|"
)
_DEFAULT_ROW2 = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?P<hip>\S+)\s+(?P<oam>\S+)\s+(?P<part>\S+)\s*\|"
    r"\s*(?P<gfx>N/A|\d+\s*%)\s+(?P<fan>N/A|\d+\s*%?)\s+(?P<used>\d+|N/A)\s*/\s*(?P<total>\d+|N/A)"
    r"\s*MB\s*\|"
)


def parse_amd_smi_default(text: str) -> Facts:
    """The table `amd-smi` prints with no sub-command (AMD-SMI 25+)."""
    body = strip_annotations(text)
    facts = Facts()
    header = _DEFAULT_HEADER.search(body)
    if header:
        facts.tool_versions["amd-smi"] = header.group("smi")
        facts.driver_name, facts.driver_version = "amdgpu", header.group("drv")
        facts.rocm_version = header.group("rocm")
    platform = re.search(r"Platform:\s*(.+?)\s*\|", body)
    facts.platform = platform.group(1) if platform else None
    pending: GpuFacts | None = None
    for line in body.splitlines():
        if (row1 := _DEFAULT_ROW1.match(line)) is not None:
            name = row1.group("name")
            pending = GpuFacts(
                vendor="amd",
                bdf=normalise_bdf(row1.group("bdf")),
                model=name,
                virtual_function=name.upper().endswith(" VF"),
                temperature_hotspot_c=to_float(row1.group("temp")),
                ecc_uncorrectable=to_int(row1.group("uec")),
                power_draw_w=to_float(row1.group("pw")),
                power_cap_w=to_float(row1.group("cap")),
            )
        elif pending is not None and (row2 := _DEFAULT_ROW2.match(line)) is not None:
            pending.index = int(row2.group("gpu"))
            compute, _, memory = row2.group("part").partition("/")
            pending.compute_partition = None if is_missing(compute) else compute
            pending.memory_partition = memory or None
            pending.utilisation_pct = to_float(row2.group("gfx"))
            pending.vram_used_mib = to_float(row2.group("used"))
            pending.vram_total_mib = to_float(row2.group("total"))
            facts.gpus.append(pending)
            pending = None
    if facts.gpus:
        facts.driver_loaded = True
    return facts


def parse_amd_smi_monitor(text: str) -> Facts:
    """`amd-smi monitor`: a header row of column names, then one row per GPU (or partition)."""
    lines = [line for line in strip_annotations(text).splitlines() if line.strip()]
    header_at = next((i for i, line in enumerate(lines) if line.split()[:1] == ["GPU"]), None)
    facts = Facts()
    if header_at is None:
        return facts
    columns = lines[header_at].split()
    for line in lines[header_at + 1 :]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(columns) or not cells[0].isdigit():
            continue
        row = dict(zip(columns, cells, strict=True))
        used, _, total = row.get("VRAM_USAGE", "").partition("/")
        facts.gpus.append(
            GpuFacts(
                index=int(row["GPU"]),
                vendor="amd",
                power_draw_w=to_float(row.get("POWER")),
                temperature_hotspot_c=to_float(row.get("GPU_T") or row.get("HOTSPOT_T")),
                temperature_memory_c=to_float(row.get("MEM_T")),
                utilisation_pct=to_float(row.get("GFX%")),
                vram_used_mib=_mib(used + " GB") if "GB" in total else to_float(used),
                vram_total_mib=_mib(total) if total else None,
                ecc_uncorrectable=to_int(row.get("UECC") or row.get("SINGLE_ECC")),
            )
        )
    return facts


def parse_amd_smi_version(text: str) -> Facts:
    """`amd-smi version`: `AMDSMI Tool: … | AMDSMI Library version: … | ROCm version: 7.2.4 …`."""
    body = strip_annotations(text)
    facts = Facts()
    if rocm := re.search(r"ROCm version:\s*([\d.]+)", body):
        facts.rocm_version = rocm.group(1)
    if tool := re.search(r"AMDSMI Tool:\s*(\S+)", body):
        facts.tool_versions["amd-smi"] = tool.group(1)
    if drv := re.search(r"amdgpu version:\s*([\w.\-]+)", body):
        facts.driver_name, facts.driver_version = "amdgpu", drv.group(1)
    return facts


def parse_rocm_version_file(text: str) -> Facts:
    """`/opt/rocm/.info/version`: `7.2.4-81` (the package build follows the dash)."""
    body = strip_annotations(text).strip()
    match = re.match(r"(\d+\.\d+(?:\.\d+)?)", body)
    return Facts(rocm_version=match.group(1) if match else None)


__all__ = [
    "parse_amd_smi",
    "parse_amd_smi_default",
    "parse_amd_smi_monitor",
    "parse_amd_smi_version",
    "parse_rocm_version_file",
]
