"""Normalised facts: what the agent knows about a node, whichever tool told it.

Every parser returns a (partial) `Facts`; `merge` folds them together. A field left None means
"no tool reported it" — checks treat that as unknown, never as zero.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class GpuFacts:
    index: int | None = None
    bdf: str | None = None  # PCI address, normalised to `dddd:bb:dd.f`, lower case
    vendor: str | None = None  # "amd" | "nvidia"
    model: str | None = None
    uuid: str | None = None
    gfx_target: str | None = None  # AMD ISA, e.g. gfx942
    compute_capability: str | None = None  # NVIDIA, e.g. 9.0
    compute_units: int | None = None  # CUs (AMD) or SMs (NVIDIA)
    vram_total_mib: float | None = None
    vram_used_mib: float | None = None
    temperature_edge_c: float | None = None
    temperature_hotspot_c: float | None = None  # AMD junction/hotspot; NVIDIA's GPU temperature
    temperature_memory_c: float | None = None
    power_draw_w: float | None = None
    power_cap_w: float | None = None  # the limit in force now
    power_max_cap_w: float | None = None  # the highest limit the board allows
    pcie_gen: int | None = None
    pcie_width: int | None = None
    pcie_max_gen: int | None = None
    pcie_max_width: int | None = None
    ecc_correctable: int | None = None
    ecc_uncorrectable: int | None = None
    ecc_deferred: int | None = None
    retired_pages: int | None = None
    pending_retired_pages: int | None = None
    utilisation_pct: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    compute_partition: str | None = None  # SPX / DPX / QPX / CPX
    memory_partition: str | None = None  # NPS1 / NPS4
    virtual_function: bool | None = None  # SR-IOV guest ("MI300X VF")
    throttle_reasons: list[str] = field(default_factory=list)
    unreservable_pages: int | None = None  # AMD bad pages that could not be retired
    row_remap_failure: bool | None = None  # NVIDIA: a row remap failed (the GPU needs replacing)

    def merge(self, other: GpuFacts) -> None:
        """Fill this GPU's unknown fields from `other`; known values win (first source rules)."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name == "throttle_reasons":
                self.throttle_reasons = sorted(set(mine) | set(theirs))
            elif mine is None and theirs is not None:
                setattr(self, f.name, theirs)


@dataclass
class PcieLink:
    bdf: str | None = None
    description: str | None = None
    speed_gts: float | None = None
    gen: int | None = None
    width: int | None = None
    max_speed_gts: float | None = None
    max_width: int | None = None
    downgraded: bool | None = None  # pciutils >= 3.11 annotates `(downgraded)`
    fatal_error: bool | None = None  # DevSta `FatalErr+`
    kernel_driver: str | None = None


@dataclass
class DeviceNode:
    path: str
    exists: bool
    accessible: bool | None = None  # read+write for the agent's user
    mode: str | None = None
    group: str | None = None


@dataclass
class Diagnostic:
    tool: str  # "rvs" | "dcgmi"
    test: str
    result: str  # "pass" | "fail" | "skip" | other, lower case
    detail: str | None = None


@dataclass
class ParseProblem:
    """Output a parser could not read: which tool, the first line it did not know, and why.

    A parser never crashes and never drops an unknown shape silently; it returns what it could
    read plus one of these, and the `parse` check turns it into a finding.
    """

    tool: str  # parser name, e.g. "amd-smi-monitor"
    reason: str
    line: str | None = None  # the first line the parser did not recognise (trimmed)
    line_number: int | None = None  # 1-based, in the output as the tool printed it
    unknown_lines: int = 0  # how many lines were not recognised


@dataclass
class InterconnectLink:
    """One GPU-to-GPU link (AMD XGMI, NVIDIA NVLink) as the vendor tool reports it."""

    kind: str  # "xgmi" | "nvlink"
    gpu: int | None = None
    link: int | None = None  # port / link number on that GPU (the peer GPU in a per-peer table)
    state: str | None = None  # "up" | "down" | "disabled" | "unknown"
    bit_rate_gbps: float | None = None  # per lane (XGMI) or per link (NVLink, GB/s)
    max_bandwidth_gbps: float | None = None
    width: int | None = None  # lanes, when the tool says (max_bandwidth / bit_rate)
    errors: int | None = None


