"""The two functional checks: a bf16 matrix product (TFLOPS) and a device copy (GB/s)."""

from __future__ import annotations

from labgpu_agent.smoke.base import (
    SmokeFailed,
    SmokeResult,
    guarded,
    load_torch,
    time_events,
    torch_environment,
)


def run_matmul(
    *, size: int = 8192, iters: int = 50, warmup: int = 5, baseline: float | None = None
) -> SmokeResult:
    def run() -> SmokeResult:
        torch = load_torch()
        gen = torch.Generator(device="cuda").manual_seed(0)
        # Random data, never zeros: zeros run faster on the matrix units and hide bad output.
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16, generator=gen)
        out = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)
        seconds = time_events(
            torch, lambda: torch.matmul(a, b, out=out), warmup=warmup, iters=iters
        )
        tflops = 2 * size**3 / seconds / 1e12
        # Check a corner against a float32 product of the same inputs: bf16 lands well under 2 %.
        ref = a[:256].float() @ b[:, :256].float()
        rel = ((out[:256, :256].float() - ref).norm() / ref.norm()).item()
        if not torch.isfinite(out).all().item() or rel > 2e-2:
            raise SmokeFailed(f"matmul output wrong: relative error {rel:.2e} or non-finite")
        return SmokeResult(
            name="matmul",
            status="passed",
            metric="bf16_tflops",
            value=round(tflops, 1),
            unit="TFLOP/s",
            baseline=baseline,
            params={"size": size, "iters": iters, "warmup": warmup, "dtype": "bfloat16"},
            extra={"median_ms": round(seconds * 1000, 3), "relative_error": rel},
            environment=torch_environment(torch),
        )

    return guarded("matmul", "bf16_tflops", "TFLOP/s", run)


def run_bandwidth(
    *, size_gib: float = 4.0, iters: int = 20, warmup: int = 3, baseline: float | None = None
) -> SmokeResult:
    def run() -> SmokeResult:
        torch = load_torch()
        count = int(size_gib * 2**30) // 4
        src = torch.rand(count, device="cuda", dtype=torch.float32)
        dst = torch.empty_like(src)
        seconds = time_events(torch, lambda: dst.copy_(src), warmup=warmup, iters=iters)
        moved = 2 * count * 4  # every byte is read once and written once
        gbps = moved / seconds / 1e9
        if not torch.equal(dst[-(1 << 20) :], src[-(1 << 20) :]) or not torch.isfinite(dst).all():
            raise SmokeFailed("device copy produced different or non-finite data")
        return SmokeResult(
            name="bandwidth",
            status="passed",
            metric="copy_gb_per_s",
            value=round(gbps, 1),
            unit="GB/s",
            baseline=baseline,
            params={"size_gib": size_gib, "iters": iters, "warmup": warmup},
            extra={"median_ms": round(seconds * 1000, 3), "bytes_moved_per_iter": moved},
            environment=torch_environment(torch),
        )

    return guarded("bandwidth", "copy_gb_per_s", "GB/s", run)
