"""The agent's own deep tests (`check --deep`), in PyTorch, for nodes without vendor stress tools.

- **burn**: bf16 matrix products on every GPU at once for `burn_s` seconds (default two minutes),
  timed in windows of about a second with device events; each window's product is compared with
  the first one (the same inputs must give the same result: a GPU that computes wrongly under
  heat or load shows it here). Clocks, power and temperature are sampled throughout
  (labgpu_agent.telemetry).
- **hbm**: write and verify patterns (all ones, 0xAA…, 0x55…, all zeros, the element's own index)
  over `hbm_fraction` of each GPU's free memory, counting the words that read back wrong.
- **pcie**: host→device and device→host copies from pinned memory, per GPU and direction.
- **p2p**: device→device copies for every ordered pair of GPUs (needs two or more).

Every number becomes a measurement `{"tool": "labgpu", "test", "gpu", "metric", "value",
"unit"}`; checks.check_deep_torch judges them against the instance profile.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from labgpu_agent.facts import Facts
from labgpu_agent.smoke.base import SmokeSkipped, load_torch
from labgpu_agent.telemetry import Sampler, summarise

TOOL = "labgpu"
BURN_S = 120.0
BURN_SIZE = 8192
HBM_FRACTION = 0.9
HBM_CHUNK_BYTES = 1 << 30
PCIE_BYTES = 1 << 30
P2P_BYTES = 1 << 30
# bf16 operands, float32 accumulation: a repeat of one product agrees with the first to rounding
# (cuBLAS may pick another reduction order); a wrong result is off by far more.
BURN_TOLERANCE = 1e-2
# 32-bit words written and read back; the last one is "each word holds its own index" (within
# its 1 GiB chunk, offset per chunk so that a chunk read at the wrong address does not match).
PATTERNS: tuple[tuple[str, int | None], ...] = (
    ("ones", -1),
    ("0xaaaaaaaa", -0x55555556),
    ("0x55555555", 0x55555555),
    ("zeros", 0),
    ("index", None),
)


@dataclass
class DeepRun:
    status: str = "passed"  # passed | skipped | failed
    reason: str | None = None
    measurements: list[dict[str, Any]] = field(default_factory=list)
    telemetry: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, test: str, gpu: int, metric: str, value: float, unit: str, **extra: Any) -> None:
        self.measurements.append(
            {
                "tool": TOOL,
                "test": test,
                "gpu": gpu,
                "metric": metric,
                "value": value,
                "unit": unit,
                **extra,
            }
        )

    def to_facts(self) -> Facts:
        return Facts(measurements=list(self.measurements))


def run_deep_tests(
    *,
    read_telemetry: Callable[[], Facts | None] | None = None,
    burn_s: float = BURN_S,
    hbm_fraction: float = HBM_FRACTION,
    tests: tuple[str, ...] = ("burn", "hbm", "pcie", "p2p"),
) -> DeepRun:
    """Run the deep tests on every visible GPU; torch missing or no GPU gives `skipped`."""
    run = DeepRun()
    try:
        torch = load_torch()
    except SmokeSkipped as exc:
        return DeepRun(status="skipped", reason=str(exc))
    devices = list(range(torch.cuda.device_count()))

    def step(name: str) -> None:
        if name == "burn":
            _burn(torch, devices, burn_s, read_telemetry, run)
        elif name == "p2p":
            _p2p(torch, devices, run)
        else:
            for device in devices:
                if name == "hbm":
                    _hbm(torch, device, hbm_fraction, run)
                else:
                    _pcie(torch, device, run)

    for name in tests:
        started = time.perf_counter()
        try:
            step(name)
        except Exception as exc:  # a test that crashes the GPU fails the check, not the agent
            run.status = "failed"
            run.reason = f"{name}: {type(exc).__name__}: {str(exc)[:300]}"
            run.add(name, -1, "crashed", 1, "count", error=run.reason)
        finally:
            run.seconds[name] = round(time.perf_counter() - started, 3)
            torch.cuda.empty_cache()
    return run


def _sync_all(torch: ModuleType, devices: list[int]) -> None:
    for d in devices:
        torch.cuda.synchronize(d)


def _burn(
    torch: ModuleType,
    devices: list[int],
    burn_s: float,
    read_telemetry: Callable[[], Facts | None] | None,
    run: DeepRun,
) -> None:
    size = BURN_SIZE
    state = []
    for d in devices:
        gen = torch.Generator(device=f"cuda:{d}").manual_seed(d)
        a = torch.randn(size, size, device=f"cuda:{d}", dtype=torch.bfloat16, generator=gen)
        b = torch.randn(size, size, device=f"cuda:{d}", dtype=torch.bfloat16, generator=gen)
        out = torch.empty_like(a)
        reference = torch.matmul(a, b).float()
        state.append((d, a, b, out, reference, reference.norm()))
    _sync_all(torch, devices)
    # Calibrate: products per window so that one window takes about a second.
    d0, a0, b0, out0, _, _ = state[0]
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.device(d0):
        start.record()
        for _ in range(20):
            torch.matmul(a0, b0, out=out0)
        end.record()
    torch.cuda.synchronize(d0)
    per_product_s = max(start.elapsed_time(end) / 1000 / 20, 1e-5)
    per_window = max(1, int(1.0 / per_product_s))
    windows: dict[int, list[float]] = {d: [] for d in devices}
    errors: dict[int, list[float]] = {d: [] for d in devices}
    flops = 2 * size**3 * per_window
    sampler = Sampler(read_telemetry, interval_s=1.0) if read_telemetry else None
    began = time.perf_counter()
    if sampler:
        sampler.__enter__()
    try:
        while time.perf_counter() - began < burn_s:
            marks = []
            for d, a, b, out, _, _ in state:
                with torch.cuda.device(d):
                    s, e = (
                        torch.cuda.Event(enable_timing=True),
                        torch.cuda.Event(enable_timing=True),
                    )
                    s.record()
                    for _ in range(per_window):
                        torch.matmul(a, b, out=out)
                    e.record()
                    marks.append((d, s, e))
            _sync_all(torch, devices)
            for (d, s, e), (_, _, _, out, reference, ref_norm) in zip(marks, state, strict=True):
                windows[d].append(flops / (s.elapsed_time(e) / 1000) / 1e12)
                errors[d].append(((out.float() - reference).norm() / ref_norm).item())
    finally:
        if sampler:
            sampler.__exit__(None, None, None)
    elapsed = time.perf_counter() - began
    for d in devices:
        rates = windows[d]
        bad = sum(1 for err in errors[d] if not err <= BURN_TOLERANCE)  # NaN counts as bad
        common = {"windows": len(rates), "seconds": round(elapsed, 1), "size": size}
        run.add("burn", d, "bf16_tflops", round(statistics.median(rates), 1), "TFLOP/s", **common)
        run.add("burn", d, "bf16_tflops_min", round(min(rates), 1), "TFLOP/s", **common)
        run.add("burn", d, "wrong_results", bad, "windows", max_error=max(errors[d]), **common)
        if sampler:
            summary = summarise(sampler.samples, d)
            run.telemetry[str(d)] = summary
            for name, unit in (
                ("sm_clock_mhz", "MHz"),
                ("power_w", "W"),
                ("temperature_c", "°C"),
                ("hbm_temperature_c", "°C"),
            ):
                if name in summary:
                    stat = "min" if name == "sm_clock_mhz" else "max"
                    run.add("burn", d, f"{name}_median", summary[name]["median"], unit)
                    run.add("burn", d, f"{name}_{stat}", summary[name][stat], unit)
            run.add(
                "burn",
                d,
                "telemetry_samples",
                summary["samples"],
                "samples",
                throttle_reasons=summary["throttle_reasons"],
            )


def _hbm(torch: ModuleType, device: int, fraction: float, run: DeepRun) -> None:
    free, total = torch.cuda.mem_get_info(device)
    words_per_chunk = HBM_CHUNK_BYTES // 4
    chunks: list[Any] = []
    target = int(free * fraction)
    # One chunk is kept back as scratch for the expected "index" pattern.
    while (len(chunks) + 2) * HBM_CHUNK_BYTES <= target:
        chunks.append(torch.empty(words_per_chunk, dtype=torch.int32, device=f"cuda:{device}"))
    scratch = torch.empty(words_per_chunk, dtype=torch.int32, device=f"cuda:{device}")
    tested = len(chunks) * HBM_CHUNK_BYTES
    mismatches = 0
    write_s = 0.0
    for name, value in PATTERNS:
        torch.cuda.synchronize(device)
        started = time.perf_counter()
        for i, chunk in enumerate(chunks):
            if value is None:
                _index_pattern(torch, i, chunk)
            else:
                chunk.fill_(value)
        torch.cuda.synchronize(device)
        write_s += time.perf_counter() - started
        wrong = 0
        for i, chunk in enumerate(chunks):
            if value is None:
                _index_pattern(torch, i, scratch)
                wrong += int((chunk != scratch).sum().item())
            else:
                wrong += int((chunk != value).sum().item())
        mismatches += wrong
        run.add("hbm", device, f"mismatches_{name}", wrong, "words")
    del chunks, scratch
    run.add(
        "hbm",
        device,
        "mismatches",
        mismatches,
        "words",
        tested_gib=round(tested / 2**30, 1),
        free_gib=round(free / 2**30, 1),
        total_gib=round(total / 2**30, 1),
        patterns=[name for name, _ in PATTERNS],
    )
    if write_s > 0 and tested:
        run.add(
            "hbm",
            device,
            "pattern_write_gb_per_s",
            round(tested * len(PATTERNS) / write_s / 1e9, 1),
            "GB/s",
        )


def _index_pattern(torch: ModuleType, chunk_number: int, out: Any) -> None:
    start = (chunk_number * 104_729) % (1 << 20)  # stays well inside int32
    torch.arange(start, start + out.numel(), dtype=torch.int32, out=out)


def _timed_copies(torch: ModuleType, device: int, copy: Callable[[], Any], iters: int) -> float:
    """Median seconds of one copy, device events around each, after two warm-ups."""
    with torch.cuda.device(device):
        for _ in range(2):
            copy()
        torch.cuda.synchronize(device)
        times = []
        for _ in range(iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            copy()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1000)
    return float(statistics.median(times))


def _pcie(torch: ModuleType, device: int, run: DeepRun) -> None:
    host = torch.empty(PCIE_BYTES, dtype=torch.uint8, pin_memory=True)
    host.random_(0, 256)
    dev = torch.empty(PCIE_BYTES, dtype=torch.uint8, device=f"cuda:{device}")
    h2d = _timed_copies(torch, device, lambda: dev.copy_(host, non_blocking=True), 10)
    back = torch.empty_like(host).pin_memory()
    d2h = _timed_copies(torch, device, lambda: back.copy_(dev, non_blocking=True), 10)
    intact = bool(torch.equal(back[: 1 << 20], host[: 1 << 20]))
    run.add("pcie", device, "pcie_h2d_gb_per_s", round(PCIE_BYTES / h2d / 1e9, 1), "GB/s")
    run.add("pcie", device, "pcie_d2h_gb_per_s", round(PCIE_BYTES / d2h / 1e9, 1), "GB/s")
    run.add("pcie", device, "wrong_results", 0 if intact else 1, "copies")


def _p2p(torch: ModuleType, devices: list[int], run: DeepRun) -> None:
    if len(devices) < 2:
        return
    count = P2P_BYTES // 4
    buffers = {d: torch.rand(count, device=f"cuda:{d}") for d in devices}
    for src in devices:
        for dst in devices:
            if src == dst:
                continue
            target = torch.empty(count, device=f"cuda:{dst}")
            peer = bool(torch.cuda.can_device_access_peer(src, dst))
            source = buffers[src]

            def copy(target: Any = target, source: Any = source) -> Any:
                return target.copy_(source, non_blocking=True)

            seconds = _timed_copies(torch, src, copy, 10)
            intact = bool(torch.equal(target[: 1 << 18].cpu(), buffers[src][: 1 << 18].cpu()))
            run.add(
                "p2p",
                src,
                "p2p_gb_per_s",
                round(P2P_BYTES / seconds / 1e9, 1),
                "GB/s",
                peer=dst,
                peer_access=peer,
            )
            run.add("p2p", src, "wrong_results", 0 if intact else 1, "copies", peer=dst)
