"""One parser per tool output. Each takes the text a tool printed and returns partial `Facts`.

`PARSERS` maps the names used on the command line (`labgpu-agent parse TOOL FILE`), in fixture
profiles and by the collector to those functions.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from typing import Any

from labgpu_agent.facts import Facts, ParseProblem
from labgpu_agent.parsers._text import numbered_lines, shown, split_lines
from labgpu_agent.parsers.amd_smi import (
    parse_amd_smi,
    parse_amd_smi_default,
    parse_amd_smi_monitor,
    parse_amd_smi_version,
    parse_rocm_version_file,
)
from labgpu_agent.parsers.deep import parse_dcgmi_diag_json, parse_rvs_measurements
from labgpu_agent.parsers.diagnostics import parse_dcgmi_diag, parse_rvs
from labgpu_agent.parsers.lspci import parse_lspci
from labgpu_agent.parsers.nvidia_smi import (
    parse_nvidia_smi_csv,
    parse_nvidia_smi_q,
    parse_nvidia_smi_table,
    parse_nvidia_smi_xml,
)
from labgpu_agent.parsers.processes import (
    parse_nvidia_smi_compute_apps,
    parse_nvidia_smi_processes_xml,
)
from labgpu_agent.parsers.ras import (
    parse_amd_smi_bad_pages,
    parse_amd_smi_xgmi,
    parse_nvidia_remap_xml,
    parse_nvidia_smi_nvlink,
)
from labgpu_agent.parsers.rocm_smi import parse_rocm_smi
from labgpu_agent.parsers.rocminfo import parse_rocminfo
from labgpu_agent.parsers.system import (
    parse_devices,
    parse_dmesg,
    parse_env,
    parse_proc_modules,
    parse_uname,
)

Parser = Callable[[str], Facts]

PARSERS: dict[str, Parser] = {
    # amd-smi's static/metric/list share one tree (JSON or text), so one reader serves all three.
    "amd-smi-static": parse_amd_smi,
    "amd-smi-metric": parse_amd_smi,
    "amd-smi-list": parse_amd_smi,
    "amd-smi-default": parse_amd_smi_default,
    "amd-smi-monitor": parse_amd_smi_monitor,
    "amd-smi-version": parse_amd_smi_version,
    "rocm-version": parse_rocm_version_file,
    "rocm-smi": parse_rocm_smi,
    "rocminfo": parse_rocminfo,
    "nvidia-smi-csv": parse_nvidia_smi_csv,
    "nvidia-smi-xml": parse_nvidia_smi_xml,
    "nvidia-smi-q": parse_nvidia_smi_q,
    "nvidia-smi": parse_nvidia_smi_table,
    "lspci": parse_lspci,
    "uname": parse_uname,
    "modules": parse_proc_modules,
    "dmesg": parse_dmesg,
    "env": parse_env,
    "devices": parse_devices,
    "rvs": parse_rvs,
    "dcgmi-diag": parse_dcgmi_diag,
    "amd-smi-bad-pages": parse_amd_smi_bad_pages,
    "amd-smi-xgmi": parse_amd_smi_xgmi,
    "nvidia-smi-nvlink": parse_nvidia_smi_nvlink,
    "nvidia-smi-remap": parse_nvidia_remap_xml,
    "dcgmi-diag-json": parse_dcgmi_diag_json,
    "rvs-measurements": parse_rvs_measurements,
    "nvidia-smi-processes": parse_nvidia_smi_processes_xml,
    "nvidia-smi-apps": parse_nvidia_smi_compute_apps,
}


# Tools whose output is the point of running them: printing nothing is a problem, not a fact.
# (Not `nvidia-smi nvlink -s`, `amd-smi bad-pages` and the like, which print nothing when there is
# nothing to list.)
_MUST_PRINT = frozenset(
    {
        "amd-smi-static",
        "amd-smi-metric",
        "amd-smi-list",
        "amd-smi-default",
        "amd-smi-monitor",
        "amd-smi-version",
        "rocm-smi",
        "rocm-version",
        "rocminfo",
        "nvidia-smi",
        "nvidia-smi-csv",
        "nvidia-smi-xml",
        "nvidia-smi-q",
    }
)
# Far above any real output (an 8-GPU `nvidia-smi -q -x` is ~200 KB); bounds the work on garbage.
MAX_PARSE_CHARS = 16 * 2**20


class ParseError(Exception):
    """A tool's output could not be read at all (as opposed to fields being N/A).

    `problem` says which tool and the first line that was not understood, for the `parse` check.
    """

    def __init__(self, message: str, problem: ParseProblem | None = None) -> None:
        super().__init__(message)
        self.problem = problem


def parse(tool: str, text: str) -> Facts:
    """Parse one tool's output. Never raises for its content except `ParseError`.

    Partly readable output gives the facts that could be read plus `parse_problems`; output
    with nothing readable raises `ParseError` carrying the problem.
    """
    try:
        parser = PARSERS[tool]
    except KeyError:
        raise ParseError(f"unknown tool {tool!r}; known: {', '.join(sorted(PARSERS))}") from None
    truncated = len(text) > MAX_PARSE_CHARS
    if truncated:
        text = text[:MAX_PARSE_CHARS]
    if not text.strip() and tool in _MUST_PRINT:
        problem = ParseProblem(tool=tool, reason="the tool printed nothing")
        raise ParseError(f"{tool}: the tool printed nothing", problem)
    try:
        facts = parser(text)
    except ParseError as exc:
        problem = exc.problem or _first_line_problem(text, str(exc))
        problem.tool = tool
        raise ParseError(f"{tool}: {exc}", problem) from exc
    except Exception as exc:  # any parser bug on hostile input is a parse problem, not a crash
        if isinstance(exc, ET.ParseError):
            problem = _line_problem(text, exc.position[0], f"not well-formed XML: {exc}")
        elif isinstance(exc, json.JSONDecodeError):
            problem = _line_problem(text, exc.lineno, f"not valid JSON: {exc.msg}")
        else:
            problem = _first_line_problem(text, f"{type(exc).__name__}: {exc}")
        problem.tool = tool
        raise ParseError(f"{tool}: cannot parse output: {problem.reason}", problem) from exc
    _make_reportable(facts)
    for problem in facts.parse_problems:
        problem.tool = tool
    if truncated:
        facts.parse_problems.append(
            ParseProblem(tool=tool, reason=f"output longer than {MAX_PARSE_CHARS} characters")
        )
    if facts.parse_problems and _read_nothing(facts):
        first = facts.parse_problems[0]
        raise ParseError(
            f"{tool}: no {tool} output recognised (line {first.line_number}: {first.line!r})",
            first,
        )
    return facts


# A fact is a short string; one longer than this came from garbage, and the API bounds strings.
_MAX_FACT_CHARS = 1024


def _clean_text(text: str) -> str:
    # NUL and other control bytes a broken tool can print: the API refuses a report with NUL.
    if len(text) <= _MAX_FACT_CHARS and text.isprintable():
        return text
    cleaned = "".join(
        ch if ch.isprintable() or ch == "\t" else "\ufffd" for ch in text[:_MAX_FACT_CHARS]
    )
    return cleaned


def _make_reportable(value: Any) -> Any:
    """Every string a parser read, made printable and bounded, in place."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, list):
        return [_make_reportable(item) for item in value]
    if isinstance(value, dict):
        return {_clean_text(str(k)): _make_reportable(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            current = getattr(value, f.name)
            if current is not None and not isinstance(current, int | float):
                setattr(value, f.name, _make_reportable(current))
    return value


def _read_nothing(facts: Facts) -> bool:
    """True when no field but the problems holds anything (a shallow look: any GPU counts)."""
    return not any(
        getattr(facts, f.name) not in (None, [], {})
        for f in fields(facts)
        if f.name != "parse_problems"
    )


def _line_problem(text: str, line_no: int, reason: str) -> ParseProblem:
    lines = split_lines(text)
    line = lines[line_no - 1] if 0 < line_no <= len(lines) else None
    return ParseProblem(
        tool="", reason=reason, line=shown(line) if line is not None else None, line_number=line_no
    )


def _first_line_problem(text: str, reason: str) -> ParseProblem:
    for number, line in numbered_lines(text):
        if line.strip():
            return ParseProblem(tool="", reason=reason, line=shown(line), line_number=number)
    return ParseProblem(tool="", reason=reason)
