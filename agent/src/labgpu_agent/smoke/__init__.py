"""Smoke tests: real inference workloads and two functional kernels, timed on the node's GPU."""

from __future__ import annotations

import gc
import sys
from typing import Any

from labgpu_agent.smoke.base import SmokeResult

SMOKE_NAMES = ("matmul", "bandwidth", "sdxl", "llm")


def run_smoke(name: str, baselines: dict[str, float], **options: Any) -> list[SmokeResult]:
    """Run one smoke test by name; torch and friends are imported only here, lazily."""
    try:
        return _run(name, baselines, **options)
    finally:
        _release_gpu_memory()


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

        return [run_sdxl(baseline=baselines.get("sdxl:images_per_s"), **options)]
    if name == "llm":
        from labgpu_agent.smoke.llm import run_llm

        return run_llm(baselines=baselines, **options)
    raise ValueError(f"unknown smoke test {name!r}; known: {', '.join(SMOKE_NAMES)}")
