"""`nvidia-smi`: the CSV query (`--query-gpu=… --format=csv`), `-q -x` (XML) and `-q` (text).

Field names moved between drivers (`clocks_throttle_reasons` became `clocks_event_reasons`,
`power_readings` became `gpu_power_readings`); both spellings are read.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, normalise_bdf
from labgpu_agent.parsers._text import (
    UnknownLines,
    indented_tree,
    is_elision,
    numbered_lines,
    strip_annotations,
    to_float,
    to_int,
    to_str,
)

# The query the agent runs; the parser accepts any subset or superset of it.
QUERY_FIELDS = (
    "index,name,uuid,pci.bus_id,compute_cap,driver_version,pcie.link.gen.current,"
    "pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,temperature.gpu,"
    "temperature.memory,power.draw,power.limit,power.max_limit,memory.total,memory.used,"
    "utilization.gpu,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,"
    "retired_pages.double_bit.count,retired_pages.pending,remapped_rows.uncorrectable,"
    "remapped_rows.pending,clocks.sm,clocks.max.sm,clocks_event_reasons.hw_thermal_slowdown,"
    "clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown"
)

_THROTTLE = {
    "hw_thermal_slowdown": "hw_thermal_slowdown",
    "sw_thermal_slowdown": "sw_thermal_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown",
}


def parse_nvidia_smi_csv(text: str) -> Facts:
    lines = [ln for ln in strip_annotations(text).splitlines() if ln.count(",") >= 2]
    header_at = next(
        (i for i, ln in enumerate(lines) if re.search(r"(^|,\s*)(index|name)(\s*,|$)", ln)), None
    )
    facts = Facts()
    unknown = UnknownLines("rows that do not match the CSV header")
    if header_at is None:
        unknown.reason = "no `--query-gpu` CSV header (a line naming index or name)"
        for number, line in numbered_lines(text):
            if line.strip():
                unknown.add(number, line)
                break
        facts.parse_problems = unknown.problems()
        return facts
    rows = list(csv.reader(io.StringIO("\n".join(lines[header_at:])), skipinitialspace=True))
    columns = [re.sub(r"\s*\[.*\]$", "", c.strip()) for c in rows[0]]
    numbers = {line: number for number, line in reversed(numbered_lines(text))}
    for position, values in enumerate(rows[1:]):
        if len(values) != len(columns):
            line = lines[header_at + 1 + position]
            unknown.add(numbers.get(line, 0), line)
            continue
        row = {c: v.strip() for c, v in zip(columns, values, strict=True)}
        facts.driver_version = facts.driver_version or to_str(row.get("driver_version"))
        gpu = GpuFacts(
            index=to_int(row.get("index")) if "index" in row else position,
            vendor="nvidia",
            model=to_str(row.get("name")),
            uuid=to_str(row.get("uuid")),
            bdf=normalise_bdf(to_str(row.get("pci.bus_id"))),
            compute_capability=to_str(row.get("compute_cap")),
            pcie_gen=to_int(row.get("pcie.link.gen.current")),
            pcie_max_gen=to_int(row.get("pcie.link.gen.max")),
            pcie_width=to_int(row.get("pcie.link.width.current")),
            pcie_max_width=to_int(row.get("pcie.link.width.max")),
            temperature_hotspot_c=to_float(row.get("temperature.gpu")),
            temperature_memory_c=to_float(row.get("temperature.memory")),
            power_draw_w=to_float(row.get("power.draw")),
            power_cap_w=to_float(row.get("enforced.power.limit") or row.get("power.limit")),
            power_max_cap_w=to_float(row.get("power.max_limit")),
            vram_total_mib=to_float(row.get("memory.total")),
            vram_used_mib=to_float(row.get("memory.used")),
            utilisation_pct=to_float(row.get("utilization.gpu")),
            ecc_correctable=to_int(row.get("ecc.errors.corrected.volatile.total")),
            ecc_uncorrectable=to_int(row.get("ecc.errors.uncorrected.volatile.total")),
            retired_pages=_sum_known(
                row.get("retired_pages.double_bit.count"), row.get("remapped_rows.uncorrectable")
            ),
            pending_retired_pages=_pending(
                row.get("retired_pages.pending"), row.get("remapped_rows.pending")
            ),
            sm_clock_mhz=to_float(row.get("clocks.sm") or row.get("clocks.current.sm")),
            sm_clock_max_mhz=to_float(row.get("clocks.max.sm")),
            throttle_reasons=[
                name
                for key, name in _THROTTLE.items()
                if (
                    row.get(f"clocks_event_reasons.{key}")
                    or row.get(f"clocks_throttle_reasons.{key}")
                )
                == "Active"
            ],
        )
        facts.gpus.append(gpu)
    if facts.gpus:
        facts.driver_loaded, facts.driver_name = True, "nvidia"
    facts.parse_problems = unknown.problems()
    return facts


def _sum_known(*values: str | None) -> int | None:
    known = [n for n in (to_int(v) for v in values) if n is not None]
    return sum(known) if known else None


def _pending(*values: str | None) -> int | None:
    flags = [v.strip().lower() for v in values if v is not None and to_str(v) is not None]
    if not flags:
        return None
    return sum(1 for flag in flags if flag in ("yes", "1"))


def parse_nvidia_smi_xml(text: str) -> Facts:
    body = strip_annotations(text).strip()
    # The DOCTYPE names a DTD file that is not there; ElementTree ignores it, which is what we want.
    root = ET.fromstring(body)
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"the XML root is <{root.tag}>, not <nvidia_smi_log>")
    facts = Facts(
        driver_name="nvidia",
        driver_version=_text(root, "driver_version"),
        cuda_version=_text(root, "cuda_version"),
    )
    for position, gpu_el in enumerate(root.findall("gpu")):
        pci = "pci/pci_gpu_link_info"
        product = _text(gpu_el, "product_name")
        virt = _text(gpu_el, "gpu_virtualization_mode/virtualization_mode")
        gpu = GpuFacts(
            index=to_int(_text(gpu_el, "minor_number"))
            if _text(gpu_el, "minor_number")
            else position,
            vendor="nvidia",
            model=product,
            uuid=_text(gpu_el, "uuid"),
            bdf=normalise_bdf(_text(gpu_el, "pci/pci_bus_id") or gpu_el.get("id")),
            pcie_gen=to_int(_text(gpu_el, f"{pci}/pcie_gen/current_link_gen")),
            pcie_max_gen=to_int(_text(gpu_el, f"{pci}/pcie_gen/max_link_gen")),
            pcie_width=to_int(_text(gpu_el, f"{pci}/link_widths/current_link_width")),
            pcie_max_width=to_int(_text(gpu_el, f"{pci}/link_widths/max_link_width")),
            vram_total_mib=to_float(_text(gpu_el, "fb_memory_usage/total")),
            vram_used_mib=to_float(_text(gpu_el, "fb_memory_usage/used")),
            utilisation_pct=to_float(_text(gpu_el, "utilization/gpu_util")),
            temperature_hotspot_c=to_float(_text(gpu_el, "temperature/gpu_temp")),
            temperature_memory_c=to_float(_text(gpu_el, "temperature/memory_temp")),
            power_draw_w=to_float(
                _first(
                    gpu_el,
                    "gpu_power_readings/average_power_draw",
                    "gpu_power_readings/power_draw",
                    "power_readings/power_draw",
                )
            ),
            power_cap_w=to_float(
                _first(
                    gpu_el,
                    "gpu_power_readings/current_power_limit",
                    "gpu_power_readings/enforced_power_limit",
                    "power_readings/enforced_power_limit",
                    "power_readings/power_limit",
                )
            ),
            power_max_cap_w=to_float(
                _first(
                    gpu_el, "gpu_power_readings/max_power_limit", "power_readings/max_power_limit"
                )
            ),
            ecc_correctable=_sum_known(
                _text(gpu_el, "ecc_errors/volatile/sram_correctable"),
                _text(gpu_el, "ecc_errors/volatile/dram_correctable"),
                _text(gpu_el, "ecc_errors/volatile/single_bit/total"),
            ),
            ecc_uncorrectable=_sum_known(
                _text(gpu_el, "ecc_errors/volatile/sram_uncorrectable_parity"),
                _text(gpu_el, "ecc_errors/volatile/sram_uncorrectable_secded"),
                _text(gpu_el, "ecc_errors/volatile/dram_uncorrectable"),
                _text(gpu_el, "ecc_errors/volatile/double_bit/total"),
            ),
            retired_pages=_sum_known(
                _text(gpu_el, "retired_pages/double_bit_retirement/retired_count"),
                _text(gpu_el, "remapped_rows/remapped_row_unc"),
            ),
            pending_retired_pages=_pending(
                _text(gpu_el, "retired_pages/pending_blacklist")
                or _text(gpu_el, "retired_pages/pending_retirement"),
                _text(gpu_el, "remapped_rows/remapped_row_pending"),
            ),
            sm_clock_mhz=to_float(_text(gpu_el, "clocks/sm_clock")),
            sm_clock_max_mhz=to_float(_text(gpu_el, "max_clocks/sm_clock")),
            virtual_function=(virt == "VGPU") if virt else None,
            throttle_reasons=_xml_throttle(gpu_el),
        )
        facts.gpus.append(gpu)
    if facts.gpus:
        facts.driver_loaded = True
    return facts


def _text(el: ET.Element, path: str) -> str | None:
    found = el.find(path)
    return to_str(found.text) if found is not None and found.text else None


def _first(el: ET.Element, *paths: str) -> str | None:
    return next((v for v in (_text(el, p) for p in paths) if v is not None), None)


def _xml_throttle(gpu_el: ET.Element) -> list[str]:
    reasons = []
    for block in ("clocks_event_reasons", "clocks_throttle_reasons"):
        for key in _THROTTLE:
            for prefix in ("clocks_event_reason_", "clocks_throttle_reason_"):
                if _text(gpu_el, f"{block}/{prefix}{key}") == "Active":
                    reasons.append(key)
    return sorted(set(reasons))


def parse_nvidia_smi_q(text: str) -> Facts:
    """`nvidia-smi -q` (text): the same tree as `-q -x`, as `Key : value` lines."""
    tree = indented_tree(strip_annotations(text))
    unknown = UnknownLines()
    for number, line in numbered_lines(text):
        if line[:1] in (" ", "\t") or not line.strip() or is_elision(line):
            continue
        if not _Q_ROOT_LINE.match(line):
            unknown.add(number, line)
    facts = Facts(
        driver_name="nvidia",
        driver_version=to_str(tree.get("Driver Version")),
        cuda_version=to_str(tree.get("CUDA Version")),
    )
    for position, (key, block) in enumerate(
        (k, v) for k, v in tree.items() if k.startswith("GPU ") and isinstance(v, dict)
    ):
        link = _get(block, "PCI", "GPU Link Info")
        ecc = _get(block, "ECC Errors", "Volatile")
        power = _get(block, "GPU Power Readings") or _get(block, "Power Readings")
        remap, retired = _get(block, "Remapped Rows"), _get(block, "Retired Pages")
        reasons = _get(block, "Clocks Event Reasons") or _get(block, "Clocks Throttle Reasons")
        hw = _get(reasons, "HW Slowdown")
        facts.gpus.append(
            GpuFacts(
                index=to_int(block.get("Minor Number")) if "Minor Number" in block else position,
                vendor="nvidia",
                bdf=normalise_bdf(key.removeprefix("GPU ")),
                model=to_str(block.get("Product Name")),
                uuid=to_str(block.get("GPU UUID")),
                pcie_gen=to_int(_get(link, "PCIe Generation").get("Current")),
                pcie_max_gen=to_int(_get(link, "PCIe Generation").get("Max")),
                pcie_width=to_int(_get(link, "Link Width").get("Current")),
                pcie_max_width=to_int(_get(link, "Link Width").get("Max")),
                vram_total_mib=to_float(_get(block, "FB Memory Usage").get("Total")),
                vram_used_mib=to_float(_get(block, "FB Memory Usage").get("Used")),
                utilisation_pct=to_float(_get(block, "Utilization").get("GPU")),
                temperature_hotspot_c=to_float(_get(block, "Temperature").get("GPU Current Temp")),
                temperature_memory_c=to_float(
                    _get(block, "Temperature").get("Memory Current Temp")
                ),
                power_draw_w=to_float(power.get("Average Power Draw") or power.get("Power Draw")),
                power_cap_w=to_float(
                    power.get("Current Power Limit") or power.get("Enforced Power Limit")
                ),
                power_max_cap_w=to_float(power.get("Max Power Limit")),
                ecc_correctable=_sum_known(
                    ecc.get("SRAM Correctable"), ecc.get("DRAM Correctable")
                ),
                ecc_uncorrectable=_sum_known(
                    ecc.get("SRAM Uncorrectable Parity"),
                    ecc.get("SRAM Uncorrectable SEC-DED"),
                    ecc.get("DRAM Uncorrectable"),
                ),
                retired_pages=_sum_known(
                    retired.get("Double Bit ECC"), remap.get("Uncorrectable Error")
                ),
                pending_retired_pages=_pending(
                    retired.get("Pending Page Blacklist"), remap.get("Pending")
                ),
                sm_clock_mhz=to_float(_get(block, "Clocks").get("SM")),
                sm_clock_max_mhz=to_float(_get(block, "Max Clocks").get("SM")),
                throttle_reasons=sorted(
                    name
                    for name, value in (
                        ("hw_thermal_slowdown", hw.get("HW Thermal Slowdown")),
                        ("hw_power_brake_slowdown", hw.get("HW Power Brake Slowdown")),
                        ("sw_thermal_slowdown", reasons.get("SW Thermal Slowdown")),
                    )
                    if value == "Active"
                ),
            )
        )
    if facts.gpus:
        facts.driver_loaded = True
    elif not unknown.count:
        unknown.reason = "no `GPU 00000000:…` block in the output"
        for number, line in numbered_lines(text):
            if line.strip():
                unknown.add(number, line)
                break
    facts.parse_problems = unknown.problems()
    return facts


_Q_ROOT_LINE = re.compile(r"^(?:=+NVSMI LOG=+|[A-Za-z][\w .()/-]*?\s+: .*|GPU [0-9A-Fa-f:.]+)$")


def _get(tree: dict[str, Any], *path: str) -> dict[str, Any]:
    node: Any = tree
    for name in path:
        node = node.get(name) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


_TABLE_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<drv>\S+)\s+CUDA Version:\s*(?P<cuda>\S+)"
)
_TABLE_ROW1 = re.compile(
    r"^\|\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s*\|"
    r"\s*(?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s+\S+\s*\|\s*(?P<ecc>\S+)\s*\|$"
)
_TABLE_ROW2 = re.compile(
    r"^\|\s*(?P<fan>N/A|\d+%)\s+(?P<temp>N/A|\d+C)\s+(?P<perf>\S+)\s+"
    r"(?:(?P<pw>N/A|\d+W)\s*/\s*(?P<cap>N/A|\d+W))?\s*\|"
    r"\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*\|\s*(?P<util>N/A|\d+%)\s+.*\|$"
)
_TABLE_FRAME = re.compile(
    r"^(?:[+|][-=+|]*[+|]|\|\s*(?:GPU\s+Name|Fan\s+Temp|NVIDIA-SMI|Processes:|GPU\s+GI|ID\s+ID"
    r"|No running processes found).*|\|[\s|]*(?:MIG M\.|Enabled|Disabled|N/A)?[\s|]*\|"
    r"|\|\s+\d+\s+\S+\s+\S+\s+\d+\s+\S+\s+.*\|"  # a process row
    r"|\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4})$"  # the timestamp above the table
)


def parse_nvidia_smi_table(text: str) -> Facts:
    """Plain `nvidia-smi`: the boxed table (driver 450 → 590 layouts), two lines per GPU.

    Under MIG the ECC cell reads `On` and a "MIG devices" table follows; its rows are slices of
    the GPUs above, so they are skipped rather than counted.
    """
    facts = Facts()
    unknown = UnknownLines()
    pending: GpuFacts | None = None
    in_mig_table = False  # `| MIG devices: |` until the next blank line: slices, not GPUs
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if stripped.startswith("| MIG devices:"):
            in_mig_table = True
        if in_mig_table:
            in_mig_table = bool(stripped)
            if stripped and stripped[0] not in "|+":
                unknown.add(number, line)
            continue
        if (header := _TABLE_HEADER.search(stripped)) is not None:
            facts.driver_name, facts.driver_version = "nvidia", header.group("drv")
            facts.cuda_version = header.group("cuda")
            facts.tool_versions["nvidia-smi"] = header.group("smi")
            continue
        if (row1 := _TABLE_ROW1.match(stripped)) is not None:
            pending = GpuFacts(
                index=int(row1.group("idx")),
                vendor="nvidia",
                model=row1.group("name"),
                bdf=normalise_bdf(row1.group("bus")),
                ecc_uncorrectable=to_int(row1.group("ecc")),
            )
            facts.gpus.append(pending)
            continue
        if pending is not None and (row2 := _TABLE_ROW2.match(stripped)) is not None:
            pending.temperature_hotspot_c = to_float(row2.group("temp"))
            pending.power_draw_w = to_float(row2.group("pw"))
            pending.power_cap_w = to_float(row2.group("cap"))
            pending.vram_used_mib = to_float(row2.group("used"))
            pending.vram_total_mib = to_float(row2.group("total"))
            pending.utilisation_pct = to_float(row2.group("util"))
            pending = None
            continue
        if stripped and not is_elision(stripped) and not _TABLE_FRAME.match(stripped):
            unknown.add(number, line)
    if facts.gpus:
        facts.driver_loaded = True
    facts.parse_problems = unknown.problems()
    return facts
