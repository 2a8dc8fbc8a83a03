"""`labgpu-agent`: check, parse, smoke, run (see agent/README.md)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from labgpu_agent import __version__
from labgpu_agent.checks import Finding, check_deep_run, check_smoke, run_checks, verdict_of
from labgpu_agent.collect import (
    DEEP_SOURCES,
    FixtureProfile,
    UnknownFixtureProfile,
    collect_deep,
    collect_live,
    facts_from_outputs,
    fixture_profile_names,
    load_fixture_profile,
    mark_own_processes,
    telemetry_reader,
)
from labgpu_agent.facts import Facts
from labgpu_agent.parsers import PARSERS, ParseError, parse
from labgpu_agent.profiles import PROFILES, InstanceProfile, UnknownProfile, get_profile
from labgpu_agent.report import build_report
from labgpu_agent.smoke import SMOKE_NAMES, run_smoke, run_smokes
from labgpu_agent.smoke.base import SmokeResult
from labgpu_agent.stress import BURN_S, DeepRun, run_deep_tests
from labgpu_agent.usage import collect_usage_live, fixture_usage_from_env

EXIT_BY_VERDICT = {"pass": 0, "warn": 1, "fail": 2}
EXIT_USAGE = 64


def _guess_profile(facts: Facts) -> InstanceProfile | None:
    """No profile given: pick the one whose GPU name matches, with the GPU count seen."""
    import re

    model = next((g.model for g in facts.gpus if g.model), None)
    if model is None:
        return None
    for profile in PROFILES.values():
        if re.search(profile.model_pattern, model, re.IGNORECASE):
            return get_profile(f"{profile.name}:{len(facts.gpus)}")
    return None


def _smoke_list(text: str | None) -> list[str]:
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in SMOKE_NAMES]
    if unknown:
        raise SystemExit(f"unknown smoke test(s): {', '.join(unknown)}; known: {SMOKE_NAMES}")
    return names


def assemble_report(
    *,
    profile_name: str | None,
    fixture: FixtureProfile | None,
    smoke_names: list[str],
    smoke_options: dict[str, dict[str, Any]] | None = None,
    required_smoke: list[str] | None = None,
    deep: bool = False,
    deep_options: dict[str, Any] | None = None,
    handover: bool = True,
) -> dict[str, Any]:
    """Collect (or replay), check, run smoke tests and build the validated report.

    `required_smoke` (default: every test in `smoke_names`) are the tests whose absence or skip
    fails the report; `deep` also runs the agent's own deep tests (labgpu_agent.stress, options
    in `deep_options`) and the vendor stress tools (RVS, DCGM diag) when present. `handover`:
    the report decides whether a user gets the node (other processes on a GPU then fail it).
    """
    started = time.perf_counter()
    required = list(smoke_names if required_smoke is None else required_smoke)
    to_run = list(dict.fromkeys([*smoke_names, *required]))
    if fixture is not None:
        facts = facts_from_outputs(fixture.outputs)
        profile_name = profile_name or fixture.instance_profile
    else:
        vendor = get_profile(profile_name).vendor if profile_name else None
        outputs = collect_live(vendor)
        facts = mark_own_processes(facts_from_outputs(outputs))
    collected = time.perf_counter()
    profile = get_profile(profile_name) if profile_name else _guess_profile(facts)
    deep_s = 0.0
    deep_run: DeepRun | None = None
    if deep and fixture is None:
        deep_started = time.perf_counter()
        vendor = profile.vendor if profile else None
        deep_run = run_deep_tests(read_telemetry=telemetry_reader(vendor), **(deep_options or {}))
        facts = mark_own_processes(facts_from_outputs({**outputs, **collect_deep(vendor)}))
        facts.measurements.extend(deep_run.measurements)
        facts.sources["labgpu-deep"] = (
            deep_run.status if deep_run.reason is None else f"{deep_run.status}: {deep_run.reason}"
        )
        deep_s = time.perf_counter() - deep_started
    smoke: list[SmokeResult] = []
    smoke_started = time.perf_counter()
    if fixture is not None:
        # Fixture mode never touches torch: the recorded results stand in for the runs.
        smoke = [s for s in fixture.smoke if not to_run or s.name in to_run]
    else:
        smoke = run_smokes(to_run, profile.baselines if profile else {}, smoke_options)
    smoke_s = time.perf_counter() - smoke_started
    if profile is None:
        findings = [
            Finding(
                id="profile.unknown",
                severity="warn",
                message="No instance profile given and none matches the GPUs found; only facts are "
                "reported.",
                evidence={"models": sorted({g.model for g in facts.gpus if g.model})},
                remediation="Pass --profile (one of " + ", ".join(PROFILES) + ").",
            )
        ]
    else:
        findings = run_checks(facts, profile, smoke, required_smoke=required, handover=handover)
        if deep_run is not None:
            findings.extend(check_deep_run(deep_run, facts, profile))
    if (
        deep
        and fixture is None
        and not any(facts.sources.get(name) == "ok" for name in DEEP_SOURCES)
        and (deep_run is None or deep_run.status == "skipped")
    ):
        findings.append(
            Finding(
                id="deep.unavailable",
                severity="warn",
                message="A deep check was asked for, but neither the agent's own deep tests "
                "(they need PyTorch and a visible GPU"
                + (f": {deep_run.reason}" if deep_run and deep_run.reason else "")
                + ") nor a vendor stress tool (rvs, dcgmi) could run; only the standard checks "
                "ran.",
                evidence={
                    name: facts.sources.get(name, "missing")
                    for name in [*DEEP_SOURCES, "labgpu-deep"]
                },
                remediation="Install the smoke extra (`pip install 'labgpu-agent[smoke]'` with a "
                "CUDA or ROCm build of PyTorch), or the ROCm Validation Suite / NVIDIA DCGM.",
            )
        )
    timing = {
        "collect_s": round(collected - started, 3),
        "smoke_s": round(smoke_s, 3),
        "gate_wall_s": round(time.perf_counter() - started, 3),
    }
    if deep:
        timing["deep_s"] = round(deep_s, 3)
        for name, seconds in (deep_run.seconds if deep_run else {}).items():
            timing[f"deep_{name}_s"] = seconds
    return build_report(
        facts=facts,
        findings=findings,
        smoke=smoke,
        profile=profile_name or (profile.name if profile else None),
        agent_version=__version__,
        hostname=fixture.hostname if fixture else None,
        fixture_profile=fixture.name if fixture else None,
        required_smoke=required,
        timing=timing,
        deep=deep,
    )


def _print_human(report: dict[str, Any]) -> None:
    facts = report["facts"]
    print(
        f"labgpu-agent {report['agent_version']}  host {report['hostname']}  "
        f"profile {report['profile']}  ({report['mode']})"
    )
    for gpu in facts.get("gpus", []):
        print(
            f"  GPU {gpu.get('index')}: {gpu.get('model', '?')}  "
            f"{gpu.get('gfx_target') or gpu.get('compute_capability') or ''}  "
            f"{(gpu.get('vram_total_mib') or 0) / 1024:.0f} GiB  "
            f"{gpu.get('temperature_hotspot_c', '?')} °C  "
            f"PCIe Gen{gpu.get('pcie_gen', '?')} x{gpu.get('pcie_width', '?')}"
        )
    for result in report["smoke"]:
        value = f"{result['value']} {result['unit']}" if result["value"] is not None else ""
        print(
            f"  smoke {result['name']} {result['metric']}: {result['status']} {value}"
            + (f"  (baseline {result['baseline']:.4g})" if result["baseline"] else "")
            + (f"  — {result['reason']}" if result.get("reason") else "")
        )
    for finding in report["findings"]:
        print(f"[{finding['severity'].upper():4}] {finding['id']}: {finding['message']}")
        if finding["severity"] != "info" and finding["remediation"]:
            print(f"       fix: {finding['remediation']}")
    wall = report.get("timing", {}).get("gate_wall_s")
    print(f"verdict: {report['verdict'].upper()}" + (f"  ({wall:.1f} s)" if wall else ""))


def _fixture(name: str | None) -> FixtureProfile | None:
    return load_fixture_profile(name) if name else None


def cmd_check(args: argparse.Namespace) -> int:
    deep_options: dict[str, Any] = {}
    if args.burn_seconds is not None:
        deep_options["burn_s"] = args.burn_seconds
    report = assemble_report(
        profile_name=args.profile,
        fixture=_fixture(args.fixture_profile),
        smoke_names=_smoke_list(args.smoke)
        if args.smoke
        else (list(SMOKE_NAMES) if args.fixture_profile else []),
        deep=args.deep,
        deep_options=deep_options,
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_human(report)
    return EXIT_BY_VERDICT[report["verdict"]]


def cmd_parse(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(errors="replace")
    try:
        facts = parse(args.tool, text)
    except ParseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(facts.to_dict(), indent=2))
    return 0


def cmd_smoke(args: argparse.Namespace) -> int:
    options: dict[str, Any] = {}
    for key in (
        "steps",
        "batch",
        "guidance",
        "resolution",
        "weights",
        "iters",
        "warmup",
        "size",
        "size_gib",
        "new_tokens",
        "prompt_tokens",
        "dtype",
        "mode",
    ):
        value = getattr(args, key, None)
        if value is not None:
            options[key] = value
    if args.name == "llm" and "iters" in options:
        options["iters_large"] = None  # an explicit --iters counts for both batch sizes
    profile = get_profile(args.profile) if args.profile else None
    results = run_smoke(args.name, profile.baselines if profile else {}, **options)
    findings = check_smoke(results, profile) if profile else []
    if args.json:
        print(
            json.dumps(
                {
                    "smoke": [r.to_dict() for r in results],
                    "findings": [f.to_dict() for f in findings],
                    "verdict": verdict_of(findings),
                },
                indent=2,
            )
        )
    else:
        for r in results:
            value = f"{r.value} {r.unit}" if r.value is not None else ""
            print(
                f"{r.name} {r.metric}: {r.status} {value} in {r.duration_s}s"
                + (f" (baseline {r.baseline:.4g})" if r.baseline else "")
                + (f" — {r.reason}" if r.reason else "")
            )
        for f in findings:
            print(f"[{f.severity.upper()}] {f.id}: {f.message}")
    return 1 if any(r.status == "failed" for r in results) else 0


def _time_scale() -> float:
    """LABGPU_TIME_SCALE from agent.env (absent, 1: production); anything unusable counts as 1."""
    try:
        scale = float(os.environ.get("LABGPU_TIME_SCALE", "1"))
    except ValueError:
        return 1.0
    return scale if scale > 0 and scale != float("inf") else 1.0


def cmd_run(args: argparse.Namespace) -> int:
    from labgpu_agent.client import AgentClient, ApiError, Bootstrap, RetryPolicy, run_agent
    from labgpu_agent.notebook import start_notebook

    fixture = _fixture(args.fixture_profile)
    smoke = _smoke_list(args.smoke) if args.smoke is not None else None

    def make_report(boot: Bootstrap, deep: bool | None = None) -> dict[str, Any]:
        # The pool decides which smoke tests are required (bootstrap answer); --smoke narrows
        # what runs, but a required test left out still fails the report.
        required = boot.required_smoke if boot.required_smoke is not None else list(SMOKE_NAMES)
        return assemble_report(
            profile_name=args.profile or boot.profile,
            fixture=fixture,
            smoke_names=smoke if smoke is not None else required,
            required_smoke=required,
            # The handover report is deep when the pool says so; one asked for by a heartbeat
            # comes during a booking, where the user's own processes are expected.
            deep=boot.deep if deep is None else deep,
            handover=deep is None,
        )

    if fixture is not None:
        fixture_usage = fixture_usage_from_env(
            facts_from_outputs(fixture.outputs),
            seed=os.environ.get("LABGPU_EMULATOR_DROPLET_NAME", fixture.hostname),
        )
        if args.usage_control:
            fixture_usage.control_file = Path(args.usage_control)
        make_usage = fixture_usage.sample
    else:
        make_usage = collect_usage_live
    try:
        return run_agent(
            AgentClient(args.api, retry=RetryPolicy.scaled(_time_scale())),
            bootstrap_token=args.token,
            make_report=make_report,
            make_deep_report=lambda boot: make_report(boot, deep=True),
            make_usage=make_usage,
            start_notebook=lambda spec, say: start_notebook(
                spec, say=say, fixture=fixture is not None
            ),
            max_heartbeats=args.max_heartbeats,
        )
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="labgpu-agent", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="collect facts, run checks, print findings and a verdict")
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.add_argument("--profile", help=f"instance profile: {', '.join(PROFILES)} (NAME:COUNT)")
    check.add_argument("--fixture-profile", help="replay recorded outputs instead of tools")
    check.add_argument(
        "--smoke", help="comma-separated smoke tests to run as well (each one is then required)"
    )
    check.add_argument(
        "--deep",
        action="store_true",
        help="also run the deep tests: the agent's own (bf16 GEMM burn with clocks, power and "
        "temperature sampled; HBM patterns over most of the free memory; host<->device and "
        "peer-to-peer bandwidth) and the vendor stress tools when present (AMD RVS "
        "babel/iet/pebb, NVIDIA dcgmi diag -r 2): minutes",
    )
    check.add_argument(
        "--burn-seconds",
        type=float,
        help=f"--deep: how long the GEMM burn runs (default {BURN_S:.0f})",
    )
    check.set_defaults(func=cmd_check)

    parse_cmd = sub.add_parser("parse", help="parse one saved tool output, print facts as JSON")
    parse_cmd.add_argument("tool", choices=sorted(PARSERS))
    parse_cmd.add_argument("file", help="path, or - for standard input")
    parse_cmd.set_defaults(func=cmd_parse)

    smoke = sub.add_parser("smoke", help="run one smoke workload on the GPU")
    smoke.add_argument("name", choices=SMOKE_NAMES)
    smoke.add_argument("--json", action="store_true")
    smoke.add_argument("--profile", help="compare against this profile's baseline")
    smoke.add_argument("--steps", type=int, help="sdxl: denoising steps (20)")
    smoke.add_argument("--batch", type=int, help="sdxl: images (4); llm: batch B (128)")
    smoke.add_argument("--guidance", type=float, help="sdxl: CFG scale (5.0)")
    smoke.add_argument("--resolution", type=int, help="sdxl: image side (1024)")
    smoke.add_argument("--weights", help="sdxl/llm: local weights directory (default synthetic)")
    smoke.add_argument("--dtype", help="sdxl: bfloat16 (default) or float16")
    smoke.add_argument("--new-tokens", type=int, help="llm: tokens generated (128)")
    smoke.add_argument("--prompt-tokens", type=int, help="llm: prompt length (128)")
    smoke.add_argument(
        "--mode", choices=("graph", "generate"), help="llm: CUDA-graph decode (default) or generate"
    )
    smoke.add_argument("--size", type=int, help="matmul: matrix side (8192)")
    smoke.add_argument("--size-gib", type=float, help="bandwidth: buffer size (4)")
    smoke.add_argument("--iters", type=int, help="timed repetitions")
    smoke.add_argument("--warmup", type=int, help="untimed warm-up repetitions")
    smoke.set_defaults(func=cmd_smoke)

    run = sub.add_parser("run", help="bootstrap with the API, report, then heartbeat")
    run.add_argument("--api", required=True, help="API base URL, e.g. https://labgpu.example")
    run.add_argument("--token", required=True, help="single-use bootstrap token")
    run.add_argument("--profile", help="override the profile the API assigns")
    run.add_argument("--fixture-profile", help="replay recorded outputs (emulated cloud)")
    run.add_argument("--smoke", help="comma-separated smoke tests (default: all)")
    run.add_argument("--max-heartbeats", type=int, help="stop after N heartbeats (testing)")
    run.add_argument(
        "--usage-control",
        help="fixture mode: a file whose first word (idle | busy) sets the reported utilisation "
        "(default $LABGPU_USAGE_CONTROL, else $LABGPU_AGENT_STATE_DIR/usage)",
    )
    run.set_defaults(func=cmd_run)

    sub.add_parser("fixtures", help="list the shipped fixture profiles").set_defaults(
        func=lambda _a: print("\n".join(fixture_profile_names())) or 0
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        code: int = args.func(args)
    except (UnknownProfile, UnknownFixtureProfile) as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return EXIT_USAGE
    return code
