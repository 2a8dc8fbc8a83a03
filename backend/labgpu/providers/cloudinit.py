"""The cloud-init `user_data` that turns a fresh GPU droplet into a LabGPU node.

It installs `labgpu-agent` into its own virtualenv (Ubuntu 24.04 refuses system-wide pip, PEP 668;
`--system-site-packages` lets the agent's smoke tests use the image's preinstalled PyTorch/ROCm),
writes `/etc/labgpu/agent.env`, and starts the agent as a systemd unit so it survives reboots.

Nothing but SSH is reachable from outside: the host firewall (ufw) denies every other incoming
connection, first thing in `runcmd`. The agent itself listens on nothing (it only calls the API).
A booking that asks for JupyterLab gets it installed and a systemd unit bound to 127.0.0.1 only;
the agent starts that unit once the bootstrap answer gave it the token (the token is never in
user_data, which the provider stores and the droplet's metadata service serves).

`/etc/labgpu/agent.env` is also the machine-readable part: `parse_user_data` reads the `LABGPU_*`
lines back, which is how the emulator knows which API and bootstrap token its fixture agent uses.

The output is generated as text, not through a YAML library, so the format that
`parse_user_data` depends on is fixed here; every value is validated so it cannot break out of
its line, its YAML scalar or the systemd command line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from urllib.parse import urlsplit

from labgpu.providers.ssh_keys import InvalidSshKey, parse_ssh_public_key

USER_DATA_LIMIT = 64 * 1024
AGENT_ENV_PATH = "/etc/labgpu/agent.env"
AGENT_VENV = "/opt/labgpu-agent"
JUPYTER_VENV = "/opt/labgpu-jupyter"
JUPYTER_UNIT = "labgpu-jupyter.service"
# Written by the agent (0600) from its bootstrap answer; jupyter_server reads JUPYTER_TOKEN_FILE.
JUPYTER_TOKEN_FILE = "/etc/labgpu/jupyter.token"
JUPYTER_PORT = 8888

# Values that go into agent.env and onto the agent's command line: no whitespace, quotes,
# `$`, `%` (systemd specifiers) or shell metacharacters.
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9._~:/?#\[\]@!&*+,=-]+$")
_SAFE_TOKEN = re.compile(r"^[A-Za-z0-9._~+/=-]{8,512}$")
_SAFE_PROFILE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_SAFE_PIP_SPEC = re.compile(r"^[A-Za-z0-9._\-\[\],<>=!~@:/+]{1,300}$")
_ENV_LINE = re.compile(r"^\s*(LABGPU_[A-Z0-9_]+)=(\S*)\s*$")
_VOLUME_NAME = re.compile(r"^[a-z][a-z0-9-]{0,63}$")
DATA_MOUNT = "/data"
DATA_SCRIPT = "/usr/local/sbin/labgpu-data"


def _check(name: str, value: str, pattern: re.Pattern[str]) -> str:
    if not pattern.match(value) or "$" in value or "%" in value:
        raise ValueError(f"{name} contains characters not allowed in user_data: {value[:40]!r}")
    return value


def render_user_data(
    *,
    api_url: str,
    bootstrap_token: str,
    agent_profile: str | None = None,
    ssh_authorized_keys: Sequence[str] = (),
    agent_pip_spec: str = "labgpu-agent",
    install_smoke: bool = True,
    data_volume: str | None = None,
    jupyter: bool = False,
    time_scale: float = 1.0,
) -> str:
    """A `#cloud-config` document (≤ 64 KiB) that installs and starts the node agent.

    `agent_profile` selects a fixture profile for the agent (emulator and tests only; on a real
    machine the agent measures the hardware). `ssh_authorized_keys` are the booking user's public
    keys, installed for the default user: DigitalOcean's `ssh_keys` field takes only keys
    registered on the account, not raw public keys. `install_smoke` installs the agent with its
    `smoke` extra (torch, diffusers, transformers); a pool whose image already has them turns it
    off. Without them every smoke test is skipped, and a required one fails the node.

    `data_volume` is the name of the block-storage volume attached at create: the
    `labgpu-data` unit mounts it at /data, formatting it (ext4) only when it carries no
    filesystem yet, and on shutdown syncs and unmounts it (teardown shuts the droplet down
    before it detaches the volume).

    `jupyter` installs JupyterLab and its (loopback-only) unit for the agent to start.

    `time_scale` is the server's LABGPU_TIME_SCALE (lifecycle tests only): when it is not 1 the
    agent gets it too, so its retry backoff runs at the same speed as everything else.
    """
    parts = urlsplit(api_url)
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ValueError(f"api_url must be an absolute http(s) URL, got {api_url!r}")
    _check("api_url", api_url, _SAFE_VALUE)
    _check("bootstrap_token", bootstrap_token, _SAFE_TOKEN)
    if install_smoke and "[" not in agent_pip_spec:
        agent_pip_spec = f"{agent_pip_spec}[smoke]"
    _check("agent_pip_spec", agent_pip_spec, _SAFE_PIP_SPEC)
    if agent_profile is not None:
        _check("agent_profile", agent_profile, _SAFE_PROFILE)
    keys = []
    for text in ssh_authorized_keys:
        if not text.strip():
            continue
        try:  # each becomes one authorized_keys line: parsed, and rebuilt from its parts
            keys.append(parse_ssh_public_key(text).line)
        except InvalidSshKey as error:
            raise ValueError(f"not one OpenSSH public key ({error}): {text[:40]!r}") from None

    env_lines = [f"LABGPU_API={api_url}", f"LABGPU_BOOTSTRAP_TOKEN={bootstrap_token}"]
    if agent_profile is not None:
        env_lines.append(f"LABGPU_FIXTURE_PROFILE={agent_profile}")
    if time_scale != 1:
        if not 0 < time_scale < float("inf"):
            raise ValueError(f"time_scale must be a positive number, got {time_scale!r}")
        env_lines.append(f"LABGPU_TIME_SCALE={time_scale:g}")

    # ${VAR} (braces) makes systemd pass each value as exactly one argument
    exec_start = (
        f"{AGENT_VENV}/bin/labgpu-agent run"
        " --api ${LABGPU_API} --token ${LABGPU_BOOTSTRAP_TOKEN}"
    )
    if agent_profile is not None:
        exec_start += " --fixture-profile ${LABGPU_FIXTURE_PROFILE}"
    unit = [
        "[Unit]",
        "Description=LabGPU node agent (health reports and heartbeats)",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        f"EnvironmentFile={AGENT_ENV_PATH}",
        f"ExecStart={exec_start}",
        "Restart=on-failure",
        "RestartSec=5",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]

    data_files: list[str] = []
    data_cmds: list[str] = []
    if data_volume is not None:
        if not _VOLUME_NAME.match(data_volume):
            raise ValueError(f"not a volume name: {data_volume[:40]!r}")
        device = f"/dev/disk/by-id/scsi-0DO_Volume_{data_volume}"
        script = [
            "#!/bin/sh",
            "# Mount the LabGPU data volume at /data; format it only when it has no filesystem.",
            "set -eu",
            f"DEV={device}",
            "i=0",
            'while [ ! -b "$DEV" ] && [ "$i" -lt 90 ]; do sleep 2; i=$((i + 1)); done',
            '[ -b "$DEV" ] || { echo "labgpu-data: $DEV is not attached" >&2; exit 1; }',
            "# blkid -p exits 2 when it finds no signature at all: only then is the volume new",
            'rc=0; blkid -p "$DEV" >/dev/null 2>&1 || rc=$?',
            'if [ "$rc" -eq 2 ]; then mkfs.ext4 -q -L labgpu-data "$DEV";',
            'elif [ "$rc" -ne 0 ]; then echo "labgpu-data: blkid failed ($rc)" >&2; exit 1; fi',
            f"mkdir -p {DATA_MOUNT}",
            f'mountpoint -q {DATA_MOUNT} || mount -o defaults,nofail,discard "$DEV" {DATA_MOUNT}',
        ]
        data_unit = [
            "[Unit]",
            "Description=LabGPU persistent data volume at /data",
            "Before=labgpu-agent.service",
            "",
            "[Service]",
            "Type=oneshot",
            "RemainAfterExit=yes",
            f"ExecStart={DATA_SCRIPT}",
            # the shutdown hook: teardown shuts the droplet down before detaching the volume
            f"ExecStop=/bin/sh -c 'sync; umount {DATA_MOUNT} || umount -l {DATA_MOUNT}; sync'",
            "",
            "[Install]",
            "WantedBy=multi-user.target",
        ]
        data_files = [
            f"  - path: {DATA_SCRIPT}",
            "    owner: root:root",
            "    permissions: '0755'",
            "    content: |",
            "\n".join(f"      {line}" if line else "" for line in script),
            "  - path: /etc/systemd/system/labgpu-data.service",
            "    owner: root:root",
            "    permissions: '0644'",
            "    content: |",
            "\n".join(f"      {line}" if line else "" for line in data_unit),
        ]
        data_cmds = ["  - [systemctl, enable, --now, labgpu-data.service]"]

    def block(lines: Sequence[str]) -> str:
        return "\n".join(f"      {line}" if line else "" for line in lines)

    q = json.dumps  # a JSON string is a valid YAML double-quoted scalar
    doc = [
        "#cloud-config",
        "# Generated by LabGPU (labgpu.providers.cloudinit); do not edit by hand.",
    ]
    if keys:
        doc.append("ssh_authorized_keys:")
        doc += [f"  - {q(k)}" for k in keys]
    doc += [
        "package_update: true",
        "packages:",
        "  - python3-venv",
        "  - python3-pip",
        "write_files:",
        f"  - path: {AGENT_ENV_PATH}",
        "    owner: root:root",
        "    permissions: '0600'",
        "    content: |",
        block(env_lines),
        "  - path: /etc/systemd/system/labgpu-agent.service",
        "    owner: root:root",
        "    permissions: '0644'",
        "    content: |",
        block(unit),
        *data_files,
    ]
    if jupyter:
        doc += [
            f"  - path: /etc/systemd/system/{JUPYTER_UNIT}",
            "    owner: root:root",
            "    permissions: '0644'",
            "    content: |",
            block(_jupyter_unit()),
        ]
    doc += ["runcmd:", *_firewall_runcmd()]
    if jupyter:
        doc += _jupyter_runcmd()
    doc += [
        f"  - [python3, -m, venv, --system-site-packages, {AGENT_VENV}]",
        f"  - [{AGENT_VENV}/bin/pip, install, --upgrade, {q(agent_pip_spec)}]",
        "  - [systemctl, daemon-reload]",
        *data_cmds,
        "  - [systemctl, enable, --now, labgpu-agent.service]",
        "",
    ]
    text = "\n".join(doc)
    if len(text.encode()) > USER_DATA_LIMIT:
        raise ValueError(f"user_data is {len(text.encode())} bytes, over the 64 KiB limit")
    return text


def _firewall_runcmd() -> list[str]:
    """Host firewall before anything of ours starts: incoming denied except SSH (22/tcp)."""
    return [
        "  - [ufw, default, deny, incoming]",
        "  - [ufw, default, allow, outgoing]",
        "  - [ufw, allow, 22/tcp]",
        "  - [ufw, --force, enable]",
    ]


def _jupyter_unit() -> list[str]:
    """JupyterLab on 127.0.0.1 only, with the booking's token from a root-only file (not on the
    command line, where `ps` shows it); `port_retries=0` fails rather than moving ports. Enabled
    by the agent once the token file exists, so it never starts with a token of its own."""
    exec_start = (
        f"{JUPYTER_VENV}/bin/jupyter-lab --no-browser"
        f" --ServerApp.ip=127.0.0.1 --ServerApp.port={JUPYTER_PORT} --ServerApp.port_retries=0"
        " --ServerApp.allow_root=True --ServerApp.root_dir=/root"
    )
    return [
        "[Unit]",
        "Description=JupyterLab for the booking's owner (127.0.0.1 only; reach it by SSH tunnel)",
        "After=network-online.target",
        f"ConditionPathExists={JUPYTER_TOKEN_FILE}",
        "",
        "[Service]",
        f"Environment=JUPYTER_TOKEN_FILE={JUPYTER_TOKEN_FILE}",
        "WorkingDirectory=/root",
        f"ExecStart={exec_start}",
        "Restart=on-failure",
        "RestartSec=5",
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]


def _jupyter_runcmd() -> list[str]:
    return [
        f"  - [python3, -m, venv, --system-site-packages, {JUPYTER_VENV}]",
        f"  - [{JUPYTER_VENV}/bin/pip, install, --upgrade, jupyterlab]",
    ]


def parse_user_data(text: str | None) -> dict[str, str]:
    """The `LABGPU_*` settings from user_data rendered by `render_user_data` (else empty).

    Reads the `KEY=value` lines of the agent.env block; tolerant of anything else in the document
    so hand-written user_data in tests works too.
    """
    result: dict[str, str] = {}
    for line in (text or "").splitlines():
        match = _ENV_LINE.match(line)
        if match:
            result[match.group(1)] = match.group(2)
    return result
