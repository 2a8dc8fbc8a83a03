"""Instance profiles: what a node of each type must look like (LabGPU's docs/gpu-facts.md).

Baselines are smoke-test throughputs, keyed `"<smoke>:<metric>"`. The H200 ones were measured
by this agent on a real H200 (docs/benchmarks.md); the others are leads from vendor figures and
are marked as such in `baseline_source` until a passing node of that type replaces them (the
backend keeps a rolling median per instance type).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class InstanceProfile:
    name: str
    vendor: str  # "amd" | "nvidia"
    model_pattern: str  # regex matched (case-insensitive) against the reported GPU name
    gpu_count: int
    vram_gib: float  # nominal per GPU; the check allows 10 % for reserved memory
    board_power_w: float
    compute_units: int | None = None  # per full (SPX) GPU: CUs, or SMs on NVIDIA
    gfx_target: str | None = None
    compute_capability: str | None = None
    min_rocm: str | None = None
    min_pcie_gen: int = 5
    min_pcie_width: int = 16
    max_hotspot_c: float = 85.0  # AMD's acceptance threshold; NVIDIA's slowdown is higher
    # HBM: JEDEC's normal DRAM range ends at 85 °C, the extended range (double refresh) at 95 °C.
    max_memory_c: float = 95.0
    hbm_bandwidth_gb_s: float = 0.0  # vendor peak per GPU (docs/gpu-facts.md), for --deep
    pcie_gb_s: float = 64.0  # PCIe Gen5 x16, one direction
    nvlinks_per_gpu: int = 0  # NVLinks each GPU of a multi-GPU node must have up (SXM: 18)
    p2p_gb_s: float = 0.0  # one GPU to one peer, one direction (docs/gpu-facts.md), for --deep
    # Smoke metric → (warn below, fail below) as fractions of the baseline; metrics not listed use
    # checks.WARN_BELOW_BASELINE / FAIL_BELOW_BASELINE. Wider bands where run-to-run spread is wider
    # (docs/benchmarks.md measures it per metric).
    baseline_bands: dict[str, tuple[float, float]] = field(default_factory=dict)
    baselines: dict[str, float] = field(default_factory=dict)
    baseline_source: str = ""
    # `check --deep`: what a healthy GPU of this model measured in the vendor's published
    # validation runs, per metric of parsers/deep.py (docs/gpu-facts.md, "Deep-check references",
    # names each source). Metrics not listed are judged against the data-sheet peaks above.
    deep_references: dict[str, float] = field(default_factory=dict)


# AMD's published RVS runs (docs/gpu-facts.md): 8x MI300X in ROCm/system-acceptance-docs
# docs/common/system-validation.md (BabelStream row of its benchmark table, mem's "about ~2TB/s",
# pebb d2h and pbqt samples); 8x MI355X in the RVS user guide docs/ug1main.md (babel, mem, pebb
# h2d, pbqt samples). GB/s per GPU, or per GPU pair for p2p.
MI300X_DEEP_REFERENCES = {
    "memory_copy_gb_per_s": 4177.3,
    "memory_mul_gb_per_s": 4067.1,
    "memory_add_gb_per_s": 3920.9,
    "memory_triad_gb_per_s": 3885.3,
    "memory_dot_gb_per_s": 3660.8,
    "memory_stress_gb_per_s": 2000.0,
    "pcie_d2h_gb_per_s": 56.3,
    "p2p_unidir_gb_per_s": 48.9,
}
MI355X_DEEP_REFERENCES = {
    "memory_read_gb_per_s": 7090.2,
    "memory_write_gb_per_s": 6645.7,
    "memory_copy_gb_per_s": 6224.5,
    "memory_mul_gb_per_s": 6238.7,
    "memory_add_gb_per_s": 6008.7,
    "memory_triad_gb_per_s": 6031.4,
    "memory_dot_gb_per_s": 5844.5,
    "memory_stress_gb_per_s": 6443.4,
    "pcie_h2d_gb_per_s": 57.7,
    "p2p_unidir_gb_per_s": 61.4,
}

_AMD_NOTE = "estimate from vendor peak figures; replace with the rolling median of passing nodes"

PROFILES: dict[str, InstanceProfile] = {
    p.name: p
    for p in (
        InstanceProfile(
            name="mi300x",
            p2p_gb_s=64.0,
            hbm_bandwidth_gb_s=5300,
            vendor="amd",
            model_pattern=r"MI300X",
            gpu_count=1,
            vram_gib=192,
            board_power_w=750,
            compute_units=304,
            gfx_target="gfx942",
            min_rocm="6.0",
            deep_references=MI300X_DEEP_REFERENCES,
            baselines={"matmul:bf16_tflops": 600.0, "bandwidth:copy_gb_per_s": 4000.0},
            baseline_source=_AMD_NOTE,
        ),
        InstanceProfile(
            name="mi325x",
            p2p_gb_s=64.0,
            hbm_bandwidth_gb_s=6000,
            vendor="amd",
            model_pattern=r"MI325X",
            gpu_count=1,
            vram_gib=256,
            board_power_w=1000,
            compute_units=304,
            gfx_target="gfx942",
            min_rocm="6.3",
            baselines={"matmul:bf16_tflops": 600.0, "bandwidth:copy_gb_per_s": 4500.0},
            baseline_source=_AMD_NOTE,
        ),
        InstanceProfile(
            name="mi350x",
            p2p_gb_s=76.8,
            hbm_bandwidth_gb_s=8000,
            vendor="amd",
            model_pattern=r"MI350X",
            gpu_count=1,
            vram_gib=288,
            board_power_w=1000,
            compute_units=256,
            gfx_target="gfx950",
            min_rocm="7.0",
            baselines={"matmul:bf16_tflops": 1100.0, "bandwidth:copy_gb_per_s": 6000.0},
            baseline_source=_AMD_NOTE,
        ),
        InstanceProfile(
            name="mi355x",
            p2p_gb_s=76.8,
            hbm_bandwidth_gb_s=8000,
            vendor="amd",
            model_pattern=r"MI355X",
            gpu_count=1,
            vram_gib=288,
            board_power_w=1400,
            compute_units=256,
            gfx_target="gfx950",
            min_rocm="7.0",
            deep_references=MI355X_DEEP_REFERENCES,
            baselines={"matmul:bf16_tflops": 1200.0, "bandwidth:copy_gb_per_s": 6000.0},
            baseline_source=_AMD_NOTE,
        ),
        InstanceProfile(
            name="h100",
            p2p_gb_s=450.0,
            hbm_bandwidth_gb_s=3350,
            vendor="nvidia",
            model_pattern=r"H100",
            gpu_count=1,
            vram_gib=80,
            board_power_w=700,
            compute_units=132,
            compute_capability="9.0",
            nvlinks_per_gpu=18,
            baselines={"matmul:bf16_tflops": 700.0, "bandwidth:copy_gb_per_s": 2900.0},
            baseline_source="matmul from the H200 measurement (same SMs); bandwidth scaled by "
            "HBM3 3.35 vs HBM3e 4.8 TB/s",
        ),
        InstanceProfile(
            name="h200",
            p2p_gb_s=450.0,
            hbm_bandwidth_gb_s=4800,
            vendor="nvidia",
            model_pattern=r"H200",
            gpu_count=1,
            vram_gib=141,
            board_power_w=700,
            compute_units=132,
            compute_capability="9.0",
            nvlinks_per_gpu=18,
            # What this agent measured on one H200 (issues 12 and 23, docs/benchmarks.md,
            # agent/tests/fixtures/h200/run1…run8). LLM decode replays a CUDA graph per token
            # (smoke/llm.py StaticDecoder), attention per KV head (GqaDecodeAttention, issue 27:
            # batch 1 134.3-135.5, batch 128 9,160-9,173 tokens/s in run8/gate-1…3.json; before
            # it 130 and 3,695), and reports the median of its timed calls.
            baselines={
                "matmul:bf16_tflops": 790.0,
                "bandwidth:copy_gb_per_s": 4300.0,
                "sdxl:images_per_s": 1.30,
                "llm:tokens_per_s_batch1": 135.0,
                "llm:tokens_per_s_batch128": 9150.0,
                # check --deep: bf16 8192³ products back to back, held at the 700 W cap (about
                # 1.45 GHz): 666.6-667.3 TFLOP/s over three 45 s burns (run7/deep-1…3.json).
                "deep:burn_bf16_tflops": 665.0,
            },
            # Run-to-run spread between processes, as a fraction of the baseline: matmul
            # 0.92-1.03, bandwidth 0.99-1.00, SDXL 1.00 (±0.3 %) keep the default 85 % / 50 %;
            # graph-replayed decode repeats within ±1.5 % inside a process and its median within
            # 0.995-1.007 between four processes (batch 1), so a 10 % loss warns and a 25 % loss
            # fails: a healthy H200 is 8 spreads above the warn line, a 30 % slowdown below fail.
            baseline_bands={
                "llm:tokens_per_s_batch1": (0.90, 0.75),
                "llm:tokens_per_s_batch128": (0.90, 0.75),
                # Eager `generate` (--mode generate, and reports from before issue 23) is bound
                # by the host launching kernels and moved 0.68-1.34 between processes.
                "llm-generate:tokens_per_s_batch1": (0.55, 0.35),
                "llm-generate:tokens_per_s_batch128": (0.55, 0.35),
            },
            baseline_source="measured by this agent on one H200 (issues 12, 23; benchmarks.md)",
        ),
    )
}

# DigitalOcean size slugs: gpu-mi300x1-192gb, gpu-mi300x8-1536gb, gpu-h100x8-640gb …
_SLUG = re.compile(r"^gpu-(?P<model>mi\d{3}x|h\d{3})x?(?P<count>\d+)-")


class UnknownProfile(KeyError):
    pass


def get_profile(name: str) -> InstanceProfile:
    """`h200`, `mi300x:8` (eight GPUs) or a DigitalOcean size slug such as `gpu-mi300x8-1536gb`."""
    base, _, count = name.lower().partition(":")
    if slug := _SLUG.match(base):
        base, count = slug.group("model"), slug.group("count")
    try:
        profile = PROFILES[base]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise UnknownProfile(f"unknown profile {name!r}; known: {known}") from None
    return replace(profile, gpu_count=int(count)) if count else profile
