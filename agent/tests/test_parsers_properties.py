"""Property tests for the text-table parsers: whatever the column order, extra columns, unit
spacing, markdown bold markers, line ends (CRLF), trailing blanks and `N/A` cells, the values a
table shows are the values the parser reads — and nothing it shows is silently dropped.

Tables are generated the way the tools lay them out (and the way they look once pasted into a
document), then compared cell by cell with the facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from labgpu_agent.parsers import parse
from labgpu_agent.parsers._text import clean_line, is_annotation


@dataclass(frozen=True)
class Column:
    name: str
    unit: str
    field: str | None  # GpuFacts field it fills; None for a column the parser only tolerates


MONITOR_COLUMNS = (
    Column("POWER", "W", "power_draw_w"),
    Column("PWR_CAP", "W", "power_cap_w"),
    Column("GPU_T", "°C", "temperature_hotspot_c"),
    Column("MEM_T", "°C", "temperature_memory_c"),
    Column("GFX_CLK", "MHz", "sm_clock_mhz"),
    Column("GFX%", "%", "utilisation_pct"),
    Column("MEM%", "%", None),
    Column("DEC%", "%", None),
    Column("MEM_CLOCK", "MHz", None),
    Column("FUTURE_COL", "GB/s", None),  # a column a later AMD-SMI might add
)

reading = st.one_of(
    st.none(),  # printed as N/A
    st.integers(min_value=1, max_value=2000).map(float),
    st.decimals(min_value=1, max_value=999, places=1).map(float),
)
line_end = st.sampled_from(["\n", "\r\n"])


def cell(value: float | None, unit: str, spaced: bool) -> str:
    if value is None:
        return "N/A"
    number = f"{value:g}" if value != int(value) else str(int(value))
    return f"{number}{' ' if spaced else ''}{unit}"


@settings(max_examples=150, deadline=None)
@given(
    columns=st.lists(st.sampled_from(MONITOR_COLUMNS), min_size=1, unique=True),
    rows=st.lists(
        st.lists(reading, min_size=len(MONITOR_COLUMNS), max_size=len(MONITOR_COLUMNS)),
        min_size=1,
        max_size=8,
    ),
    bold=st.lists(
        st.booleans(), min_size=len(MONITOR_COLUMNS) + 1, max_size=len(MONITOR_COLUMNS) + 1
    ),
    aligned=st.booleans(),
    spaced_units=st.booleans(),
    trailing=st.sampled_from(["", " ", "   ", "\t"]),
    eol=line_end,
)
def test_amd_smi_monitor_reads_every_cell_whatever_the_layout(
    columns, rows, bold, aligned, spaced_units, trailing, eol
):
    names = ["GPU", *(c.name for c in columns)]
    header = [f"**{n}**" if b else n for n, b in zip(names, bold, strict=False)]
    table = [
        [str(i), *(cell(v, c.unit, spaced_units) for c, v in zip(columns, row, strict=False))]
        for i, row in enumerate(rows)
    ]
    if aligned:  # right-aligned columns, as the tool prints them
        widths = [max(len(r[k]) for r in [header, *table]) for k in range(len(names))]
        lines = [
            "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *table]
        ]
    else:  # single spaces, as the acceptance guide's page shows them
        lines = [" ".join(r) for r in [header, *table]]
    text = eol.join(line + trailing for line in lines) + eol

    facts = parse("amd-smi-monitor", text)

    assert facts.parse_problems == []
    assert [g.index for g in facts.gpus] == list(range(len(rows)))
    for gpu, row in zip(facts.gpus, rows, strict=True):
        for column, value in zip(columns, row, strict=False):
            if column.field is not None:
                expected = None if column.field == "power_cap_w" and value == 0 else value
                assert getattr(gpu, column.field) == expected, (column.name, text)


@settings(max_examples=100, deadline=None)
@given(
    garbage=st.text(min_size=1, max_size=40).filter(
        # Lines every parser skips by design are not junk: blank once colour escapes are
        # dropped, capture annotations and echoed commands, elisions, a new header row.
        lambda s: (
            clean_line(s).strip()
            and not set(s) & set("\n\r")
            and not is_annotation(s)
            and not s.strip().upper().startswith("GPU")
            and not s.strip().startswith(("...", "…"))
        )
    )
)
def test_amd_smi_monitor_names_a_line_it_cannot_read(garbage):
    text = "GPU POWER GPU_T\n0 125 W 37 °C\n" + garbage + "\n1 120 W 36 °C\n"
    facts = parse("amd-smi-monitor", text)
    indices = [g.index for g in facts.gpus]
    assert indices[0] == 0 and indices[-1] == 1  # the real rows around it are still read
    if len(indices) == 2:  # the junk was not a row: it must be named, at its line
        (problem,) = facts.parse_problems
        assert (problem.tool, problem.line_number) == ("amd-smi-monitor", 3)
    else:  # the junk happened to be a well-formed row of this table
        assert len(indices) == 3 and facts.parse_problems == []


CONCISE_COLUMNS = (
    ("IDS", lambda v, n: f"0x74a1,{' ' * n}{int(v or 1)}", None),
    ("TEMP", lambda v, n: "N/A" if v is None else f"{v:.1f}°C", "temperature_hotspot_c"),
    ("POWER", lambda v, n: "N/A" if v is None else f"{v:.1f}W", "power_draw_w"),
    ("PARTITIONS", lambda v, n: f"NPS1,{' ' * n}CPX,{' ' * n}{int(v or 0) % 8}", None),
    ("SCLK", lambda v, n: "N/A" if v is None else f"{int(v)}Mhz", "sm_clock_mhz"),
    ("PWRCAP", lambda v, n: "N/A" if v is None else f"{v:.1f}W", "power_cap_w"),
    ("GPU%", lambda v, n: "N/A" if v is None else f"{int(v)}%", "utilisation_pct"),
    ("VRAM%", lambda v, n: "N/A" if v is None else f"{int(v) % 100}%", None),
)


@settings(max_examples=150, deadline=None)
@given(
    order=st.permutations(range(len(CONCISE_COLUMNS))),
    keep=st.integers(min_value=3, max_value=len(CONCISE_COLUMNS)),
    rows=st.lists(
        st.lists(reading, min_size=len(CONCISE_COLUMNS), max_size=len(CONCISE_COLUMNS)),
        min_size=1,
        max_size=8,
    ),
    gaps=st.integers(min_value=1, max_value=4),
    trailing=st.sampled_from(["", "  ", "    "]),
    eol=line_end,
)
def test_rocm_smi_concise_reads_every_cell_whatever_the_layout(
    order, keep, rows, gaps, trailing, eol
):
    chosen = [CONCISE_COLUMNS[k] for k in order[:keep]]
    if not any(name == "TEMP" for name, _, _ in chosen):
        chosen.append(CONCISE_COLUMNS[1])
    header = "Device  Node  " + "  ".join(
        name.title() if name != "IDS" else "IDs" for name, _, _ in chosen
    )
    lines = [
        "=" * 40 + " ROCm System Management Interface " + "=" * 40,
        "=" * 50 + " Concise Info " + "=" * 50,
        header,
        "              (DID,     GUID)  (Junction)  (Socket)  (Mem, Compute, ID)",
        "=" * 120,
    ]
    for i, row in enumerate(rows):
        cells = [str(i), str(i + 2)]
        for (name, render, _), value in zip(chosen, row, strict=False):
            if name in ("PWRCAP",) and value is not None and value < 1:
                value = 1.0
            cells.append(render(value, gaps))
        lines.append("    ".join(cells))
    lines += ["=" * 120, "=" * 50 + " End of ROCm SMI Log " + "=" * 50]
    text = eol.join(line + trailing for line in lines) + eol

    facts = parse("rocm-smi", text)

    assert facts.parse_problems == []
    assert [g.index for g in facts.gpus] == list(range(len(rows)))
    for gpu, row in zip(facts.gpus, rows, strict=True):
        for (name, _, field), value in zip(chosen, row, strict=False):
            if field is None:
                continue
            if value is not None and name in ("SCLK", "GPU%"):
                value = float(int(value))
            if value is not None and name in ("TEMP", "POWER", "PWRCAP"):
                value = round(value, 1)
            assert getattr(gpu, field) == value, (name, text)
        if any(name == "PARTITIONS" for name, _, _ in chosen):
            assert (gpu.memory_partition, gpu.compute_partition) == ("NPS1", "CPX")


QUERY_COLUMNS = (
    ("temperature.gpu", "", "temperature_hotspot_c"),
    ("power.draw [W]", " W", "power_draw_w"),
    ("power.limit [W]", " W", "power_cap_w"),
    ("memory.total [MiB]", " MiB", "vram_total_mib"),
    ("utilization.gpu [%]", " %", "utilisation_pct"),
    ("clocks.sm [MHz]", " MHz", "sm_clock_mhz"),
    ("fan.speed [%]", " %", None),
    ("some.future.field", "", None),
)


@settings(max_examples=100, deadline=None)
@given(
    order=st.permutations(range(len(QUERY_COLUMNS))),
    rows=st.lists(
        st.lists(reading, min_size=len(QUERY_COLUMNS), max_size=len(QUERY_COLUMNS)),
        min_size=1,
        max_size=8,
    ),
    nounits=st.booleans(),
    eol=line_end,
    trailing=st.sampled_from(["", " "]),
)
def test_nvidia_smi_query_csv_reads_every_cell_in_any_column_order(
    order, rows, nounits, eol, trailing
):
    columns = [QUERY_COLUMNS[k] for k in order]
    header = ", ".join(["index", "name", *(c[0] for c in columns)])
    lines = [header]
    for i, row in enumerate(rows):
        cells = [str(i), "NVIDIA H200"]
        for (_, unit, _), value in zip(columns, row, strict=False):
            if value is None:
                cells.append("[N/A]")
            else:
                cells.append(f"{value:g}" + ("" if nounits else unit))
        lines.append(", ".join(cells))
    text = eol.join(line + trailing for line in lines) + eol

    facts = parse("nvidia-smi-csv", text)

    assert facts.parse_problems == []
    for gpu, row in zip(facts.gpus, rows, strict=True):
        for (name, _, field), value in zip(columns, row, strict=False):
            if field is not None:
                assert getattr(gpu, field) == value, (name, text)


KV_FIELDS = (
    ("Temperature (Sensor edge) (C)", "temperature_edge_c"),
    ("Temperature (Sensor junction) (C)", "temperature_hotspot_c"),
    ("Average Graphics Package Power (W)", "power_draw_w"),
    ("Max Graphics Package Power (W)", "power_cap_w"),
    ("GPU use (%)", "utilisation_pct"),
    ("Some future field (unit)", None),
)


@settings(max_examples=100, deadline=None)
@given(
    cards=st.lists(
        st.lists(reading, min_size=len(KV_FIELDS), max_size=len(KV_FIELDS)), min_size=1, max_size=8
    ),
    order=st.permutations(range(len(KV_FIELDS))),
    separator=st.sampled_from(["\t\t: ", "          : ", " : "]),
    missing=st.sampled_from(["N/A", "N/A (Secondary die)"]),
    eol=line_end,
    trailing=st.sampled_from(["", " ", "\t"]),
)
def test_rocm_smi_key_value_text_reads_every_field(cards, order, separator, missing, eol, trailing):
    lines = ["=" * 28 + " ROCm System Management Interface " + "=" * 28]
    for k in order:
        name, _ = KV_FIELDS[k]
        for i, values in enumerate(cards):
            value = values[k]
            shown_value = missing if value is None else f"{value:g}"
            lines.append(f"GPU[{i}]{separator}{name}: {shown_value}")
    lines.append("=" * 30 + " End of ROCm SMI Log " + "=" * 30)
    text = eol.join(line + trailing for line in lines) + eol

    facts = parse("rocm-smi", text)

    assert facts.parse_problems == []
    assert [g.index for g in facts.gpus] == list(range(len(cards)))
    for gpu, values in zip(facts.gpus, cards, strict=True):
        for (name, field), value in zip(KV_FIELDS, values, strict=True):
            if field is not None:
                expected = None if field == "power_cap_w" and not value else value
                assert getattr(gpu, field) == expected, (name, text)
