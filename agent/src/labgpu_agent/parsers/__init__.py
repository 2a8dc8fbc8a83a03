"""One parser per tool output. Each takes the text a tool printed and returns partial `Facts`.

`PARSERS` maps the names used on the command line (`labgpu-agent parse TOOL FILE`), in fixture
profiles and by the collector to those functions.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable

from labgpu_agent.facts import Facts
from labgpu_agent.parsers.amd_smi import (
    parse_amd_smi,
    parse_amd_smi_default,
    parse_amd_smi_monitor,
    parse_amd_smi_version,
    parse_rocm_version_file,
)
from labgpu_agent.parsers.diagnostics import parse_dcgmi_diag, parse_rvs
from labgpu_agent.parsers.lspci import parse_lspci
from labgpu_agent.parsers.nvidia_smi import (
    parse_nvidia_smi_csv,
    parse_nvidia_smi_q,
    parse_nvidia_smi_xml,
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
    "lspci": parse_lspci,
    "uname": parse_uname,
    "modules": parse_proc_modules,
    "dmesg": parse_dmesg,
    "env": parse_env,
    "devices": parse_devices,
    "rvs": parse_rvs,
    "dcgmi-diag": parse_dcgmi_diag,
}


class ParseError(Exception):
    """A tool's output could not be read at all (as opposed to fields being N/A)."""


def parse(tool: str, text: str) -> Facts:
    try:
        parser = PARSERS[tool]
    except KeyError:
        raise ParseError(f"unknown tool {tool!r}; known: {', '.join(sorted(PARSERS))}") from None
    try:
        return parser(text)
    except (ValueError, KeyError, IndexError, TypeError, ET.ParseError) as exc:
        # A tool that failed prints an error message instead of its format.
        raise ParseError(f"{tool}: cannot parse output: {exc}") from exc
