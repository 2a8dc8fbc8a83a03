"""Checks turn facts (and smoke results) into findings against an instance profile.

Each check is a small function returning findings; `run_checks` runs them all. Severity:
`fail` means the node must not be handed to a user, `warn` that it works but not as paid for,
`info` is context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from labgpu_agent.facts import Facts, GpuFacts, GpuProcess, ParseProblem
from labgpu_agent.parsers._text import version_tuple
from labgpu_agent.profiles import InstanceProfile
from labgpu_agent.smoke.base import SmokeResult

SEVERITIES = ("info", "warn", "fail")
_PARTITIONS = {"SPX": 1, "DPX": 2, "TPX": 3, "QPX": 4, "CPX": 8}
WARN_BELOW_BASELINE = 0.85  # fraction of the baseline under which throughput is a warning
FAIL_BELOW_BASELINE = 0.5  # … and under which the node is failed


@dataclass
class Finding:
    id: str
    severity: str
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    remediation: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict_of(findings: list[Finding]) -> str:
    severities = {f.severity for f in findings}
    return "fail" if "fail" in severities else "warn" if "warn" in severities else "pass"


Check = Callable[[Facts, InstanceProfile], list[Finding]]


def run_checks(
    facts: Facts,
    profile: InstanceProfile,
    smoke: list[SmokeResult] | None = None,
    required_smoke: list[str] | None = None,
    handover: bool = True,
) -> list[Finding]:
    """`handover`: the report decides whether a user gets the node (the gate, `check`); a deep
    check asked for during a booking is not, and the user's own processes are then expected."""
    findings: list[Finding] = []
    mismatch = check_vendor(facts, profile)
    # On the other vendor's GPUs every driver, device-node and ROCm check would misfire
    # ("modprobe amdgpu" on an NVIDIA node): the mismatch alone says what is wrong.
    for check in () if mismatch else CHECKS:
        findings.extend(check(facts, profile))
    findings.extend(mismatch)
    if not mismatch:
        findings.extend(check_in_use(facts, profile, handover=handover))
    findings.extend(check_smoke(smoke or [], profile, required=required_smoke))
    return findings


VENDOR_NAMES = {"amd": "AMD", "nvidia": "NVIDIA"}


def expected_hardware(profile: InstanceProfile) -> str:
    """`8× AMD MI300X`, `NVIDIA H100`: what the pool's type promises, in words."""
    count = f"{profile.gpu_count}× " if profile.gpu_count > 1 else ""
    return f"{count}{VENDOR_NAMES.get(profile.vendor, profile.vendor)} {profile.name.upper()}"


def found_hardware(facts: Facts) -> str:
    """`1× NVIDIA H200`, `7× AMD Instinct MI300X`: what the node has, per model."""
    counts: dict[str, int] = {}
    for gpu in facts.gpus:
        vendor = VENDOR_NAMES.get(gpu.vendor or "", gpu.vendor or "")
        model = gpu.model or "GPU"
        name = model if model.upper().startswith(vendor.upper()) else f"{vendor} {model}".strip()
        counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{n}× {name}" for name, n in counts.items())


