"""JupyterLab on the node, for a booking that asked for it (issue 15).

Cloud-init installs JupyterLab and the `labgpu-jupyter` systemd unit (bound to 127.0.0.1, token
from `JUPYTER_TOKEN_FILE`) but does not start it: the token arrives only in the agent's
authenticated bootstrap answer. The agent writes it to a root-only file, enables the unit (so it
comes back after a reboot, under systemd's supervision rather than the agent's) and reports
JupyterLab's state — starting, then running once it answers on loopback with that token, or
failed. The agent itself listens on nothing. In fixture mode (emulated cloud) nothing is
started and the notebook is reported running, so demos and browser tests show it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger("labgpu_agent.notebook")

TOKEN_FILE = Path("/etc/labgpu/jupyter.token")
UNIT = "labgpu-jupyter.service"
STATES = ("starting", "running", "failed")


@dataclass(frozen=True)
class NotebookSpec:
    token: str = field(repr=False)
    port: int = 8888

    @classmethod
    def from_bootstrap(cls, data: Any) -> NotebookSpec | None:
        """The bootstrap answer's `notebook` object, or None when the booking asked for none."""
        if not isinstance(data, dict) or not isinstance(data.get("token"), str):
            return None
        port = data.get("port", 8888)
        return cls(token=data["token"], port=port if isinstance(port, int) else 8888)


def write_token(token: str, path: Path = TOKEN_FILE) -> None:
    """Root-only from the first byte (created 0600, never world-readable for a moment).

    No trailing newline: jupyter_server takes the file's whole content as the token (checked
    with JupyterLab 4.6 / jupyter_server 2.21, which read it verbatim)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through O_CREAT


def probe(spec: NotebookSpec) -> bool:
    """JupyterLab answers on loopback and accepts our token."""
    try:
        response = httpx.get(
            f"http://127.0.0.1:{spec.port}/api/status",
            headers={"Authorization": f"token {spec.token}"},
            timeout=5.0,
        )
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def start_notebook(
    spec: NotebookSpec,
    *,
    say: Callable[[str], None],
    fixture: bool = False,
    token_file: Path = TOKEN_FILE,
    run: Callable[..., subprocess.CompletedProcess[Any]] = subprocess.run,
    is_up: Callable[[NotebookSpec], bool] = probe,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = 180.0,
    poll_s: float = 2.0,
) -> str:
    """Start JupyterLab and report its state through `say`; returns the final state."""
    say("starting")
    if fixture:
        say("running")
        return "running"
    try:
        write_token(spec.token, token_file)
        enabled = run(
            ["systemctl", "enable", "--now", UNIT], capture_output=True, text=True, check=False
        )
    except OSError as exc:
        log.error("could not start JupyterLab: %s", exc)
        say("failed")
        return "failed"
    if enabled.returncode != 0:
        log.error("systemctl enable --now %s failed: %s", UNIT, (enabled.stderr or "")[:300])
        say("failed")
        return "failed"
    waited = 0.0
    while waited < timeout_s:
        if is_up(spec):
            say("running")
            return "running"
        sleep(poll_s)
        waited += poll_s
    log.error("JupyterLab did not answer on 127.0.0.1:%s within %.0f s", spec.port, timeout_s)
    say("failed")
    return "failed"
