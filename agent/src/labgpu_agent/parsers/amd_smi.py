"""`amd-smi` in all its shapes: `static`/`metric`/`list` as JSON or text, the default summary
table, `monitor`, and `version`.

The JSON and text forms carry the same tree (text keys are upper case), so both are brought to
one lower-case dict per GPU and read by one function. ROCm 6 prints a JSON list; ROCm 7 wraps it
in `{"gpu_data": [...]}`; readings may be bare or `{"value": v, "unit": u}`; anything may be N/A.
"""

from __future__ import annotations

import csv
import json
import re
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, normalise_bdf
from labgpu_agent.parsers._text import (
    UnknownLines,
    indented_tree,
    is_elision,
    is_missing,
    json_text,
    numbered_lines,
    strip_annotations,
    to_float,
    to_int,
    to_str,
)


def parse_amd_smi(text: str) -> Facts:
    """`amd-smi static|metric|list [--json]`: any subset of blocks, even several commands."""
    unknown = UnknownLines()
    body = strip_annotations(text).strip()
    if body[:1] in "[{" or _looks_like_json(text):
        devices = _json_devices(text, unknown)
    elif body and _CSV_HEADER.match(body.splitlines()[0].strip()):
        devices = _csv_devices(text, unknown)
    else:
        devices = _text_devices(text, unknown)
    facts = Facts(gpus=[_gpu_from_tree(dev) for dev in devices])
    for dev in devices:
        driver = dev.get("driver")
        if isinstance(driver, dict):
            facts.driver_name = facts.driver_name or to_str(driver.get("name"))
            version, kernel = _driver_version(to_str(driver.get("version")))
            facts.driver_version = facts.driver_version or version
            facts.kernel_release = facts.kernel_release or kernel
            facts.kernel_release = facts.kernel_release or to_str(driver.get("os_kernel_version"))
    if facts.gpus:
        facts.driver_loaded = True  # amd-smi lists GPUs only through a loaded amdgpu
    elif not unknown.count:
        # Neither a GPU block nor a line we object to: say so rather than return nothing.
        for number, line in numbered_lines(text):
            if line.strip():
                unknown.add(number, line)
                break
        unknown.reason = "no GPU block (`GPU: N` or a JSON GPU object) in the output"
    facts.parse_problems = unknown.problems()
    return facts


def _driver_version(text: str | None) -> tuple[str | None, str | None]:
    """(driver version, kernel release) from amd-smi's driver version field.

    With the amdgpu built into the distribution kernel (no DKMS package) amd-smi prints the
    kernel's banner with its spaces dropped, `Linuxversion6.14.0-24-generic(buildd@…)…`, or cut
    short in the default view (`Linuxver`): the driver is the kernel's, so its version is the
    kernel release.
    """
    if text is None or not text.lower().startswith("linuxver"):
        return text, None
    match = re.match(r"(?i)linux\s*version\s*([0-9][^\s(]*)", text)
    return (match.group(1), match.group(1)) if match else (None, None)


# What amd-smi prints before its JSON that is not a shape problem: the watch-mode banner, and its
# warnings (a user outside the render/video groups; device access is checked on its own).
_WATCH_BANNER = re.compile(r"^(?:'CTRL' \+ 'C' to stop watching output:?|WARNING:.*)$")


def _looks_like_json(text: str) -> bool:
    return any(line.lstrip()[:1] in ("[", "{") for _, line in numbered_lines(text)[:5])


def _json_devices(text: str, unknown: UnknownLines) -> list[dict[str, Any]]:
    body = json_text(text)
    for number, line in numbered_lines(text):
        if line.lstrip()[:1] in ("[", "{"):
            break
        if line.strip() and not _WATCH_BANNER.match(line.strip()):
            unknown.add(number, line)
    decoder = json.JSONDecoder()
    devices: list[dict[str, Any]] = []
    position = 0
    # Watch mode (`-w N --json`) prints one document per interval; read them all.
    while (start := _next_document(body, position)) is not None:
        data, position = decoder.raw_decode(body, start)
        devices.extend(_devices_of(data, body, start, unknown))
    return devices


def _next_document(body: str, position: int) -> int | None:
    match = re.compile(r"\S").search(body, position)
    return match.start() if match else None


