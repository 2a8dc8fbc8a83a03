"""Host facts from plain Linux tools: `uname -r`, `/proc/modules`, `dmesg`, `id`, `ls -l /dev/…`,
and the environment (`env`)."""

from __future__ import annotations

import re

from labgpu_agent.facts import DeviceNode, Facts
from labgpu_agent.parsers._text import strip_annotations

GPU_MODULES = ("amdgpu", "amdkfd", "nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset")
WATCHED_ENV = (
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "HSA_OVERRIDE_THERMAL_LIMIT",
)

# Kernel-log lines that mean the GPU or its link misbehaved. Vendor wording varies by version,
# so these are deliberately loose; the line itself goes into the finding as evidence.
_KERNEL_LOG_PATTERNS = (
    r"amdgpu.*(?:GPU reset|ring \S+ timeout|uncorrectable|RAS|page fault|VM_L2_PROTECTION_FAULT"
    r"|probe .* failed|Fatal error|failed to load firmware|hw_init of IP block .* failed)",
    r"Direct firmware load for amdgpu/",
    r"NVRM: Xid",
    r"GPU has fallen off the bus",
    r"AER: .*(?:Uncorrected|Fatal)",
    r"NVRM: .*(?:failed|RmInitAdapter)",
)
_KERNEL_LOG = re.compile("|".join(f"(?:{p})" for p in _KERNEL_LOG_PATTERNS), re.IGNORECASE)


def parse_uname(text: str) -> Facts:
    release = strip_annotations(text).strip().split()
    return Facts(kernel_release=release[0] if release else None)


def parse_proc_modules(text: str) -> Facts:
    """`/proc/modules` or `lsmod` output: which GPU kernel modules are loaded."""
    names = {line.split()[0] for line in strip_annotations(text).splitlines() if line.split()}
    loaded = sorted(names.intersection(GPU_MODULES))
    facts = Facts(kernel_modules=loaded)
    if "amdgpu" in loaded:
        facts.driver_name = "amdgpu"
    elif "nvidia" in loaded:
        facts.driver_name = "nvidia"
    facts.driver_loaded = bool({"amdgpu", "nvidia"}.intersection(loaded))
    return facts


# A node flooding its kernel log must not make its report too big for the API (it would be refused
# and the node fail for a missing report instead of its real fault): keep the newest lines, cut.
MAX_KERNEL_LOG_LINES = 100
MAX_KERNEL_LOG_LINE = 300


def parse_dmesg(text: str) -> Facts:
    errors = [
        line.strip()[:MAX_KERNEL_LOG_LINE]
        for line in strip_annotations(text).splitlines()
        if _KERNEL_LOG.search(line)
    ]
    return Facts(kernel_log_errors=errors[-MAX_KERNEL_LOG_LINES:])


def parse_env(text: str) -> Facts:
    env = {}
    for line in strip_annotations(text).splitlines():
        key, sep, value = line.partition("=")
        if sep and key in WATCHED_ENV:
            env[key] = value
    return Facts(environment=env)


_LS_LINE = re.compile(
    r"^(?P<mode>[cbdl-][rwxsStT-]{9})[.+@]?\s+\d+\s+(?P<owner>\S+)\s+(?P<group>\S+)\s+.*?(?P<name>\S+)$"
)
_LS_MISSING = re.compile(r"cannot access '?(?P<path>[^':]+)'?: No such file")


def parse_devices(text: str, groups: set[str] | None = None, uid: int | None = None) -> Facts:
    """`ls -l /dev/kfd /dev/dri /dev/nvidia*` (+ `id` for the user's groups) → device nodes.

    A node is accessible when it is world read/write, group read/write for one of the user's
    groups, or the user is root.
    """
    nodes: list[DeviceNode] = []
    directory = "/dev"
    for raw in strip_annotations(text).splitlines():
        line = raw.strip()
        if line.endswith(":") and line.startswith("/"):
            directory = line[:-1]  # `ls -l /dev/dri` prints `/dev/dri:` before its entries
            continue
        if (missing := _LS_MISSING.search(line)) is not None:
            nodes.append(DeviceNode(path=missing.group("path"), exists=False, accessible=False))
            continue
        match = _LS_LINE.match(line)
        if not match or match.group("mode")[0] != "c":
            continue
        name, mode, group = match.group("name"), match.group("mode"), match.group("group")
        path = name if name.startswith("/") else f"{directory}/{name}"
        accessible = (
            uid == 0
            or mode[7:9] == "rw"
            or (mode[4:6] == "rw" and groups is not None and group in groups)
        )
        nodes.append(
            DeviceNode(path=path, exists=True, accessible=accessible, mode=mode, group=group)
        )
    return Facts(device_nodes=nodes)


def parse_id(text: str) -> tuple[int | None, set[str]]:
    """`uid=1000(alice) gid=1000(alice) groups=1000(alice),44(video),109(render)`."""
    body = strip_annotations(text)
    uid = re.search(r"uid=(\d+)", body)
    groups = set(re.findall(r"\d+\(([^)]+)\)", body.partition("groups=")[2]))
    return (int(uid.group(1)) if uid else None), groups