def check_vendor(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    other = [g for g in facts.gpus if g.vendor and g.vendor != profile.vendor]
    if not other:
        return []
    return [
        Finding(
            id="gpu.vendor_mismatch",
            severity="fail",
            message=f"{found_hardware(facts)}; this pool expects {expected_hardware(profile)}.",
            evidence={
                "found": [{"index": g.index, "vendor": g.vendor, "model": g.model} for g in other],
                "expected_vendor": profile.vendor,
                "expected_profile": profile.name,
            },
            remediation="The node is not the type the pool books: fix the pool's instance type "
            "(provider size and agent profile) or re-create the node with the right size. Nothing "
            "on the node needs repairing.",
        )
    ]


def _partition_factor(gpu: GpuFacts) -> int:
    return _PARTITIONS.get((gpu.compute_partition or "SPX").upper(), 1)


def _gpu_label(gpu: GpuFacts) -> str:
    return f"GPU {gpu.index}" + (f" ({gpu.bdf})" if gpu.bdf else "")


# Memory a GPU may show used with nobody on it: an H200 at rest reads 0 MiB, an MI300X VF 285 MiB
# (the recorded fixture profiles); one CUDA context costs about 500 MiB.
IN_USE_FLOOR_MIB = 1024


def _processes_by_gpu(facts: Facts) -> dict[int | None, list[GpuProcess]]:
    """Other processes on each GPU (the agent's own left out), each once although both the XML
    and the compute-apps CSV list it."""
    index_of = {g.bdf: g.index for g in facts.gpus if g.bdf}
    index_of.update({g.uuid: g.index for g in facts.gpus if g.uuid})
    seen: dict[tuple[int, int | None], GpuProcess] = {}
    for proc in facts.gpu_processes:
        if proc.own:
            continue
        gpu = proc.gpu
        if gpu is None:
            gpu = index_of.get(proc.bdf) if proc.bdf else None
        if gpu is None and proc.gpu_uuid:
            gpu = index_of.get(proc.gpu_uuid)
        known = seen.setdefault((proc.pid, gpu), proc)
        if known.used_memory_mib is None:
            known.used_memory_mib = proc.used_memory_mib
        known.name = known.name or proc.name
    grouped: dict[int | None, list[GpuProcess]] = {}
    for (_, gpu), proc in seen.items():
        grouped.setdefault(gpu, []).append(proc)
    return grouped


def _own_memory_mib(facts: Facts, gpu: GpuFacts) -> float:
    return max(
        (
            p.used_memory_mib or 0.0
            for p in facts.gpu_processes
            if p.own and (p.gpu == gpu.index or (p.bdf and p.bdf == gpu.bdf))
        ),
        default=0.0,
    )


def check_in_use(facts: Facts, profile: InstanceProfile, *, handover: bool = True) -> list[Finding]:
    """A GPU someone else holds (memory above the floor, or a process on it) is not healthy."""
    findings: list[Finding] = []
    lister = (
        "`nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv`"
        if profile.vendor == "nvidia"
        else "`amd-smi process`"
    )
    processes = _processes_by_gpu(facts)
    for gpu in facts.gpus:
        procs = processes.get(gpu.index, [])
        used = (gpu.vram_used_mib or 0.0) - _own_memory_mib(facts, gpu)
        if used <= IN_USE_FLOOR_MIB and not procs:
            continue
        named = ", ".join(
            f"{p.name or '?'} (pid {p.pid}"
            + (f", {p.used_memory_mib:,.0f} MiB" if p.used_memory_mib is not None else "")
            + ")"
            for p in procs
        )
        findings.append(
            Finding(
                id="gpu.in_use",
                severity="fail" if handover else "info",
                message=f"{_gpu_label(gpu)} is already in use: {used:,.0f} MiB of its memory "
                "is taken"
                + (f" by {named}" if named else " (no process listed: another container or VM)")
                + (
                    f"; utilisation {gpu.utilisation_pct:.0f} %"
                    if gpu.utilisation_pct is not None
                    else ""
                )
                + ".",
                evidence={
                    "gpu": gpu.index,
                    "vram_used_mib": gpu.vram_used_mib,
                    "floor_mib": IN_USE_FLOOR_MIB,
                    "utilisation_pct": gpu.utilisation_pct,
                    "processes": [asdict(p) for p in procs],
                },
                remediation=f"Someone else holds this GPU before its user has logged in. List "
                f"the holders ({lister}), stop them or re-create the node; a held GPU must not be "
                "handed over.",
            )
        )
    stray = [p for gpu, procs in processes.items() if gpu is None for p in procs]
    if stray and not findings:
        findings.append(
            Finding(
                id="gpu.in_use",
                severity="fail" if handover else "info",
                message="Processes hold a GPU before its user has logged in: "
                + ", ".join(f"{p.name or '?'} (pid {p.pid})" for p in stray)
                + ".",
                evidence={"processes": [asdict(p) for p in stray]},
                remediation=f"Stop them ({lister} lists them) or re-create the node.",
            )
        )
    return findings


def check_driver(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    if facts.gpus and facts.driver_loaded is not False:
        return []
    if profile.vendor == "amd":
        kernel = facts.kernel_release or "unknown"
        remediation = (
            f"Check the kernel is 5.15 or newer (running {kernel}); load the driver with "
            "`sudo modprobe amdgpu` and read `dmesg | grep -i amdgpu` for firmware or probe "
            "errors; install the amdgpu-dkms package matching the ROCm release; make sure "
            "/dev/kfd and /dev/dri/renderD* exist and the user is in the `render` and `video` "
            "groups."
        )
    else:
        remediation = (
            "Load the driver with `sudo modprobe nvidia`, check `dmesg | grep -i nvrm`, and "
            "install the NVIDIA driver matching the kernel (DKMS) if the module is missing."
        )
    return [
        Finding(
            id="driver.not_loaded",
            severity="fail",
            message=f"No {profile.vendor.upper()} GPU driver is loaded: no GPU could be listed.",
            evidence={
                "kernel_modules": facts.kernel_modules,
                "sources": facts.sources,
                "gpus_found": len(facts.gpus),
            },
            remediation=remediation,
        )
    ]


def check_kernel(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    release = version_tuple(facts.kernel_release)
    if profile.vendor != "amd" or release is None or release >= (5, 15):
        return []
    return [
        Finding(
            id="kernel.too_old",
            severity="fail",
            message=f"Kernel {facts.kernel_release} is older than 5.15, the oldest amdgpu supports "
            "for Instinct GPUs.",
            evidence={"kernel_release": facts.kernel_release},
            remediation="Boot a supported kernel (Ubuntu 22.04/24.04 GA or HWE kernel).",
        )
    ]


def check_inventory(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    if not facts.gpus:
        return []
    findings: list[Finding] = []
    factor = max(_partition_factor(g) for g in facts.gpus)
    expected = profile.gpu_count * factor
    if len(facts.gpus) != expected:
        partitioned = f" ({profile.gpu_count} GPUs × {factor} partitions)" if factor > 1 else ""
        findings.append(
            Finding(
                id="gpu.count",
                severity="fail",
                message=f"Found {len(facts.gpus)} of {expected} GPUs{partitioned}: "
                f"{found_hardware(facts)}; this pool expects {expected_hardware(profile)}.",
                evidence={
                    "found": len(facts.gpus),
                    "expected": expected,
                    "bdfs": [g.bdf for g in facts.gpus],
                },
                remediation="Check `lspci` for missing devices and `dmesg` for probe errors; a "
                "missing GPU usually needs the provider to replace the node.",
            )
        )
    for gpu in facts.gpus:
        findings.extend(_check_one_gpu(gpu, profile))
    return findings


def _check_one_gpu(gpu: GpuFacts, profile: InstanceProfile) -> list[Finding]:
    findings: list[Finding] = []
    label = _gpu_label(gpu)
    if gpu.model and not re.search(profile.model_pattern, gpu.model, re.IGNORECASE):
        findings.append(
            Finding(
                id="gpu.model",
                severity="fail",
                message=(
                    f"{label} is a {gpu.model}, not the {profile.name.upper()} this type promises."
                ),
                evidence={"gpu": gpu.index, "model": gpu.model, "expected": profile.model_pattern},
                remediation="Re-create the node with the right size, or fix the instance type.",
            )
        )
    if profile.gfx_target and gpu.gfx_target and gpu.gfx_target != profile.gfx_target:
        findings.append(
            Finding(
                id="gpu.gfx_target",
                severity="fail",
                message=(
                    f"{label} reports {gpu.gfx_target}; {profile.name} is {profile.gfx_target}."
                ),
                evidence={
                    "gpu": gpu.index,
                    "gfx_target": gpu.gfx_target,
                    "expected": profile.gfx_target,
                },
                remediation="Check that the ROCm release supports this GPU and that no "
                "HSA_OVERRIDE_GFX_VERSION is set.",
            )
        )
    if (
        profile.compute_capability
        and gpu.compute_capability
        and gpu.compute_capability != profile.compute_capability
    ):
        findings.append(
            Finding(
                id="gpu.compute_capability",
                severity="fail",
                message=f"{label} has compute capability {gpu.compute_capability}, expected "
                f"{profile.compute_capability}.",
                evidence={"gpu": gpu.index, "compute_capability": gpu.compute_capability},
                remediation="The node carries another GPU generation; re-create it.",
            )
        )
    factor = _partition_factor(gpu)
    if profile.compute_units and gpu.compute_units is not None and gpu.vendor == profile.vendor:
        expected_cu = profile.compute_units // factor
        if gpu.compute_units < expected_cu:
            findings.append(
                Finding(
                    id="gpu.compute_units",
                    severity="warn",
                    message=f"{label} exposes {gpu.compute_units} compute units, expected "
                    f"{expected_cu}.",
                    evidence={
                        "gpu": gpu.index,
                        "compute_units": gpu.compute_units,
                        "expected": expected_cu,
                        "partition": gpu.compute_partition,
                    },
                    remediation="Check the compute partition mode (`amd-smi static --partition`)."
                    if profile.vendor == "amd"
                    else "Check MIG mode (`nvidia-smi -q -d MIG`): a MIG instance exposes only "
                    "part of the SMs; disable MIG for a whole-GPU pool.",
                )
            )
    if gpu.vram_total_mib is not None:
        # A partitioned card (CPX/DPX…) shows each logical GPU with its share of the memory, or,
        # in NPS1, the whole of it: the share is the lower bound either way. 10 % is reserved.
        expected_mib = profile.vram_gib * 1024 * 0.9 / factor
        if gpu.vram_total_mib < expected_mib:
            share = f" (1/{factor} of {profile.vram_gib:.0f} GB)" if factor > 1 else ""
            findings.append(
                Finding(
                    id="gpu.vram",
                    severity="fail",
                    message=f"{label} has {gpu.vram_total_mib / 1024:.0f} GiB of memory; "
                    f"expected at least {expected_mib / 1024:.0f} GiB{share} for {profile.name}.",
                    evidence={
                        "gpu": gpu.index,
                        "vram_total_mib": gpu.vram_total_mib,
                        "expected_min_mib": round(expected_mib),
                        "compute_partition": gpu.compute_partition,
                        "memory_partition": gpu.memory_partition,
                    },
                    remediation=(
                        "Check the partition modes (`amd-smi static --partition`; NPS4 splits "
                        "memory per quarter) and reset them to the pool's mode"
                        if profile.vendor == "amd"
                        else "Check MIG mode (`nvidia-smi -q -d MIG`; a MIG instance has a slice "
                        "of the memory) and disable it for a whole-GPU pool"
                    )
                    + ", or replace the node if the memory is missing.",
                )
            )
    return findings


def check_rocm(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    if profile.vendor != "amd" or not profile.min_rocm:
        return []
    found = version_tuple(facts.rocm_version)
    required = version_tuple(profile.min_rocm)
    if found is None:
        return (
            [
                Finding(
                    id="rocm.version_unknown",
                    severity="warn",
                    message=f"Could not read the ROCm version; {profile.name.upper()} needs ROCm "
                    f"{profile.min_rocm} or newer, so the stack cannot be vouched for.",
                    evidence={"rocm_version": facts.rocm_version, "required": profile.min_rocm},
                    remediation="Install amd-smi (ROCm 6+) or make /opt/rocm/.info/version "
                    "readable so the agent can read the version.",
                )
            ]
            if facts.gpus
            else []
        )
    if required is not None and found < required:
        return [
            Finding(
                id="rocm.too_old",
                severity="fail",
                message=(
                    f"ROCm {facts.rocm_version} is too old for {profile.name.upper()}; "
                    "it needs "
                    f"ROCm {profile.min_rocm} or newer."
                ),
                evidence={"rocm_version": facts.rocm_version, "required": profile.min_rocm},
                remediation=(
                    f"Install ROCm {profile.min_rocm}+ and the matching amdgpu-dkms driver."
                ),
            )
        ]
    return []


def _gfx_from_override(value: str) -> str | None:
    parts = value.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    major, minor, step = (int(p) for p in parts)
    return f"gfx{major}{minor}{step:x}"


def check_environment(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    findings: list[Finding] = []
    override = facts.environment.get("HSA_OVERRIDE_GFX_VERSION")
    if override is not None and profile.vendor == "amd":
        implied = _gfx_from_override(override)
        actual = {g.gfx_target for g in facts.gpus if g.gfx_target} or {profile.gfx_target or "?"}
        harmful = implied not in actual
        findings.append(
            Finding(
                id="env.hsa_override_gfx_version",
                severity="fail" if harmful else "info",
                message=(
                    f"HSA_OVERRIDE_GFX_VERSION={override} makes ROCm treat the GPU as "
                    f"{implied or 'an invalid target'}, but it is "
                    f"{', '.join(sorted(map(str, actual)))}: "
                    "kernels built for the wrong ISA fail or run wrongly."
                    if harmful
                    else f"HSA_OVERRIDE_GFX_VERSION={override} matches the GPU; it is unnecessary."
                ),
                evidence={"HSA_OVERRIDE_GFX_VERSION": override, "implied_target": implied},
                remediation=(
                    "Unset HSA_OVERRIDE_GFX_VERSION (it is a workaround for "
                    "consumer cards; "
                    "Instinct GPUs are supported natively)."
                ),
            )
        )
    if "HSA_OVERRIDE_THERMAL_LIMIT" in facts.environment:
        findings.append(
            Finding(
                id="env.unknown_variable",
                severity="info",
                message="HSA_OVERRIDE_THERMAL_LIMIT is set, but no such ROCm variable exists.",
                evidence={
                    "HSA_OVERRIDE_THERMAL_LIMIT": facts.environment["HSA_OVERRIDE_THERMAL_LIMIT"]
                },
                remediation="Remove it; thermal limits are firmware settings.",
            )
        )
    return findings


def _required_device_nodes(facts: Facts, profile: InstanceProfile) -> list[str]:
    """Paths that must exist: the compute node plus one per-GPU node, missing ones listed."""
    present = {n.path for n in facts.device_nodes if n.exists}
    missing = []
    if profile.vendor == "amd":
        if "/dev/kfd" not in present:
            missing.append("/dev/kfd")
        if not any(re.fullmatch(r"/dev/dri/renderD\d+", p) for p in present):
            missing.append("/dev/dri/renderD*")
    else:
        if "/dev/nvidiactl" not in present:
            missing.append("/dev/nvidiactl")
        if not any(re.fullmatch(r"/dev/nvidia\d+", p) for p in present):
            missing.append("/dev/nvidia0")
    return missing


def check_device_nodes(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    amd = profile.vendor == "amd"
    remediation = (
        "Load the driver (`sudo modprobe amdgpu`; /dev/kfd and /dev/dri/renderD* appear with "
        "it), then add the user to the `render` and `video` groups (`sudo usermod -aG "
        "render,video $USER`, then log in again)."
        if amd
        else "Load the NVIDIA driver (`sudo modprobe nvidia`; `nvidia-modprobe` creates "
        "/dev/nvidia*) and make /dev/nvidia* mode 0666."
    )
    if facts.sources.get("devices") != "ok" and not facts.device_nodes:
        return [
            Finding(
                id="devices.unknown",
                severity="warn",
                message="The GPU device nodes could not be listed, so their presence and "
                "permissions are unknown.",
                evidence={"source": facts.sources.get("devices", "not collected")},
                remediation=(
                    "Make `ls -l /dev/kfd /dev/dri` work for the agent; "
                    if amd
                    else "Make `ls -l /dev/nvidiactl /dev/nvidia0` work for the agent; "
                )
                + remediation[0].lower()
                + remediation[1:],
            )
        ]
    prefixes = ("/dev/kfd", "/dev/dri") if amd else ("/dev/nvidia",)
    ours = [n for n in facts.device_nodes if n.path.startswith(prefixes)]
    bad = sorted({n.path for n in ours if n.exists and n.accessible is False})
    missing = sorted(
        set(_required_device_nodes(facts, profile)) | {n.path for n in ours if not n.exists}
    )
    findings = []
    if missing:
        findings.append(
            Finding(
                id="devices.missing",
                severity="fail",
                message="GPU device nodes are missing: " + ", ".join(missing) + ".",
                evidence={"missing": missing, "listed": [n.path for n in ours if n.exists]},
                remediation=remediation,
            )
        )
    if bad:
        findings.append(
            Finding(
                id="devices.inaccessible",
                severity="fail",
                message="GPU device nodes are not readable and writable by the agent's user: "
                + ", ".join(bad)
                + ".",
                evidence={"nodes": [asdict(n) for n in ours if n.path in bad]},
                remediation=remediation,
            )
        )
    return findings


def check_pcie(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    findings: list[Finding] = []
    links = [
        (g.index, g.bdf, g.pcie_gen, g.pcie_width, bool(g.virtual_function))
        for g in facts.gpus
        if g.pcie_width is not None or g.pcie_gen is not None
    ]
    if not links:
        # Only lspci saw links (GPU tools gave none): judge those.
        links = [
            (None, lk.bdf, lk.gen, lk.width, False)
            for lk in facts.pcie_links
            if lk.width is not None
        ]
    virtual = any(g.virtual_function for g in facts.gpus) or facts.platform == "Linux Guest"
    for index, bdf, gen, width, vf in links:
        # An SR-IOV guest sees a virtual link that may not be the physical one: warn, never fail.
        narrow_severity = "warn" if (vf or virtual) else "fail"
        where = f"GPU {index}" if index is not None else f"device {bdf or '?'}"
        if width is not None and width < profile.min_pcie_width:
            findings.append(
                Finding(
                    id="pcie.link_narrow",
                    severity=narrow_severity,
                    message=f"{where} PCIe link is x{width}, expected x{profile.min_pcie_width}.",
                    evidence={"gpu": index, "bdf": bdf, "width": width, "gen": gen},
                    remediation=(
                        "Reseat the card or riser, check the slot; in a VM ask the "
                        "provider "
                        "to check the host link."
                    ),
                )
            )
        if gen is not None and gen < profile.min_pcie_gen:
            findings.append(
                Finding(
                    id="pcie.link_slow",
                    severity="warn",
                    message=(
                        f"{where} PCIe link runs at Gen{gen}, expected Gen{profile.min_pcie_gen}."
                    ),
                    evidence={"gpu": index, "bdf": bdf, "width": width, "gen": gen},
                    remediation="Idle GPUs may drop link speed to save power: re-check under load; "
                    "otherwise check BIOS PCIe settings and the riser.",
                )
            )
    for link in facts.pcie_links:
        if link.downgraded or link.fatal_error:
            findings.append(
                Finding(
                    id="pcie.link_error" if link.fatal_error else "pcie.link_downgraded",
                    severity="fail" if link.fatal_error else "warn",
                    message=f"lspci reports the link of {link.bdf or 'a GPU'} as "
                    + ("having a fatal error (FatalErr+)." if link.fatal_error else "downgraded."),
                    evidence=asdict(link),
                    remediation="Check `dmesg` for AER errors; reseat or replace the card.",
                )
            )
    return findings


def check_power_and_thermal(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    findings: list[Finding] = []
    for gpu in facts.gpus:
        label = _gpu_label(gpu)
        if gpu.power_cap_w is not None and gpu.power_cap_w < 0.95 * profile.board_power_w:
            # Under 95 % of the type's board power warns; under 80 % the node is not what was
            # paid for (a capped MI300X loses throughput roughly in proportion) and fails.
            findings.append(
                Finding(
                    id="power.capped",
                    severity="fail" if gpu.power_cap_w < 0.8 * profile.board_power_w else "warn",
                    message=f"{label} power limit is {gpu.power_cap_w:.0f} W, below the "
                    f"{profile.board_power_w:.0f} W board power of {profile.name}.",
                    evidence={
                        "gpu": gpu.index,
                        "power_cap_w": gpu.power_cap_w,
                        "board_power_w": profile.board_power_w,
                    },
                    remediation="Restore the default power limit ("
                    + (
                        "`sudo amd-smi set --power-cap`"
                        if profile.vendor == "amd"
                        else "`sudo nvidia-smi -pl`"
                    )
                    + f" to {profile.board_power_w:g} W) or ask the provider why it is capped.",
                )
            )
        hotspot = gpu.temperature_hotspot_c
        if hotspot is not None and hotspot >= profile.max_hotspot_c - 5:
            over = hotspot >= profile.max_hotspot_c
            findings.append(
                Finding(
                    id="thermal.over_limit" if over else "thermal.near_limit",
                    severity="fail" if over else "warn",
                    message=(
                        f"{label} is at {hotspot:.0f} °C (limit {profile.max_hotspot_c:.0f} °C)."
                    ),
                    evidence={
                        "gpu": gpu.index,
                        "temperature_hotspot_c": hotspot,
                        "temperature_memory_c": gpu.temperature_memory_c,
                    },
                    remediation="Check fans/airflow and inlet temperature; the GPU will throttle.",
                )
            )
        memory = gpu.temperature_memory_c
        if memory is not None and memory >= profile.max_memory_c - 10:
            over = memory >= profile.max_memory_c
            findings.append(
                Finding(
                    id="thermal.memory_over_limit" if over else "thermal.memory_near_limit",
                    severity="fail" if over else "warn",
                    message=f"{label} memory (HBM) is at {memory:.0f} °C (limit "
                    f"{profile.max_memory_c:.0f} °C).",
                    evidence={
                        "gpu": gpu.index,
                        "temperature_memory_c": memory,
                        "limit_c": profile.max_memory_c,
                    },
                    remediation="Check airflow over the HBM stacks and the inlet temperature; "
                    "hot HBM throttles memory bandwidth and raises its error rate.",
                )
            )
        hardware = [r for r in gpu.throttle_reasons if r.startswith("hw_")]
        software = [r for r in gpu.throttle_reasons if r == "sw_thermal_slowdown"]
        if hardware or software:
            findings.append(
                Finding(
                    id="clocks.hw_slowdown" if hardware else "thermal.throttling",
                    severity="fail" if hardware else "warn",
                    message=f"{label} clocks are being held down: "
                    f"{', '.join(hardware + software)}.",
                    evidence={"gpu": gpu.index, "throttle_reasons": gpu.throttle_reasons},
                    remediation="A hardware slowdown (thermal trip or power brake from the "
                    "board/PSU) on a node at rest is a fault: check cooling, the power supply "
                    "and the BMC's event log; a software thermal slowdown means the GPU is too "
                    "hot.",
                )
            )
    return findings


# Correctable ECC errors since the driver loaded. AMD reports MI300 HBM correctable errors in
# batches (MCA thresholding) and its guidance is to act on every reported error (Linux 6.9
# amd64_edac
# MI300 row-retirement patch), so any count warns; 1,000 means a stack is failing (LabGPU policy).
CORRECTABLE_WARN = 1
CORRECTABLE_FAIL = 1000
# amdgpu's default retirement limit: one bad page per 100 MB of VRAM (RAS_BAD_PAGE_COVER in
# amdgpu_ras.c); past it the driver marks the GPU bad.
BAD_PAGE_COVER_MB = 100


def check_ecc(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    findings: list[Finding] = []
    for gpu in facts.gpus:
        label = _gpu_label(gpu)
        counts = {
            "gpu": gpu.index,
            "ecc_uncorrectable": gpu.ecc_uncorrectable,
            "ecc_correctable": gpu.ecc_correctable,
            "ecc_deferred": gpu.ecc_deferred,
        }
        if gpu.ecc_uncorrectable:
            findings.append(
                Finding(
                    id="ecc.uncorrectable",
                    severity="fail",
                    message=f"{label} has {gpu.ecc_uncorrectable} uncorrectable ECC errors.",
                    evidence=counts,
                    remediation="Drain the node; reset the GPU and re-run; replace it if errors "
                    "return.",
                )
            )
        if gpu.ecc_deferred:
            findings.append(
                Finding(
                    id="ecc.deferred",
                    severity="fail",
                    message=f"{label} has {gpu.ecc_deferred} deferred ECC errors (uncorrectable "
                    "errors the hardware parked instead of raising).",
                    evidence=counts,
                    remediation="Treat as uncorrectable: drain the node, check `amd-smi "
                    "bad-pages` for the rows being retired, reset the GPU; replace it if they "
                    "return.",
                )
            )
        correctable = gpu.ecc_correctable or 0
        if correctable >= CORRECTABLE_WARN:
            failing = correctable >= CORRECTABLE_FAIL
            findings.append(
                Finding(
                    id="ecc.correctable",
                    severity="fail" if failing else "warn",
                    message=f"{label} has {correctable} correctable ECC errors since the driver "
                    f"loaded (warn ≥ {CORRECTABLE_WARN}, fail ≥ {CORRECTABLE_FAIL}).",
                    evidence={**counts, "warn_at": CORRECTABLE_WARN, "fail_at": CORRECTABLE_FAIL},
                    remediation="Watch the count across reports; a rising count means memory "
                    "rows are going bad: retire them (reset) and replace the GPU when it keeps "
                    "growing.",
                )
            )
        findings.extend(_check_pages(gpu, profile, label))
    return findings


def _check_pages(gpu: GpuFacts, profile: InstanceProfile, label: str) -> list[Finding]:
    findings: list[Finding] = []
    if gpu.pending_retired_pages:
        findings.append(
            Finding(
                id="ecc.pending_retirement",
                severity="fail",
                message=f"{label} has {gpu.pending_retired_pages} memory pages or rows waiting "
                "to be retired.",
                evidence={"gpu": gpu.index, "pending": gpu.pending_retired_pages},
                remediation="Reset the GPU (or reboot) so the pending retirement takes effect.",
            )
        )
    if gpu.unreservable_pages:
        findings.append(
            Finding(
                id="ecc.unreservable_pages",
                severity="fail",
                message=f"{label} has {gpu.unreservable_pages} bad pages the driver could not "
                "retire.",
                evidence={"gpu": gpu.index, "unreservable": gpu.unreservable_pages},
                remediation="Bad memory is still in use: drain the node and replace the GPU.",
            )
        )
    if gpu.row_remap_failure:
        findings.append(
            Finding(
                id="ecc.row_remap_failure",
                severity="fail",
                message=f"{label} failed to remap a memory row (no spare rows left).",
                evidence={"gpu": gpu.index, "row_remap_failure": True},
                remediation="The GPU cannot isolate bad memory any more: replace it "
                "(NVIDIA row remapping guide).",
            )
        )
    if gpu.retired_pages:
        limit = int(profile.vram_gib * 1000 / BAD_PAGE_COVER_MB)
        over = gpu.retired_pages >= limit
        findings.append(
            Finding(
                id="ecc.retired_pages",
                severity="fail" if over else "warn",
                message=f"{label} has {gpu.retired_pages} retired pages / remapped rows "
                f"(the driver's limit is about {limit}).",
                evidence={"gpu": gpu.index, "retired_pages": gpu.retired_pages, "limit": limit},
                remediation="Watch the count; replace the GPU when it nears the limit."
                if not over
                else "The GPU is at its retirement limit: replace it.",
            )
        )
    return findings


_SEVERE_LOG = re.compile(r"fallen off the bus|uncorrectable|Fatal", re.IGNORECASE)
_XID = re.compile(r"NVRM: Xid \((?P<where>[^)]*)\): (?P<code>\d+)")
# NVIDIA's Xid catalog: hardware or driver faults that make the node unfit (the rest, such as
# 13/31/43 raised by user programs, warn). 48 DBE, 63/64 row remap/retirement, 74 NVLink,
# 79 off the bus, 92 high single-bit rate, 94/95 contained/uncontained ECC, 119/120 GSP,
# 140 unrecovered ECC.
XID_FAIL = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140})


def check_kernel_log(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    if not facts.kernel_log_errors:
        return []
    findings: list[Finding] = []
    xids: dict[int, list[str]] = {}
    other: list[str] = []
    for line in facts.kernel_log_errors:
        if (xid := _XID.search(line)) is not None:
            xids.setdefault(int(xid.group("code")), []).append(line)
        else:
            other.append(line)
    for code, lines in sorted(xids.items()):
        findings.append(
            Finding(
                id=f"xid.{code}",
                severity="fail" if code in XID_FAIL else "warn",
                message=f"The kernel log has {len(lines)} Xid {code} event(s).",
                evidence={"xid": code, "lines": lines[:10]},
                remediation="Look the Xid up in NVIDIA's Xid catalog; a hardware Xid (48, 63, "
                "64, 74, 79, 92, 94, 95, 119, 120, 140) means draining the node, resetting the "
                "GPU and replacing it if the Xid returns.",
            )
        )
    if other:
        severe = any(_SEVERE_LOG.search(line) for line in other)
        findings.append(
            Finding(
                id="kernel_log.gpu_errors",
                severity="fail" if severe else "warn",
                message=f"The kernel log has {len(other)} GPU error lines.",
                evidence={"lines": other[:20]},
                remediation="Read the lines; a GPU reset, RAS or AER error usually means the "
                "node should be drained and checked.",
            )
        )
    return findings


def check_interconnect(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    """XGMI (AMD) or NVLink (NVIDIA) between the GPUs of a multi-GPU node."""
    if profile.gpu_count < 2:
        return []
    kind = "xgmi" if profile.vendor == "amd" else "nvlink"
    links = [lk for lk in facts.interconnect if lk.kind == kind]
    expected = profile.gpu_count - 1 if kind == "xgmi" else profile.nvlinks_per_gpu
    states = [lk for lk in links if lk.state is not None]
    source = "amd-smi-xgmi" if kind == "xgmi" else "nvidia-smi-nvlink"
    if not states or all(lk.state == "unknown" for lk in states):
        guest = any(g.virtual_function for g in facts.gpus) or facts.platform == "Linux Guest"
        return [
            Finding(
                id=f"{kind}.unknown",
                severity="info" if guest and states else "warn",
                message=f"The {kind.upper()} link state of this {profile.gpu_count}-GPU node "
                "could not be read"
                + (" (a virtual-function guest hides it)." if guest and states else "."),
                evidence={"source": facts.sources.get(source, "not collected")},
                remediation="Run `amd-smi xgmi --link-status` (ROCm 6.4+) on the host"
                if kind == "xgmi"
                else "Run `nvidia-smi nvlink -s`; check the NVIDIA driver and fabric manager.",
            )
        ]
    findings: list[Finding] = []
    by_gpu: dict[int, list[Any]] = {}
    for link in states:
        by_gpu.setdefault(link.gpu if link.gpu is not None else -1, []).append(link)
    short = {
        gpu: sum(1 for lk in group if lk.state == "up")
        for gpu, group in by_gpu.items()
        if expected and sum(1 for lk in group if lk.state == "up") < expected
    }
    if short:
        findings.append(
            Finding(
                id=f"{kind}.links_down",
                severity="fail",
                message=f"{kind.upper()} links are down: "
                + ", ".join(f"GPU {g} has {n} of {expected} up" for g, n in sorted(short.items()))
                + ".",
                evidence={
                    "expected_up_per_gpu": expected,
                    "up": short,
                    "down": [
                        {"gpu": lk.gpu, "link": lk.link} for lk in states if lk.state == "down"
                    ],
                },
                remediation="Reseat the GPUs on the baseboard / check the bridges, reset the GPUs; "
                "a link that stays down needs the provider (multi-GPU jobs fall back to PCIe).",
            )
        )
    narrow = [lk for lk in links if lk.width is not None and lk.width < 16]
    if narrow:
        findings.append(
            Finding(
                id=f"{kind}.link_narrow",
                severity="warn",
                message=f"{kind.upper()} links run narrower than x16: "
                + ", ".join(f"GPU {lk.gpu} x{lk.width}" for lk in narrow)
                + ".",
                evidence={"links": [asdict(lk) for lk in narrow]},
                remediation=(
                    "Check the XGMI link width policy (`amd-smi set --xgmi-plpd`) and reseat"
                    if kind == "xgmi"
                    else "Check `nvidia-smi nvlink -s` and the fabric manager, and reseat"
                )
                + "; a degraded link halves GPU-to-GPU bandwidth.",
            )
        )
    errors = [lk for lk in links if lk.errors]
    if errors:
        findings.append(
            Finding(
                id=f"{kind}.errors",
                severity="fail",
                message=f"{kind.upper()} link errors reported on GPU "
                + ", ".join(sorted({str(lk.gpu) for lk in errors}))
                + ".",
                evidence={"links": [asdict(lk) for lk in errors]},
                remediation=f"Read `dmesg` for {kind.upper()} errors"
                + (" (`nvidia-smi nvlink -e` counts them)" if kind == "nvlink" else "")
                + "; reset the GPUs and re-check; replace the part if errors return.",
            )
        )
    return findings


def check_diagnostics(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    failed = [d for d in facts.diagnostics if d.result == "fail"]
    if not failed:
        return []
    return [
        Finding(
            id="diagnostics.failed",
            severity="fail",
            message=f"{len(failed)} vendor diagnostic tests failed.",
            evidence={"failed": [asdict(d) for d in failed]},
            remediation="Re-run the vendor diagnostic ("
            + ("`rvs`" if profile.vendor == "amd" else "`dcgmi diag -r 2`")
            + ") and replace the GPU if it "
            "fails again.",
        )
    ]


def check_parse(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    """Output a parser could not read becomes a finding: facts from it may be missing.

    One finding per tool, naming the first line the parser did not know, so an unknown shape
    (a new ROCm or driver release) is never silently read as "nothing reported".
    """
    findings: list[Finding] = []
    by_tool: dict[str, list[ParseProblem]] = {}
    for problem in facts.parse_problems:
        by_tool.setdefault(problem.tool, []).append(problem)
    for tool, problems in sorted(by_tool.items()):
        first = problems[0]
        where = f" at line {first.line_number}: {first.line!r}" if first.line is not None else ""
        findings.append(
            Finding(
                id="parse." + re.sub(r"[^a-z0-9_]", "_", tool.lower()),  # the schema's id shape
                severity="warn",
                message=f"Could not read all of the {tool} output ({first.reason}){where}.",
                evidence={
                    "tool": tool,
                    "reason": first.reason,
                    "line": first.line,
                    "line_number": first.line_number,
                    "unknown_lines": sum(p.unknown_lines for p in problems),
                },
                remediation=(
                    f"Facts from {tool} may be missing, so checks that need them cannot pass or "
                    f"fail on them. Save the output, run `labgpu-agent parse {tool} FILE` to see "
                    "what is read, check the tool itself works ("
                    + (
                        "`amd-smi version`, `rocm-smi --version`"
                        if profile.vendor == "amd"
                        else "`nvidia-smi`"
                    )
                    + "), and report the output with the tool "
                    "version so the parser learns the new shape."
                ),
            )
        )
    return findings


# Deep-check floors. Against a model's published reference run (profile.deep_references): under
# 80 % warns, under half fails — BabelStream, PCIe and XGMI copies repeat within a few per cent
# on a healthy node (the published 8-GPU runs spread 1-6 %). Without a reference, as fractions of
# the data-sheet peak: kernels reach about 80 % of the HBM peak and PCIe copies about 80 % of the
# link rate, so half of the peak warns and a quarter fails.
DEEP_REFERENCE_WARN_BELOW = 0.8
DEEP_REFERENCE_FAIL_BELOW = 0.5
DEEP_WARN_BELOW = 0.5
DEEP_FAIL_BELOW = 0.25
IET_POWER_WARN_BELOW = 0.9  # of the action's target power, where RVS gave no verdict


def _measured_on(m: dict[str, Any], facts: Facts) -> str:
    """`GPU 3 (0000:75:00.0)`: the index the tool or the inventory gives, else RVS's gpu_id."""
    index, bdf = m.get("gpu"), m.get("bdf")
    if index is None and bdf:
        index = next((g.index for g in facts.gpus if g.bdf and g.bdf.lower() == bdf), None)
    if index is not None:
        return f"GPU {index}" + (f" ({bdf})" if bdf else "")
    if m.get("gpu_id") is not None:
        return f"the GPU RVS calls {m['gpu_id']}" + (f" ({bdf})" if bdf else "")
    return "a GPU"


def _best_per_gpu(measurements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The highest reading per GPU (and peer) and metric: pebb measures each GPU from every CPU
    socket and iet samples power throughout, and the near socket / the sustained peak is what a
    healthy GPU reaches. Readings naming no GPU (mem) stay one each."""
    best: dict[tuple[Any, ...], dict[str, Any]] = {}
    for n, m in enumerate(measurements):
        if not isinstance(m.get("value"), int | float):
            continue
        who = (m.get("gpu"), m.get("gpu_id"), m.get("bdf"))
        key = (
            (
                m.get("tool"),
                m.get("test"),
                m.get("action"),
                m.get("metric"),
                who,
                m.get("peer_gpu_id"),
            )
            if who != (None, None, None)
            else (n,)
        )
        if key not in best or m["value"] > best[key]["value"]:
            best[key] = m
    return list(best.values())


def check_deep_measurements(facts: Facts, profile: InstanceProfile) -> list[Finding]:
    """Numbers from `check --deep` (RVS, DCGM diag) against the model's published reference run,
    the vendor tool's own target, or the type's data-sheet peak."""
    findings: list[Finding] = []
    for m in _best_per_gpu(facts.measurements):
        metric, value, test = str(m.get("metric", "")), float(m["value"]), m.get("test")
        on = _measured_on(m, facts)
        peer = f" → GPU {m['peer_gpu_id']}" if m.get("peer_gpu_id") is not None else ""
        slug = f"deep.{re.sub(r'[^a-z0-9_]', '_', metric)}"
        target = m.get("target")
        if test == "gst" and isinstance(target, int | float) and target > 0:
            if value < target:
                findings.append(
                    Finding(
                        id=slug,
                        severity="fail",
                        message=f"{on} reached {value / 1000:,.0f} TFLOPS in RVS "
                        f"{m.get('action')}, under its target of {target / 1000:,.0f} TFLOPS.",
                        evidence={**m, "expected": target},
                        remediation="Check the power cap, clocks and temperature findings; re-run "
                        "`rvs -c gst_single.conf` for the model; a GPU that misses its GEMM target "
                        "again goes back to the provider.",
                    )
                )
            continue
        if test == "iet":
            low = isinstance(target, int | float) and value < IET_POWER_WARN_BELOW * target
            if m.get("passed") is False or (m.get("passed") is None and low):
                findings.append(
                    Finding(
                        id=slug,
                        severity="fail" if m.get("passed") is False else "warn",
                        message=f"{on} drew at most {value:g} W in RVS {m.get('action')}"
                        + (f", short of its {target:g} W target" if target else "")
                        + (" (RVS: pass FALSE)." if m.get("passed") is False else "."),
                        evidence={**m, "expected": target},
                        remediation="Check the power cap (`amd-smi static --limit`) and the "
                        "power-delivery and thermal findings; a GPU that cannot hold its target "
                        "power under load goes back to the provider.",
                    )
                )
            continue
        reference = profile.deep_references.get(metric)
        if reference:
            ratio, warn_below, fail_below = (
                value / reference,
                DEEP_REFERENCE_WARN_BELOW,
                DEEP_REFERENCE_FAIL_BELOW,
            )
            what = f"{profile.name} reference run ({reference:g} {m.get('unit')})"
        else:
            if metric.startswith("memory_") and metric not in (
                "memory_dot_gb_per_s",
                "memory_stress_gb_per_s",
            ):
                peak, name = profile.hbm_bandwidth_gb_s, "HBM peak"
            elif metric in ("pcie_h2d_gb_per_s", "pcie_d2h_gb_per_s"):
                peak, name = profile.pcie_gb_s, "PCIe Gen5 x16"
            elif metric == "power_w" and test == "targeted_power":
                peak, name = profile.board_power_w, "board power"
            else:
                continue
            if not peak:
                continue
            ratio, warn_below, fail_below = value / peak, DEEP_WARN_BELOW, DEEP_FAIL_BELOW
            reference, what = peak, f"{profile.name} {name} ({peak:g})"
        if ratio >= warn_below:
            continue
        findings.append(
            Finding(
                id=slug,
                severity="fail" if ratio < fail_below else "warn",
                message=f"{on}{peer}: {m.get('tool')} {test} {metric} is {value:g} "
                f"{m.get('unit')}, {ratio:.0%} of the {what}.",
                evidence={**m, "expected": reference, "fraction": round(ratio, 3)},
                remediation="Re-run `labgpu-agent check --deep`; a GPU that stays far under what "
                "its model reaches has a degraded link, memory or power delivery — drain the node "
                "and have the provider replace the GPU.",
            )
        )
    return findings


# The agent's own deep tests (labgpu_agent.stress). The sustained burn is judged like the matmul
# smoke test, against the type's measured burn rate; a wrong result, a pattern word read back wrong
# or a hardware slowdown under load fails whatever the rates.
BURN_BAND = (0.85, 0.70)


def check_deep_run(run: Any, facts: Facts, profile: InstanceProfile) -> list[Finding]:
    """Judge a `stress.DeepRun` (its measurements are also in `facts.measurements`)."""
    findings: list[Finding] = []
    if run.status == "failed":
        findings.append(
            Finding(
                id="deep.crashed",
                severity="fail",
                message=f"A deep test could not complete: {run.reason}",
                evidence={"reason": run.reason},
                remediation="Read `dmesg` for "
                + ("Xid" if profile.vendor == "nvidia" else "amdgpu")
                + " errors raised during the test; reset the GPU and re-run `labgpu-agent check "
                "--deep`; replace it if it breaks again.",
            )
        )
    max_clock = {g.index: g.sm_clock_max_mhz for g in facts.gpus}
    burn_baseline = profile.baselines.get("deep:burn_bf16_tflops") or profile.baselines.get(
        "matmul:bf16_tflops"
    )
    warn_below, fail_below = profile.baseline_bands.get("deep:burn_bf16_tflops", BURN_BAND)
    for m in run.measurements:
        test, metric, value, gpu = m["test"], m["metric"], m["value"], m["gpu"]
        where = f"GPU {gpu}" + (f" → GPU {m['peer']}" if "peer" in m else "")
        if metric in ("wrong_results", "mismatches") and value:
            what = {
                "burn": f"{value} of {m.get('windows')} burn windows computed a product that "
                f"differs from the first (largest relative error {m.get('max_error', 0):.3g})",
                "hbm": f"{value:,} memory words read back differently from the pattern written "
                f"({m.get('tested_gib')} GiB tested)",
            }.get(test, f"the {test} copy arrived corrupted")
            findings.append(
                Finding(
                    id=f"deep.{test}_wrong",
                    severity="fail",
                    message=f"{where}: {what}.",
                    evidence=m,
                    remediation="The GPU returns wrong data: drain the node, reset the GPU and "
                    "re-run `labgpu-agent check --deep`; replace it if errors return.",
                )
            )
        elif test == "burn" and metric == "bf16_tflops" and burn_baseline:
            ratio = value / burn_baseline
            if ratio < warn_below:
                findings.append(
                    Finding(
                        id="deep.burn_slow",
                        severity="fail" if ratio < fail_below else "warn",
                        message=f"{where} sustained {value:g} TFLOP/s of bf16 products over "
                        f"{m.get('seconds')} s, {ratio:.0%} of the {profile.name} burn baseline "
                        f"{burn_baseline:g} (warn under {warn_below:.0%}, fail under "
                        f"{fail_below:.0%}).",
                        evidence={**m, "baseline": burn_baseline, "fraction": round(ratio, 3)},
                        remediation="Read the clocks, power and temperature sampled during the "
                        "burn (same report); another process on the GPU, a power cap or a "
                        "cooling fault slows it. Re-run; drain the node if it stays slow.",
                    )
                )
        elif test == "burn" and metric == "telemetry_samples":
            reasons = m.get("throttle_reasons") or []
            hardware = [r for r in reasons if r.startswith("hw_")]
            if hardware or "sw_thermal_slowdown" in reasons:
                findings.append(
                    Finding(
                        id="deep.burn_throttled",
                        severity="fail" if hardware else "warn",
                        message=f"{where} clocks were held down during the burn: "
                        f"{', '.join(reasons)}.",
                        evidence=m,
                        remediation="A hardware slowdown under load (thermal trip, power brake) "
                        "is a cooling or power-supply fault: drain the node and check the BMC's "
                        "event log.",
                    )
                )
        elif test == "burn" and metric == "temperature_c_max" and value >= profile.max_hotspot_c:
            findings.append(
                Finding(
                    id="deep.burn_hot",
                    severity="warn",
                    message=f"{where} reached {value:g} °C during the burn (limit "
                    f"{profile.max_hotspot_c:g} °C).",
                    evidence=m,
                    remediation="Check fans, airflow and the inlet temperature; under a long job "
                    "this GPU will throttle.",
                )
            )
        elif test == "burn" and metric == "hbm_temperature_c_max" and value >= profile.max_memory_c:
            findings.append(
                Finding(
                    id="deep.burn_memory_hot",
                    severity="fail",
                    message=f"{where} memory (HBM) reached {value:g} °C during the burn (limit "
                    f"{profile.max_memory_c:g} °C).",
                    evidence=m,
                    remediation="Hot HBM throttles and raises its error rate: check airflow over "
                    "the memory stacks; drain the node if it repeats.",
                )
            )
        elif test == "burn" and metric == "sm_clock_mhz_median" and max_clock.get(gpu):
            top = max_clock[gpu] or 0
            if top and value < 0.5 * top:
                findings.append(
                    Finding(
                        id="deep.burn_clocks_low",
                        severity="warn",
                        message=f"{where} ran its burn at a median {value:g} MHz, under half "
                        f"of its {top:g} MHz maximum.",
                        evidence={**m, "sm_clock_max_mhz": top},
                        remediation="Check the power limit and the throttle reasons; a GPU held "
                        "at low clocks delivers a fraction of what was paid for.",
                    )
                )
        elif test == "p2p" and metric == "p2p_gb_per_s" and profile.p2p_gb_s:
            ratio = value / profile.p2p_gb_s
            if ratio < DEEP_WARN_BELOW:
                findings.append(
                    Finding(
                        id="deep.p2p_slow",
                        severity="fail" if ratio < DEEP_FAIL_BELOW else "warn",
                        message=f"{where} copies at {value:g} GB/s, {ratio:.0%} of the "
                        f"{profile.name} peer link ({profile.p2p_gb_s:g} GB/s one way).",
                        evidence={**m, "expected": profile.p2p_gb_s, "fraction": round(ratio, 3)},
                        remediation="Check "
                        + (
                            "`nvidia-smi topo -m`"
                            if profile.vendor == "nvidia"
                            else "`amd-smi topology`"
                        )
                        + " and the link state findings; a pair that falls back to PCIe has a "
                        "link down.",
                    )
                )
    return findings


CHECKS: tuple[Check, ...] = (
    check_driver,
    check_kernel,
    check_inventory,
    check_rocm,
    check_environment,
    check_device_nodes,
    check_pcie,
    check_power_and_thermal,
    check_ecc,
    check_kernel_log,
    check_interconnect,
    check_diagnostics,
    check_parse,
    check_deep_measurements,
)


def _smoke_skip_remediation(reason: str, profile: InstanceProfile | None) -> str:
    """What to do depends on why: no GPU visible is a driver matter, not a missing package."""
    amd = profile is not None and profile.vendor == "amd"
    if "sees no GPU" in reason:
        return (
            "PyTorch is installed but sees no GPU: fix the driver and device findings above first ("
            + (
                "`amd-smi list`, /dev/kfd, the `render` group; a ROCm build of PyTorch"
                if amd
                else "`nvidia-smi`, /dev/nvidia*; a CUDA build of PyTorch"
            )
            + "), and check "
            + ("HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES" if amd else "CUDA_VISIBLE_DEVICES")
            + " does not hide the GPUs."
        )
    build = "ROCm" if amd else "CUDA" if profile is not None else "ROCm or CUDA"
    return (
        f"Install the smoke extra (`pip install 'labgpu-agent[smoke]'` with a {build} build of "
        "PyTorch), or use an image that has it (the pool's `smoke_preinstalled` setting), so the "
        "node can run it."
    )


def check_smoke(
    results: list[SmokeResult], profile: InstanceProfile | None, required: list[str] | None = None
) -> list[Finding]:
    """Judge smoke results against the profile's baselines.

    `required` names the smoke tests the pool requires: one of them skipped or absent fails the
    node (a gate that silently skips its workloads would pass a broken stack); a skipped test
    that is not required is information.
    """
    findings: list[Finding] = []
    required_set = set(required or [])
    names = [r.name for r in results]
    for missing in sorted(required_set - set(names)):
        findings.append(
            Finding(
                id=f"smoke.{missing}.missing",
                severity="fail",
                message=f"Smoke test {missing} is required by the pool but was not run.",
                evidence={"required": sorted(required_set)},
                remediation="Run the agent with every required smoke test (`labgpu-agent check "
                "--smoke " + ",".join(sorted(required_set)) + "`).",
            )
        )
    for result in results:
        # One id per result: a test with several results (llm at batch 1 and B) adds the metric.
        parts = [result.name] if names.count(result.name) == 1 else [result.name, result.metric]
        slug = ".".join(re.sub(r"[^a-z0-9_]", "_", p.lower()) for p in parts)
        evidence = {
            "metric": result.metric,
            "value": result.value,
            "unit": result.unit,
            "baseline": result.baseline,
            "params": result.params,
        }
        if result.status == "skipped":
            needed = result.name in required_set
            findings.append(
                Finding(
                    id=f"smoke.{slug}.skipped",
                    severity="fail" if needed else "info",
                    message=f"Smoke test {result.name} "
                    + ("is required by the pool but could not run: " if needed else "was skipped: ")
                    + f"{result.reason}",
                    evidence={**evidence, "required": needed},
                    remediation=_smoke_skip_remediation(result.reason or "", profile),
                )
            )
        elif result.status == "failed":
            findings.append(
                Finding(
                    id=f"smoke.{slug}.failed",
                    severity="fail",
                    message=f"Smoke test {result.name} failed: {result.reason}",
                    evidence=evidence,
                    remediation="Run `labgpu-agent smoke " + result.name + "` by hand and read the "
                    "error; check the driver and PyTorch build.",
                )
            )
        elif result.value is not None and result.baseline:
            ratio = result.value / result.baseline
            if not result.higher_is_better:
                ratio = 1 / ratio if ratio else 0.0
            key = f"{result.name}:{result.metric}"
            if result.name == "llm" and result.params.get("mode", "generate") == "generate":
                # Eager `generate` (before issue 23, or --mode generate) follows the host's CPU.
                key = f"llm-generate:{result.metric}"
            warn_below, fail_below = (
                profile.baseline_bands.get(key, (WARN_BELOW_BASELINE, FAIL_BELOW_BASELINE))
                if profile is not None
                else (WARN_BELOW_BASELINE, FAIL_BELOW_BASELINE)
            )
            if ratio < warn_below:
                findings.append(
                    Finding(
                        id=f"smoke.{slug}.below_baseline",
                        severity="fail" if ratio < fail_below else "warn",
                        message=(
                            f"{result.name} {result.metric} is {result.value:.4g} "
                            f"{result.unit}, {ratio:.0%} of the "
                            f"{profile.name if profile else ''} baseline {result.baseline:.4g} "
                            f"(warn under {warn_below:.0%}, fail under {fail_below:.0%})."
                        ),
                        evidence={
                            **evidence,
                            "fraction_of_baseline": round(ratio, 3),
                            "warn_below": warn_below,
                            "fail_below": fail_below,
                        },
                        remediation="Check clocks, power cap, temperature and PCIe findings above; "
                        "re-run to rule out noise.",
                    )
                )
    return findings