@dataclass
class GpuProcess:
    """A process holding a GPU context (nvidia-smi `<processes>` / `--query-compute-apps`)."""

    pid: int
    name: str | None = None
    gpu: int | None = None  # index, when the tool says which GPU
    gpu_uuid: str | None = None
    bdf: str | None = None
    used_memory_mib: float | None = None
    type: str | None = None  # nvidia-smi: C (compute), G (graphics), C+G
    own: bool | None = None  # the agent itself (set by the live collector, never by a parser)


@dataclass
class Facts:
    gpus: list[GpuFacts] = field(default_factory=list)
    driver_name: str | None = None
    driver_version: str | None = None
    driver_loaded: bool | None = None
    rocm_version: str | None = None
    cuda_version: str | None = None
    tool_versions: dict[str, str] = field(default_factory=dict)
    platform: str | None = None  # "Linux Guest" in an SR-IOV VM
    kernel_release: str | None = None
    kernel_modules: list[str] | None = None  # GPU-related modules loaded (amdgpu, nvidia…)
    pcie_links: list[PcieLink] = field(default_factory=list)
    device_nodes: list[DeviceNode] = field(default_factory=list)
    kernel_log_errors: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    interconnect: list[InterconnectLink] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)  # deep-check numbers
    gpu_processes: list[GpuProcess] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # source → ok | missing | error: …
    parse_problems: list[ParseProblem] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        pruned: dict[str, Any] = _prune(asdict(self))
        return pruned


def _prune(value: Any) -> Any:
    """Drop None and empty containers so `parse` output shows only what a tool said."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def normalise_bdf(bdf: str | None) -> str | None:
    """`00000000:00:06.0` (NVIDIA), `0000:2F:00.0`, `83:00.0` → `0000:83:00.0` form."""
    if not bdf:
        return None
    text = bdf.strip().lower()
    parts = text.split(":")
    if len(parts) == 2:
        parts = ["0000", *parts]
    if len(parts) != 3:
        return text
    domain = parts[0][-4:].rjust(4, "0")
    return f"{domain}:{parts[1].rjust(2, '0')}:{parts[2]}"


def merge(parts: list[Facts]) -> Facts:
    """Fold partial facts together; GPUs match by PCI address, else by index, else by order."""
    out = Facts()
    for part in parts:
        for gpu in part.gpus:
            target = _find_gpu(out.gpus, gpu)
            if target is None:
                out.gpus.append(gpu)
            else:
                target.merge(gpu)
        for f in fields(out):
            if f.name == "gpus":
                continue
            mine, theirs = getattr(out, f.name), getattr(part, f.name)
            if isinstance(mine, list) and f.name != "kernel_modules":
                mine.extend(theirs)
            elif isinstance(mine, dict):
                mine.update({k: v for k, v in theirs.items() if k not in mine})
            elif mine is None and theirs is not None:
                setattr(out, f.name, theirs)
    out.gpus.sort(key=lambda g: (g.index is None, g.index if g.index is not None else 0))
    _attach_links(out)
    return out


def _find_gpu(gpus: list[GpuFacts], gpu: GpuFacts) -> GpuFacts | None:
    if gpu.bdf:
        for known in gpus:
            if known.bdf == gpu.bdf:
                return known
        if any(known.bdf for known in gpus):
            # Both sides know addresses and none matched: a different device.
            candidates = [k for k in gpus if k.bdf is None and k.index == gpu.index]
            return candidates[0] if candidates and gpu.index is not None else None
    if gpu.index is not None:
        for known in gpus:
            if known.index == gpu.index and (known.bdf is None or gpu.bdf is None):
                return known
    return None


def _attach_links(facts: Facts) -> None:
    """Copy lspci's link status onto GPUs that no GPU tool gave one (matched by PCI address)."""
    by_bdf = {link.bdf: link for link in facts.pcie_links if link.bdf}
    for gpu in facts.gpus:
        link = by_bdf.get(gpu.bdf) if gpu.bdf else None
        if link is None:
            continue
        gpu.pcie_gen = gpu.pcie_gen if gpu.pcie_gen is not None else link.gen
        gpu.pcie_width = gpu.pcie_width if gpu.pcie_width is not None else link.width
