"""Runs the real node agent, in fixture mode, for each emulated droplet that turns active.

The agent is `labgpu-agent run --api … --token … --fixture-profile …`, with the API and bootstrap
token read back from the droplet's user_data, exactly as cloud-init would start it on a real node.
When the agent executable is missing the droplet still boots: the emulator logs it and the node
simply never reports (which the lifecycle must handle anyway).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from labgpu.providers.cloudinit import parse_user_data

from . import catalog
from .state import EmuDroplet, Faults

logger = logging.getLogger("emulator.agents")


class AgentSupervisor:
    def __init__(self, *, agent_cmd: str, work_dir: Path | None) -> None:
        self.agent_cmd = agent_cmd
        self.work_dir = work_dir
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        #: agents left running by a previous emulator process (droplet id -> pid)
        self._adopted: dict[int, int] = {}
        self._warned_missing: set[str] = set()

    def adopt(self, droplets: dict[int, EmuDroplet]) -> None:
        """After a restart: keep agents that still run (a real node's agent does not notice the
        provider's API restarting); mark the others for a fresh start by the ticker."""
        for droplet in droplets.values():
            if droplet.agent.status != "running":
                continue
            pid = droplet.agent.pid
            if pid and _is_agent_of(pid, droplet.id):
                self._adopted[droplet.id] = pid
                logger.info("droplet %s: adopted running agent pid %s", droplet.id, pid)
            else:
                droplet.agent.status, droplet.agent.pid = "pending", None

    def profile_for(self, droplet: EmuDroplet, faults: Faults, env: dict[str, str]) -> str:
        """Per-name override, then user_data's LABGPU_FIXTURE_PROFILE, then per size."""
        if droplet.name in faults.agent_profiles:
            return faults.agent_profiles[droplet.name]
        if env.get("LABGPU_FIXTURE_PROFILE"):
            return env["LABGPU_FIXTURE_PROFILE"]
        if droplet.size_slug in faults.size_profiles:
            return faults.size_profiles[droplet.size_slug]
        return catalog.default_profile(droplet.size_slug)

    def start(self, droplet: EmuDroplet, faults: Faults, *, data_gb: int | None = None) -> None:
        """Start the droplet's agent; `data_gb`: the size of the volume attached to it, which the
        fixture agent reports as its /data (nothing is mounted here)."""
        info = droplet.agent
        if droplet.id in self._procs and self._procs[droplet.id].poll() is None:
            return
        if droplet.id in self._adopted:
            return
        env_conf = parse_user_data(droplet.user_data)
        profile = self.profile_for(droplet, faults, env_conf)
        info.profile = profile
        if profile == "none":
            info.status = "disabled"
            return
        if not env_conf.get("LABGPU_API") or not env_conf.get("LABGPU_BOOTSTRAP_TOKEN"):
            info.status = "no_config"
            logger.info("droplet %s: no agent settings in user_data; no agent", droplet.id)
            return
        argv = shlex.split(self.agent_cmd)
        if not argv:
            info.status = "disabled"
            return
        executable = argv[0]
        if shutil.which(executable) is None and not Path(executable).is_file():
            info.status = "missing"
            if executable not in self._warned_missing:
                self._warned_missing.add(executable)
                logger.warning(
                    "agent command %r not found; droplets boot without an agent", executable
                )
            return
        argv += [
            "run",
            "--api",
            env_conf["LABGPU_API"],
            "--token",
            env_conf["LABGPU_BOOTSTRAP_TOKEN"],
            "--fixture-profile",
            profile,
        ]
        env = {
            **os.environ,
            # agent.env, as systemd's EnvironmentFile gives it to the agent (LABGPU_TIME_SCALE…)
            **env_conf,
            "LABGPU_API": env_conf["LABGPU_API"],
            "LABGPU_FIXTURE_PROFILE": profile,
            "LABGPU_EMULATOR_DROPLET_ID": str(droplet.id),
            "LABGPU_EMULATOR_DROPLET_NAME": droplet.name,
            "LABGPU_NODE_PUBLIC_IPV4": droplet.public_ip,
        }
        idle_after = [faults.idle_after[t] for t in droplet.tags if t in faults.idle_after]
        if idle_after:
            env["LABGPU_FIXTURE_IDLE_AFTER"] = str(min(idle_after))
        else:
            env.pop("LABGPU_FIXTURE_IDLE_AFTER", None)  # only a tag sends a node idle
        if data_gb:
            env["LABGPU_FIXTURE_DATA_GB"] = str(data_gb)
        else:
            env.pop("LABGPU_FIXTURE_DATA_GB", None)  # no volume, no /data
        log_file = None
        if self.work_dir is not None:
            # a per-droplet directory survives emulator restarts, so an agent that keeps its
            # heartbeat token on disk can carry on after being started again
            state_dir = self.work_dir / "agents" / str(droplet.id)
            state_dir.mkdir(parents=True, exist_ok=True)
            env["LABGPU_AGENT_STATE_DIR"] = str(state_dir)
            info.log = str(state_dir / "agent.log")
            log_file = open(info.log, "ab")  # noqa: SIM115 - handed to the child process
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv from our own settings, no shell
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log_file or subprocess.DEVNULL,
                stderr=subprocess.STDOUT if log_file else subprocess.DEVNULL,
                start_new_session=True,  # its own process group, so stop() reaches its children
            )
        except OSError as exc:
            info.status = "missing"
            logger.warning("droplet %s: could not start the agent: %s", droplet.id, exc)
            return
        finally:
            if log_file:
                log_file.close()
        self._procs[droplet.id] = proc
        info.status, info.pid, info.exit_code = "running", proc.pid, None
        info.starts += 1
        logger.info("droplet %s: agent started (pid %s, profile %s)", droplet.id, proc.pid, profile)

    def poll(self, droplets: dict[int, EmuDroplet]) -> bool:
        """Note agents that exited on their own. Returns True when anything changed."""
        changed = False
        for droplet_id, pid in list(self._adopted.items()):
            if not _is_agent_of(pid, droplet_id):
                del self._adopted[droplet_id]
                droplet = droplets.get(droplet_id)
                if droplet is not None:
                    droplet.agent.status, droplet.agent.pid = "exited", None
                    changed = True
        for droplet_id, proc in list(self._procs.items()):
            code = proc.poll()
            if code is None:
                continue
            del self._procs[droplet_id]
            droplet = droplets.get(droplet_id)
            if droplet is not None:
                droplet.agent.status, droplet.agent.exit_code, droplet.agent.pid = (
                    "exited",
                    code,
                    None,
                )
                changed = True
            logger.info("droplet %s: agent exited with %s", droplet_id, code)
        return changed

    def stop(self, droplet: EmuDroplet | int, *, timeout_s: float = 2.0) -> None:
        droplet_id = droplet if isinstance(droplet, int) else droplet.id
        proc = self._procs.pop(droplet_id, None)
        adopted_pid = self._adopted.pop(droplet_id, None)
        if not isinstance(droplet, int) and droplet.agent.status == "running":
            droplet.agent.status, droplet.agent.pid = "stopped", None
        if adopted_pid is not None:
            _stop_adopted(adopted_pid, droplet_id, timeout_s)
        if proc is None or proc.poll() is not None:
            return
        _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is None:
            _signal_group(proc, signal.SIGKILL)
            proc.wait(timeout=5)

    def stop_all(self) -> None:
        for droplet_id in [*self._procs, *self._adopted]:
            self.stop(droplet_id)

    @property
    def running(self) -> dict[int, int]:
        running = {i: p.pid for i, p in self._procs.items() if p.poll() is None}
        return {**running, **self._adopted}


def _is_agent_of(pid: int, droplet_id: int) -> bool:
    """True when `pid` is alive and is the agent we started for this droplet (its environment says
    so), which guards against signalling an unrelated process that reused the pid."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and f"LABGPU_EMULATOR_DROPLET_ID={droplet_id}".encode() in environ


def _stop_adopted(pid: int, droplet_id: int, timeout_s: float) -> None:
    if not _is_agent_of(pid, droplet_id):
        return
    # the agent leads its own session (start_new_session), so its pgid is its pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _is_agent_of(pid, droplet_id) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _is_agent_of(pid, droplet_id):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    # only the process group we created for this child (start_new_session=True)
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        proc.send_signal(sig)
