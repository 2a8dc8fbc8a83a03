"""Output a parser does not know becomes a `parse` finding naming the tool and the first unknown
line: never a crash, never silence. Garbage, truncated output, binary noise, empty output and
huge output are fed through the same path the agent uses (collect → checks)."""

from __future__ import annotations

import contextlib
import json
import os

import pytest
from conftest import LOCAL_FIXTURES

from labgpu_agent.checks import check_parse, run_checks
from labgpu_agent.collect import RawOutput, facts_from_outputs
from labgpu_agent.parsers import PARSERS, ParseError, parse
from labgpu_agent.profiles import get_profile

MONITOR = (
    LOCAL_FIXTURES / "published/amd-smi/monitor_putm_8x_mi300x_idle_acceptance_rocm6.2.txt"
).read_text()


def findings_for(source: str, text: str) -> list:
    facts = facts_from_outputs({source: RawOutput(text)})
    return [f for f in run_checks(facts, get_profile("mi300x")) if f.id.startswith("parse.")]


def test_an_unknown_line_inside_a_known_table_is_named_in_a_finding():
    text = MONITOR.replace("3 122 W 36 °C", "3 122 W 36 kelvin °C")
    facts = parse("amd-smi-monitor", text)
    assert len(facts.gpus) == 7  # the other rows are still read
    (problem,) = facts.parse_problems
    assert problem.tool == "amd-smi-monitor" and problem.line.startswith("3 122 W 36 kelvin")
    assert problem.line_number == text.splitlines().index(problem.line) + 1
    (finding,) = check_parse(facts, get_profile("mi300x"))
    assert finding.id == "parse.amd_smi_monitor" and finding.severity == "warn"
    assert "3 122 W 36 kelvin" in finding.message and finding.remediation


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("amd-smi-metric", "Segmentation fault (core dumped)\nwhatever\n"),
        ("rocm-smi", "<html><body>502 Bad Gateway</body></html>\n"),
        ("nvidia-smi-xml", "<?xml version='1.0'?>\n<nvidia_smi_log><gpu id=\n"),
        ("rocminfo", "hsa api call failure at: rocminfo.cc:1306\nCall returned 4104\n"),
    ],
)
def test_garbage_from_a_tool_that_exited_zero_is_a_parse_finding(source, text):
    (finding,) = findings_for(source, text)
    assert finding.severity == "warn"
    assert finding.evidence["line"] is not None and finding.evidence["line_number"] >= 1


def test_truncated_json_names_the_line_where_it_stops():
    text = '[\n  {\n    "gpu": 0,\n    "temperature": {"hotspot": 51, "edge":'
    (finding,) = findings_for("amd-smi-metric", text)
    assert finding.evidence["line_number"] == 4 and "JSON" in finding.evidence["reason"]


def test_binary_noise_is_a_finding_not_a_crash():
    noise = os.urandom(4096).decode("latin-1")
    for tool in PARSERS:
        try:
            facts = parse(tool, noise)
        except ParseError as exc:
            assert exc.problem is None or exc.problem.tool == tool
            continue
        for problem in facts.parse_problems:
            assert problem.tool == tool and (problem.line is None or problem.line.isprintable())


def test_empty_output_of_a_gpu_tool_is_reported_not_read_as_no_gpus():
    (finding,) = findings_for("amd-smi-static", "")
    assert "printed nothing" in finding.message


def test_empty_output_of_a_failed_tool_is_its_exit_code_not_a_parse_finding():
    facts = facts_from_outputs({"amd-smi-static": RawOutput("", exit_code=1)})
    assert facts.parse_problems == [] and facts.sources["amd-smi-static"].startswith(
        "error: exit 1"
    )


def test_huge_output_is_read_to_the_bound_without_crashing():
    rows = "".join(f"{i % 8} 125 W 37 °C 32 °C 0 % 158 MHz 0 % 900 MHz\n" for i in range(20_000))
    text = MONITOR.splitlines()[2] + "\n" + rows + "x" * (17 * 2**20)  # one 17 MiB line
    facts = parse("amd-smi-monitor", text)
    assert len(facts.gpus) == 20_000
    assert any("longer than" in p.reason for p in facts.parse_problems)