def _devices_of(data: Any, body: str, start: int, unknown: UnknownLines) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        if "gpu_data" in data or "gpus" in data:
            data = data.get("gpu_data", data.get("gpus"))
        else:
            data = [data]  # one GPU, printed bare (`amd-smi static -g 0 --json` on some releases)
    if not isinstance(data, list):
        line_no = body.count("\n", 0, start) + 1
        unknown.add(line_no, body.splitlines()[line_no - 1])
        return []
    return [_lower_keys(d) for d in data if isinstance(d, dict)]


def _text_devices(text: str, unknown: UnknownLines) -> list[dict[str, Any]]:
    body = "\n".join(line for _, line in numbered_lines(text))
    for number, line in numbered_lines(text):
        if not _tree_line_known(line):
            unknown.add(number, line)
    tree = indented_tree(body)
    devices = []
    for key, block in tree.items():
        match = re.fullmatch(r"GPU: (\d+)", key)
        if match and isinstance(block, dict):
            devices.append({"gpu": int(match.group(1)), **_lower_keys(block)})
    return devices


# `--csv`: one header row of flattened leaf names (`gpu,gfx_activity,…,socket_power,…`), led by
# `timestamp` in watch mode, then one row per GPU.
_CSV_HEADER = re.compile(r"^(?:timestamp,)?gpu,[a-z0-9_,% ]+$", re.IGNORECASE)
# Leaf name → (block, key) in the JSON tree; a leaf may come prefixed with its block
# (`temperature_hotspot`) or bare (`hotspot`).
_CSV_LEAVES: dict[str, tuple[str, str]] = {
    "market_name": ("asic", "market_name"),
    "target_graphics_version": ("asic", "target_graphics_version"),
    "num_compute_units": ("asic", "num_compute_units"),
    "bdf": ("bus", "bdf"),
    "max_pcie_width": ("bus", "max_pcie_width"),
    "max_pcie_speed": ("bus", "max_pcie_speed"),
    "gfx_activity": ("usage", "gfx_activity"),
    "socket_power": ("power", "socket_power"),
    "average_socket_power": ("power", "average_socket_power"),
    "max_power": ("limit", "max_power"),
    "edge": ("temperature", "edge"),
    "hotspot": ("temperature", "hotspot"),
    "mem": ("temperature", "mem"),
    "total_correctable_count": ("ecc", "total_correctable_count"),
    "total_uncorrectable_count": ("ecc", "total_uncorrectable_count"),
    "total_deferred_count": ("ecc", "total_deferred_count"),
    "total_vram": ("mem_usage", "total_vram"),
    "used_vram": ("mem_usage", "used_vram"),
    "width": ("pcie", "width"),
    "speed": ("pcie", "speed"),
    "compute_partition": ("partition", "compute_partition"),
    "accelerator_partition": ("partition", "accelerator_partition"),
    "memory_partition": ("partition", "memory_partition"),
    "size": ("vram", "size"),
}


def _csv_devices(text: str, unknown: UnknownLines) -> list[dict[str, Any]]:
    lines = [(n, line) for n, line in numbered_lines(text) if line.strip()]
    header = [cell.strip().lower() for cell in next(csv.reader([lines[0][1]]))]
    static = "max_power" in header and "gfx_activity" not in header
    devices: list[dict[str, Any]] = []
    for number, line in lines[1:]:
        if _CSV_HEADER.match(line.strip()):  # watch mode repeats the header
            continue
        row = next(csv.reader([line]))
        if len(row) != len(header) or not row[header.index("gpu")].strip().isdigit():
            unknown.add(number, line)
            continue
        device: dict[str, Any] = {}
        for name, value in zip(header, row, strict=True):
            if name == "gpu":
                device["gpu"] = int(value)
                continue
            leaf = next((k for k in _CSV_LEAVES if name == k or name.endswith("_" + k)), None)
            if leaf is None:
                continue
            block, key = _CSV_LEAVES[leaf]
            if static and leaf == "socket_power":
                block = "limit"  # `static` prints the cap under this name, `metric` the draw
            device.setdefault(block, {})[key] = value.strip()
        devices.append(device)
    return devices


