"""Processes holding a GPU: `nvidia-smi -q -x` (`<processes>` per GPU) and
`nvidia-smi --query-compute-apps=… --format=csv`.

A node handed to a user must have none (checks.check_in_use); both views are read because a
driver may fill one and not the other (MIG, older drivers), and the CSV names the GPU by UUID.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

from labgpu_agent.facts import Facts, GpuProcess, normalise_bdf
from labgpu_agent.parsers._text import (
    UnknownLines,
    numbered_lines,
    strip_annotations,
    to_float,
    to_int,
    to_str,
)

# The query the agent runs (the parser reads any subset, any order).
COMPUTE_APPS_FIELDS = "gpu_bus_id,gpu_uuid,pid,process_name,used_memory"


def parse_nvidia_smi_processes_xml(text: str) -> Facts:
    """`<gpu><processes><process_info>` of `nvidia-smi -q -x`: pid, name, type, used memory."""
    root = ET.fromstring(strip_annotations(text).strip())
    facts = Facts()
    for position, gpu_el in enumerate(root.findall("gpu")):
        minor = gpu_el.findtext("minor_number")
        index = to_int(minor) if to_str(minor) else position
        bdf = normalise_bdf(gpu_el.findtext("pci/pci_bus_id") or gpu_el.get("id"))
        for info in gpu_el.findall("processes/process_info"):
            pid = to_int(info.findtext("pid"))
            if pid is None:
                continue
            facts.gpu_processes.append(
                GpuProcess(
                    pid=pid,
                    name=to_str(info.findtext("process_name")),
                    gpu=index,
                    gpu_uuid=to_str(gpu_el.findtext("uuid")),
                    bdf=bdf,
                    used_memory_mib=to_float(info.findtext("used_memory")),
                    type=to_str(info.findtext("type")),
                )
            )
    return facts


def parse_nvidia_smi_compute_apps(text: str) -> Facts:
    """`--query-compute-apps=gpu_bus_id,gpu_uuid,pid,process_name,used_memory --format=csv`.

    The header names the memory column `used_gpu_memory [MiB]`; with no process only the header
    is printed."""
    facts = Facts()
    unknown = UnknownLines("rows that do not match the CSV header")
    rows = [(number, line) for number, line in numbered_lines(text) if line.strip() and "," in line]
    if not rows or "pid" not in rows[0][1]:
        unknown.reason = "no `--query-compute-apps` CSV header (a line naming pid)"
        first = next(((n, ln) for n, ln in numbered_lines(text) if ln.strip()), None)
        if first is not None and "no running" not in first[1].lower():
            unknown.add(*first)
        facts.parse_problems = unknown.problems()
        return facts
    header = next(csv.reader(io.StringIO(rows[0][1]), skipinitialspace=True))
    columns = [re.sub(r"\s*\[.*\]$", "", c.strip()) for c in header]
    for number, line in rows[1:]:
        values = next(csv.reader(io.StringIO(line), skipinitialspace=True))
        if len(values) != len(columns):
            unknown.add(number, line)
            continue
        row = {c: v.strip() for c, v in zip(columns, values, strict=True)}
        pid = to_int(row.get("pid"))
        if pid is None:
            unknown.add(number, line)
            continue
        facts.gpu_processes.append(
            GpuProcess(
                pid=pid,
                name=to_str(row.get("process_name") or row.get("name")),
                gpu_uuid=to_str(row.get("gpu_uuid")),
                bdf=normalise_bdf(to_str(row.get("gpu_bus_id"))),
                used_memory_mib=to_float(row.get("used_gpu_memory") or row.get("used_memory")),
                type="C",
            )
        )
    facts.parse_problems = unknown.problems()
    return facts
