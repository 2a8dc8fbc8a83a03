"""Smoke tests: real inference workloads and two functional kernels, timed on the node's GPU."""

from __future__ import annotations

import gc
import importlib.util
import sys
from typing import Any

from labgpu_agent.smoke.base import SmokeResult, unused_imports_blocked

SMOKE_NAMES = ("matmul", "bandwidth", "sdxl", "llm")

# The tests whose libraries take seconds to import (diffusers, transformers, torch._dynamo that
# both pull in): in a gate of several tests each runs in a process of its own (run_smokes).
OWN_PROCESS = ("sdxl", "llm")


def run_smoke(name: str, baselines: dict[str, float], **options: Any) -> list[SmokeResult]:
    """Run one smoke test by name; torch and friends are imported only here, lazily."""
    try:
        return _run(name, baselines, **options)
    finally:
        _release_gpu_memory()


def run_smokes(
    names: list[str],
    baselines: dict[str, float],
    options: dict[str, dict[str, Any]] | None = None,
    *,
    own_processes: bool | None = None,
) -> list[SmokeResult]:
    """Run several smoke tests, results in the order of `names`.

    With `own_processes` (default: when torch is installed and a test of OWN_PROCESS runs beside
    another test), each OWN_PROCESS test gets a process of its own, started first: it imports
    its libraries while this process runs the others, and touches the GPU only when told to, one
    test at a time, in the order their imports finish. So the GPU runs one test at a time, as
    before, and no process imports anything while it measures: an import in a thread beside the
    timed calls took the GIL from the thread launching them and moved the figures
    (docs/benchmarks.md, run9). What overlaps is one process's imports with another's GPU work,
    on other CPU cores.
    """
    options = options or {}
    if own_processes is None:
        own_processes = (
            len(names) > 1
            and any(name in OWN_PROCESS for name in names)
            and importlib.util.find_spec("torch") is not None
        )
    if not own_processes:
        return [r for name in names for r in run_smoke(name, baselines, **options.get(name, {}))]
    from labgpu_agent.smoke.worker import SmokeProcess

    waiting = {
        name: SmokeProcess.start(name, baselines, options.get(name, {}))
        for name in names
        if name in OWN_PROCESS
    }
    done: dict[str, list[SmokeResult]] = {}
    try:
        for name in names:
            if name not in OWN_PROCESS:
                done[name] = run_smoke(name, baselines, **options.get(name, {}))
        while waiting:
            ready = SmokeProcess.first_ready(list(waiting.values()))
            done[ready.name] = ready.run()
            del waiting[ready.name]
    finally:
        for process in waiting.values():
            process.stop()
    return [r for name in names for r in done[name]]


def _release_gpu_memory() -> None:
    # The next smoke test (or the user's job) should find the memory this one used free again.
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()


def _run(name: str, baselines: dict[str, float], **options: Any) -> list[SmokeResult]:
    from labgpu_agent.smoke.kernels import run_bandwidth, run_matmul

    if name == "matmul":
        return [run_matmul(baseline=baselines.get("matmul:bf16_tflops"), **options)]
    if name == "bandwidth":
        return [run_bandwidth(baseline=baselines.get("bandwidth:copy_gb_per_s"), **options)]
    if name == "sdxl":
        from labgpu_agent.smoke.sdxl import run_sdxl

        with unused_imports_blocked():
            return [run_sdxl(baseline=baselines.get("sdxl:images_per_s"), **options)]
    if name == "llm":
        from labgpu_agent.smoke.llm import run_llm

        with unused_imports_blocked():
            return run_llm(baselines=baselines, **options)
    raise ValueError(f"unknown smoke test {name!r}; known: {', '.join(SMOKE_NAMES)}")