def _tree_line_known(line: str) -> bool:
    """A line of amd-smi's text tree: `KEY: value`, `KEY:`, a wrapped list, or an elision."""
    stripped = line.strip()
    if not stripped or is_elision(stripped):
        return True
    if re.match(r"^[A-Za-z0-9_][A-Za-z0-9_ ./()#%+-]*:", stripped):
        return True
    # JPEG_ACTIVITY's list wraps onto indented lines: `N/A, N/A, 0 %, ...]`.
    return line[:1] in (" ", "\t") and re.fullmatch(r"[\[\]\w/ %.,°-]+", stripped) is not None


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
    # `160/750 W` on a discrete GPU; an APU with no cap prints `14 W` (Strix Halo, AMD-SMI 26.1).
    r"(?P<pw>N/A|\d+)(?:\s*/\s*(?P<cap>N/A|\d+))?\s*W\s*\|"
)
_DEFAULT_ROW2 = re.compile(
    r"^\|\s*(?P<gpu>\d+)\s+(?P<hip>\S+)\s+(?P<oam>\S+)\s+(?P<part>\S+)\s*\|"
    r"\s*(?P<gfx>N/A|\d+\s*%)\s+(?P<fan>N/A|\d+\s*%?)\s+(?P<used>\d+|N/A)\s*/\s*(?P<total>\d+|N/A)"
    r"\s*MB\s*\|"
)
# Frame, header and process-table lines of the default view; none carries a GPU fact.
_DEFAULT_FRAME = re.compile(
    "|".join(
        (
            r"^[+|][-=+|]*[+|]$",  # borders and rules
            r"^\|\s*(?:AMD-SMI |VBIOS version|Platform:|BDF |GPU  |Processes:|GPU\s+PID).*$",
            r"^\|\s+\d+\s+\d+\s+.*\|$",  # a process row: GPU, PID, name, memory
            r"^\|\s*No running processes found\s*\|$",
            r"^Process Name may require elevated permissions\.?$",
        )
    )
)


def parse_amd_smi_default(text: str) -> Facts:
    """The table `amd-smi` prints with no sub-command (AMD-SMI 25+)."""
    body = strip_annotations(text)
    facts = Facts()
    unknown = UnknownLines()
    header = _DEFAULT_HEADER.search(body)
    if header:
        facts.tool_versions["amd-smi"] = header.group("smi")
        facts.driver_name = "amdgpu"
        facts.driver_version, facts.kernel_release = _driver_version(header.group("drv"))
        facts.rocm_version = header.group("rocm")
    platform = re.search(r"Platform:\s*(.+?)\s*\|", body)
    facts.platform = platform.group(1) if platform else None
    pending: GpuFacts | None = None
    for number, line in numbered_lines(text):
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
            part = row2.group("part")  # `SPX/NPS1`, or `N/A` on an APU
            compute, _, memory = ("", "", "") if is_missing(part) else part.partition("/")
            pending.compute_partition = None if is_missing(compute) else compute
            pending.memory_partition = None if is_missing(memory) else memory
            pending.utilisation_pct = to_float(row2.group("gfx"))
            pending.vram_used_mib = to_float(row2.group("used"))
            pending.vram_total_mib = to_float(row2.group("total"))
            facts.gpus.append(pending)
            pending = None
        elif line.strip() and not _DEFAULT_FRAME.match(line.strip()) and not is_elision(line):
            unknown.add(number, line)
    if facts.gpus:
        facts.driver_loaded = True
    facts.parse_problems = unknown.problems()
    return facts


# One cell of an `amd-smi monitor` row: `N/A`, `True`, `125 W`, `37 °C`, `0.3/192.0 GB`,
# `0.5/ 24.0 GB`, `0.01 %`. Units follow the number after a space (or none); cells are split by
# whitespace, which may be a single space once a table is pasted into a document.
_MONITOR_UNITS = r"°C|°F|C|mW|W|GHz|MHz|%|GiB|MiB|GB|MB|KB|B|Gb/s|Mb/s|GB/s|MB/s|mV|V|mJ|J|ms|us|s"
_MONITOR_CELL = re.compile(
    r"(?:N/A|True|False|[-+]?\d+(?:\.\d+)?(?:\s*/\s*[-+]?\d+(?:\.\d+)?)?"
    rf"(?:\s?(?:{_MONITOR_UNITS})(?![\w/]))?)(?=\s|$)"
)
_MONITOR_HEADER_CELL = re.compile(r"[A-Z][A-Z0-9_%]*")


def _monitor_header(line: str) -> list[str] | None:
    """Column names, markdown bold markers dropped, when `line` is a monitor header row."""
    cells = [cell.strip("*_") for cell in line.split()]
    if len(cells) < 2 or cells[0].upper() != "GPU":
        return None
    if not all(_MONITOR_HEADER_CELL.fullmatch(cell.upper()) for cell in cells):
        return None
    return [cell.upper() for cell in cells]