def test_every_parser_survives_every_other_tools_output():
    """Feeding one tool's real output to another parser: a problem at worst, never a crash."""
    samples = [p.read_text() for p in (LOCAL_FIXTURES / "published").rglob("*.txt")]
    for tool in PARSERS:
        for text in samples:
            with contextlib.suppress(ParseError):
                parse(tool, text)


def test_the_shipped_fixture_profiles_parse_without_problems():
    from labgpu_agent.collect import fixture_profile_names, load_fixture_profile

    for name in fixture_profile_names():
        facts = facts_from_outputs(load_fixture_profile(name).outputs)
        assert facts.parse_problems == [], name


@pytest.mark.parametrize(
    "source", ["nvidia-smi-nvlink", "amd-smi-bad-pages", "amd-smi-xgmi", "dmesg", "lspci-amd"]
)
def test_a_tool_that_may_have_nothing_to_list_prints_nothing_without_a_problem(source):
    """`nvidia-smi nvlink -s` on a PCIe card, `dmesg` with no GPU errors: empty is an answer."""
    facts = facts_from_outputs({source: RawOutput("")})
    assert facts.sources[source] == "ok" and facts.parse_problems == []


@pytest.mark.parametrize(
    "source", ["amd-smi-metric", "amd-smi-static", "rocm-smi", "rocminfo", "nvidia-smi-xml"]
)
def test_a_gpu_tool_that_prints_nothing_is_a_problem(source):
    facts = facts_from_outputs({source: RawOutput("")})
    (problem,) = facts.parse_problems
    assert problem.tool == source and "printed nothing" in problem.reason


def test_a_report_with_parse_findings_passes_the_shared_schema():
    """The finding id must fit the report schema (`parse.amd_smi_monitor`, no hyphen), or the
    agent could not send the very report that says what it could not read."""
    from dataclasses import replace

    from labgpu_agent.cli import assemble_report
    from labgpu_agent.collect import load_fixture_profile
    from labgpu_agent.report import validate_report

    healthy = load_fixture_profile("healthy-mi300x")
    garbled = dict(healthy.outputs)
    garbled["amd-smi-metric"] = RawOutput(MONITOR.replace("3 122 W", "3 1\x0022 W\x07"))
    garbled["rocm-smi"] = RawOutput("\x00\x01 binary\n")
    report = assemble_report(
        profile_name=None, fixture=replace(healthy, outputs=garbled), smoke_names=[]
    )
    validate_report(report)
    assert "\\u0000" not in json.dumps(report)  # the API refuses NUL bytes anywhere in it
    ids = {f["id"] for f in report["findings"]}
    assert {"parse.amd_smi_metric", "parse.rocm_smi"} <= ids
    assert report["facts"]["parse_problems"][0]["tool"] in {"amd-smi-metric", "rocm-smi"}


def test_control_bytes_in_what_a_tool_printed_never_reach_the_report():
    """A NUL in a kernel log line or a GPU name would make the API refuse the whole report."""
    facts = facts_from_outputs(
        {
            "dmesg": RawOutput("[ 1.0] amdgpu 0000:83:00.0: GPU reset begin!\x00\x1b]0;x\x07\n"),
            "rocm-smi": RawOutput('{"card0": {"Card Series": "AMD Instinct\\u0000 MI300X"}}'),
        }
    )
    dumped = json.dumps(facts.to_dict())
    assert "\\u0000" not in dumped and "\\u0007" not in dumped
    assert facts.kernel_log_errors and "GPU reset" in facts.kernel_log_errors[0]
    assert facts.gpus[0].model is not None and "MI300X" in facts.gpus[0].model


@pytest.mark.parametrize(
    ("tool", "capture"),
    [
        ("nvidia-smi", "nvidia-smi.txt"),
        ("nvidia-smi-q", "nvidia-smi-q.txt"),
        ("nvidia-smi-csv", "nvidia-smi-query.csv"),
        ("nvidia-smi-csv", "nvidia-smi-query-after.csv"),
    ],
)
def test_the_recorded_h200_outputs_raise_no_parse_finding(tool, capture):
    """A healthy node must not warn because of the parse check (the H200 gate is warn-free)."""
    text = (LOCAL_FIXTURES / "h200" / "captures" / capture).read_text()
    assert parse(tool, text).parse_problems == []
