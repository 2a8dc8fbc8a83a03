"""`rocm-smi` (older ROCm; being replaced by amd-smi) in every shape it prints.

- `--json`: `{"card0": {...}, "system": {...}}`;
- `--csv`: `device,<field>,...` then `card0,...` rows (several blocks when several `--show…`);
- the key/value text of `-a`/`--showallinfo`, `-i`, `--showpower`, `--showmeminfo vram`…:
  `GPU[0]   : <field>: <value>`, with the same field names as the JSON;
- the default concise table, whose columns changed across releases: ROCm 5 printed
  `GPU Temp AvgPwr SCLK MCLK Fan Perf PwrCap VRAM% GPU%` (edge temperature, `47.0c`), ROCm 6+
  prints `Device Node IDs Temp Power Partitions …` with a second header line naming the sensors
  (`(Junction)`, `(Socket)`) and multi-word cells (`0x74a1,   55354`, `NPS1, CPX, 7`).

Keys changed across versions: MI300 prints `Current Socket Graphics Package Power (W)` where
MI200 printed `Average Graphics Package Power (W)`; MI300X has no edge sensor at all. A cloud VM
sees the SR-IOV virtual function: device id 0x74b5, "MI300X VF".
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, normalise_bdf
from labgpu_agent.parsers._text import (
    UnknownLines,
    is_elision,
    json_text,
    numbered_lines,
    to_float,
    to_int,
    to_str,
)

_POWER_DRAW_KEYS = (
    "Current Socket Graphics Package Power (W)",
    "Average Graphics Package Power (W)",
)
_MODEL_KEYS = ("Card Series", "Card series", "Device Name", "Card model", "Card Model")
_DEVICE_ID_KEYS = ("Device ID", "GPU ID", "Card Model", "Card model")
# PCI device ids of SR-IOV virtual functions as a guest sees them (MI300X VF: 1002:74b5).
_VF_DEVICE_IDS = {"0x74b5"}


def parse_rocm_smi(text: str) -> Facts:
    if json_text(text).lstrip()[:1] == "{":
        return _from_cards(_json_cards(text), UnknownLines())
    unknown = UnknownLines()
    cards: dict[int, dict[str, str]] = {}
    table: _Concise | None = None
    csv_lines: list[tuple[int, str]] = []
    for number, line in numbered_lines(text):
        stripped = line.strip()
        if csv_lines and stripped and "," in stripped and not stripped.startswith("GPU["):
            csv_lines.append((number, line))  # a `--csv` block goes on until a blank line
            continue
        if csv_lines:
            _read_csv(csv_lines, cards, unknown)
            csv_lines = []
        if not stripped or is_elision(stripped) or _is_frame(stripped):
            if set(stripped) == {"="} and table is not None and table.rows:
                table = None  # the rule under the last row closes the table
            continue
        if stripped.lower().startswith("device,"):
            csv_lines = [(number, line)]
            continue
        if (kv := _KV_LINE.match(stripped)) is not None:
            _read_kv(int(kv.group("gpu")), kv.group("rest"), cards)
            continue
        if (header := _Concise.from_header(stripped)) is not None:
            table = header
            continue
        if table is not None and table.wants_subheader(stripped):
            continue
        if table is not None and table.read_row(stripped, cards):
            continue
        if _DRIVER_LINE.match(stripped) is not None:
            cards.setdefault(-1, {})["Driver version"] = stripped.split(":", 1)[1].strip()
            continue
        unknown.add(number, line)
    if csv_lines:
        _read_csv(csv_lines, cards, unknown)
    return _from_cards(cards, unknown)


def _json_cards(text: str) -> dict[int, dict[str, Any]]:
    data: Any = json.loads(json_text(text))
    cards: dict[int, dict[str, Any]] = {}
    if not isinstance(data, dict):
        raise ValueError("rocm-smi --json printed something other than an object")
    for key, card in data.items():
        if key == "system" and isinstance(card, dict):
            cards[-1] = card
        elif (match := re.fullmatch(r"card(\d+)", key)) and isinstance(card, dict):
            cards[int(match.group(1))] = card
    return cards


_KV_LINE = re.compile(r"^GPU\[(?P<gpu>\d+)\]\s*:\s*(?P<rest>.*)$")
_DRIVER_LINE = re.compile(r"^Driver version:\s*\S+$")
# Banners, rules and notes that carry no facts.
_FRAME = re.compile(
    r"^(?:=+[^=]*=+|=+|ROCm System Management Interface|Concise Info|End of ROCm SMI Log"
    r"|WARNING:.*|Primary die .*secondary.*)$",
    re.IGNORECASE,
)


def _is_frame(stripped: str) -> bool:
    return _FRAME.match(stripped) is not None


def _read_kv(gpu: int, rest: str, cards: dict[int, dict[str, str]]) -> None:
    # `Card Series: AMD Instinct MI300X VF`, `PCI Bus: 0000:C3:00.0`: split at the first ": ".
    # A line without a field is a message about the card ("Unable to display temperature").
    key, sep, value = rest.partition(": ")
    card = cards.setdefault(gpu, {})
    if sep:
        card[key.strip()] = value.strip()


def _read_csv(
    lines: list[tuple[int, str]], cards: dict[int, dict[str, str]], unknown: UnknownLines
) -> None:
    rows = list(csv.reader(io.StringIO("\n".join(line for _, line in lines))))
    header = [cell.strip() for cell in rows[0]]
    for (number, line), row in zip(lines[1:], rows[1:], strict=False):
        match = re.fullmatch(r"card(\d+)", row[0].strip().lower()) if row else None
        if match is None or len(row) != len(header):
            unknown.add(number, line)
            continue
        card = cards.setdefault(int(match.group(1)), {})
        card.update({k: v.strip() for k, v in zip(header[1:], row[1:], strict=True)})


class _Concise:
    """The concise table: columns found by name in the header, cells split on whitespace with
    comma-continued cells (`0x74a1,   55354`, `NPS1, CPX, 7`) joined back together.

    Each cell is filed under the field name `--json` and the key/value text use for the same
    reading, so one mapping (`_gpu`) reads every shape.
    """

    _NAMES = frozenset(
        {"GPU", "DEVICE", "NODE", "IDS", "TEMP", "AVGPWR", "POWER", "PARTITIONS", "SCLK",
         "MCLK", "FAN", "PERF", "PWRCAP", "VRAM%", "GPU%"}
    )  # fmt: skip

    def __init__(self, columns: list[str]) -> None:
        self.columns = columns
        self.temp_sensor = "edge"  # ROCm 5's `Temp` is the edge sensor
        self.rows = 0

    @classmethod
    def from_header(cls, stripped: str) -> _Concise | None:
        # Bold markers are dropped as in amd-smi's tables; a column a newer release adds is kept
        # by name (its cells are carried, not read) so the known columns still line up.
        cells = [cell.strip("*").upper() for cell in stripped.split()]
        if len(cells) < 3 or cells[0] not in ("GPU", "DEVICE") or "TEMP" not in cells:
            return None
        if not all(re.fullmatch(r"[A-Z][A-Z0-9_%]*", cell) for cell in cells):
            return None
        if len(set(cells) & cls._NAMES) < 3:
            return None
        return cls(cells)

    def wants_subheader(self, stripped: str) -> bool:
        if self.rows or not stripped.startswith("("):
            return False
        if "(Junction)" in stripped:
            self.temp_sensor = "junction"
        elif "(Memory)" in stripped:
            self.temp_sensor = "memory"
        return True

    def read_row(self, stripped: str, cards: dict[int, dict[str, str]]) -> bool:
        cells: list[str] = []
        for token in stripped.split():
            if cells and cells[-1].endswith(","):
                cells[-1] += token
            else:
                cells.append(token)
        if len(cells) != len(self.columns) or not cells[0].isdigit():
            return False
        row = dict(zip(self.columns, cells, strict=True))
        card = cards.setdefault(int(cells[0]), {})
        card[f"Temperature (Sensor {self.temp_sensor}) (C)"] = row["TEMP"]
        power = row.get("POWER", row.get("AVGPWR"))
        if power is not None:
            card["Average Graphics Package Power (W)"] = power
        if "PWRCAP" in row:
            card["Max Graphics Package Power (W)"] = row["PWRCAP"]
        if "GPU%" in row:
            card["GPU use (%)"] = row["GPU%"]
        if "SCLK" in row:
            card["sclk"] = row["SCLK"]
        if "IDS" in row:
            card["Device ID"] = row["IDS"].split(",")[0]
        if "PARTITIONS" in row:
            memory, _, rest = row["PARTITIONS"].partition(",")
            compute = rest.split(",")[0]
            card["Memory Partition"], card["Compute Partition"] = memory, compute
        self.rows += 1
        return True


def _from_cards(cards: dict[int, dict[str, Any]], unknown: UnknownLines) -> Facts:
    facts = Facts()
    system = cards.pop(-1, {})
    if driver := to_str(system.get("Driver version")):
        facts.driver_name, facts.driver_version = "amdgpu", driver
    for index in sorted(cards):
        facts.gpus.append(_gpu(index, cards[index]))
    if facts.gpus:
        facts.driver_loaded = True
    facts.parse_problems = unknown.problems()
    return facts


def _gpu(index: int, card: dict[str, Any]) -> GpuFacts:
    model = next((to_str(card[k]) for k in _MODEL_KEYS if to_str(card.get(k))), None)
    device_id = next((to_str(card[k]) for k in _DEVICE_ID_KEYS if to_str(card.get(k))), None)
    vram_total = to_float(card.get("VRAM Total Memory (B)"))
    vram_used = to_float(card.get("VRAM Total Used Memory (B)"))
    named_vf = model is not None and model.upper().endswith(" VF")
    virtual: bool | None = None
    if named_vf or (device_id is not None and device_id.lower() in _VF_DEVICE_IDS):
        virtual = True
    elif device_id is not None and device_id.lower().startswith("0x"):
        virtual = False
    cap = to_float(card.get("Max Graphics Package Power (W)"))
    return GpuFacts(
        index=index,
        vendor="amd",
        bdf=normalise_bdf(to_str(card.get("PCI Bus"))),
        model=model,
        uuid=to_str(card.get("Unique ID")),
        gfx_target=to_str(card.get("GFX Version")),
        temperature_edge_c=to_float(card.get("Temperature (Sensor edge) (C)")),
        temperature_hotspot_c=to_float(card.get("Temperature (Sensor junction) (C)")),
        temperature_memory_c=to_float(
            card.get("Temperature (Sensor memory) (C)", card.get("Temperature (Sensor mem) (C)"))
        ),
        power_cap_w=cap if cap else None,  # a secondary die / unset cap prints 0.0W
        power_draw_w=next((to_float(card[k]) for k in _POWER_DRAW_KEYS if k in card), None),
        utilisation_pct=to_float(card.get("GPU use (%)")),
        sm_clock_mhz=to_float(card.get("sclk")),
        vram_total_mib=vram_total / 2**20 if vram_total is not None else None,
        vram_used_mib=vram_used / 2**20 if vram_used is not None else None,
        ecc_uncorrectable=to_int(card.get("Uncorrectable ECC errors")),
        compute_partition=to_str(card.get("Compute Partition")),
        memory_partition=to_str(card.get("Memory Partition")),
        virtual_function=virtual,
    )