def _monitor_cells(line: str) -> list[str] | None:
    """The cells of a data row, or None when something in it is not a cell."""
    cells, position = [], 0
    text = line.strip()
    while position < len(text):
        if text[position].isspace():
            position += 1
            continue
        match = _MONITOR_CELL.match(text, position)
        if match is None:
            return None
        cells.append(match.group())
        position = match.end()
    return cells


# Column names across AMD-SMI 24 → 26 (`GPU_T` was `GPU_TEMP` in the acceptance guide's era).
_MONITOR_COLUMNS: dict[str, tuple[str, ...]] = {
    "power_draw_w": ("POWER", "POWER_USAGE"),
    "power_cap_w": ("PWR_CAP", "POWER_CAP"),
    "temperature_hotspot_c": ("GPU_T", "GPU_TEMP", "HOTSPOT_T", "HOTSPOT_TEMP"),
    "temperature_memory_c": ("MEM_T", "MEM_TEMP"),
    "utilisation_pct": ("GFX%", "GFX_UTIL"),
    "sm_clock_mhz": ("GFX_CLK", "GFX_CLOCK"),
}


def parse_amd_smi_monitor(text: str) -> Facts:
    """`amd-smi monitor`: a header row of column names, then one row per GPU (or partition).

    Columns are found by name, in any order and with any extras; the header may carry markdown
    bold markers (`**GFX_UTIL**`, as AMD's acceptance guide prints it), units follow numbers
    (`125 W`, `37 °C`), partitions of a CPX GPU print `N/A` but their VRAM.
    """
    facts = Facts()
    unknown = UnknownLines()
    columns: list[str] | None = None
    for number, line in numbered_lines(text):
        if not line.strip() or is_elision(line):
            continue
        header = _monitor_header(line)
        if header is not None:
            columns = header
            continue
        cells = _monitor_cells(line) if columns is not None else None
        if columns is None or cells is None or len(cells) != len(columns):
            unknown.add(number, line)
            continue
        row = dict(zip(columns, cells, strict=True))
        if not row["GPU"].isdigit():
            unknown.add(number, line)
            continue
        facts.gpus.append(_monitor_gpu(row))
    facts.parse_problems = unknown.problems()
    return facts


def _monitor_gpu(row: dict[str, str]) -> GpuFacts:
    gpu = GpuFacts(index=int(row["GPU"]), vendor="amd")
    for field_name, names in _MONITOR_COLUMNS.items():
        value = next((to_float(row[n]) for n in names if n in row), None)
        setattr(gpu, field_name, value)
    if gpu.power_cap_w == 0:
        gpu.power_cap_w = None  # 0 W means "no cap reported", as in `amd-smi static`
    if "VRAM_USAGE" in row:
        used, _, total = row["VRAM_USAGE"].partition("/")
        gpu.vram_used_mib = _mib(f"{used.strip()} {_unit_of(total)}") if total else None
        gpu.vram_total_mib = _mib(total.strip()) if total else None
    gpu.vram_used_mib = gpu.vram_used_mib or _mib(row.get("VRAM_USED"))
    gpu.vram_total_mib = gpu.vram_total_mib or _mib(row.get("VRAM_TOTAL"))
    # `-e`: single-bit (correctable) and double-bit (uncorrectable) counts; newer names too.
    gpu.ecc_correctable = to_int(row.get("SINGLE_ECC", row.get("CORRECTABLE_ECC")))
    gpu.ecc_uncorrectable = to_int(
        row.get("DOUBLE_ECC", row.get("UNCORRECTABLE_ECC", row.get("UECC")))
    )
    return gpu


def _unit_of(value: str) -> str:
    match = re.search(r"[A-Za-z]+$", value.strip())
    return match.group() if match else ""


def parse_amd_smi_version(text: str) -> Facts:
    """`amd-smi version`: `AMDSMI Tool: … | AMDSMI Library version: … | ROCm version: 7.2.4 …`."""
    body = strip_annotations(text)
    facts = Facts()
    if rocm := re.search(r"ROCm version:\s*([\d.]+)", body):
        facts.rocm_version = rocm.group(1)
    if tool := re.search(r"AMDSMI Tool:\s*(\S+)", body):
        facts.tool_versions["amd-smi"] = tool.group(1)
    if drv := re.search(r"amdgpu version:\s*([^|\s]+)", body):
        facts.driver_name = "amdgpu"
        facts.driver_version, facts.kernel_release = _driver_version(drv.group(1))
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
