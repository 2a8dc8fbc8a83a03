"""Vendor diagnostics: ROCm Validation Suite (`rvs`) and NVIDIA DCGM (`dcgmi diag`)."""

from __future__ import annotations

import re

from labgpu_agent.facts import Diagnostic, Facts
from labgpu_agent.parsers._text import strip_annotations

_RVS_RESULT = re.compile(
    r"^\|\s*(?P<action>\S+)\s*\|\s*(?P<module>\w+)\s*\|\s*(?P<result>\w+)\s*\|$"
)
_RVS_MET = re.compile(
    r"\[(?P<action>[^\]]+)\] \[GPU:: (?P<gpu>\d+)\] GFLOPS (?P<gflops>\d+)"
    r" Target GFLOPS: \S+ met: (?P<met>\w+)"
)
# Per-GPU and per-action verdicts RVS prints (its user guide, docs/ug1main.md at 21584e14, and
# ROCm/system-acceptance-docs): iet `[GPU:: 42583] pass: TRUE`, mem `mem Test 1 : PASS`, peqt
# `peqt true`, pbqt `p2p [GPU:: …] [GPU:: …] peers:true`.
_RVS_IET_PASS = re.compile(
    r"\[(?P<action>[^\]]+)\] \[GPU::\s*(?P<gpu>\d+)\] pass: (?P<ok>TRUE|FALSE)", re.IGNORECASE
)
_RVS_MEM = re.compile(r"\[(?P<action>[^\]]+)\] mem Test (?P<test>\d+) : (?P<ok>PASS|FAIL)")
_RVS_PEQT = re.compile(r"\[(?P<action>[^\]]+)\] peqt (?P<ok>true|false)\s*$", re.MULTILINE)
_RVS_PEERS = re.compile(
    r"\[(?P<action>[^\]]+)\] p2p \[GPU::[^\]]*?(?P<gpu>\d+) - [0-9a-f:.]+\]"
    r" \[GPU::[^\]]*?(?P<peer>\d+) - [0-9a-f:.]+\] peers:(?P<ok>true|false)"
)
_RVS_VERSION = re.compile(r"^\|\s*ROCm version\s*\|\s*(?P<v>\S+)\s*\|", re.MULTILINE)


def parse_rvs(text: str) -> Facts:
    """RVS output: per-GPU `met: TRUE/FALSE` lines and the summary table's per-action result."""
    body = strip_annotations(text)
    facts = Facts()
    for met in _RVS_MET.finditer(body):
        facts.diagnostics.append(
            Diagnostic(
                tool="rvs",
                test=f"{met.group('action')} gpu {met.group('gpu')}",
                result="pass" if met.group("met").upper() == "TRUE" else "fail",
                detail=f"{int(met.group('gflops')) / 1000:.1f} TFLOPS",
            )
        )
    for pattern, name in (
        (_RVS_IET_PASS, "{action} gpu {gpu}"),
        (_RVS_MEM, "{action} mem test {test}"),
        (_RVS_PEQT, "{action}"),
        (_RVS_PEERS, "{action} gpu {gpu} peer {peer}"),
    ):
        for hit in pattern.finditer(body):
            ok = hit.group("ok").lower() in ("true", "pass")
            facts.diagnostics.append(
                Diagnostic(
                    tool="rvs", test=name.format(**hit.groupdict()), result="pass" if ok else "fail"
                )
            )
    for line in body.splitlines():
        if (row := _RVS_RESULT.match(line.strip())) and row.group("module") != "Module":
            facts.diagnostics.append(
                Diagnostic(tool="rvs", test=row.group("action"), result=row.group("result").lower())
            )
    if version := _RVS_VERSION.search(body):
        facts.rocm_version = version.group("v").split("-")[0]
    return facts


def parse_dcgmi_diag(text: str) -> Facts:
    """`dcgmi diag -r N` table (DCGM 3.x): one `| Test | Pass/Fail/Skip … |` row per check."""
    facts = Facts()
    for line in strip_annotations(text).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0] or cells[0].startswith("-"):
            continue
        test, result = cells
        if test == "Driver Version Detected":
            facts.driver_name, facts.driver_version = "nvidia", result
        verdict = result.split(" ")[0].lower()
        if verdict in ("pass", "fail", "skip", "warn"):
            facts.diagnostics.append(
                Diagnostic(tool="dcgmi", test=test, result=verdict, detail=result)
            )
    return facts
