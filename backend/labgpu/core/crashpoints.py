"""Named points where the fault tests crash a process on purpose (issue: crash anywhere).

`crash_point("provision.after_create_post")` does nothing unless the environment variable
`LABGPU_CRASH_AT` names that point (workers) or a test armed it in this process (the web tier, see
`arm`). A worker then dies the way a machine does: SIGKILL to its whole process group (worker and
its embedded beat), no cleanup, no acknowledgement. The web tier cannot kill the test process that
hosts it, so an armed point there raises `CrashPointReached` (a BaseException, so nothing catches
it): the request dies mid-way, its transaction rolls back, its on-commit hooks never run.

Before dying, the point appends its name to `LABGPU_CRASH_MARKER` (a file), so the test knows the
crash really happened where it meant it to.

With `LABGPU_CRASH_ONE_PROCESS` set (a web server's worker processes, several of one kind), only
the process that reaches the point dies, SIGKILLed, and only the first to reach it (the marker says
whether one did): its siblings, and the one its server forks to replace it, carry on.
"""

import os
import signal
from pathlib import Path

_armed: set[str] = set()


class CrashPointReached(BaseException):
    """Raised by an armed in-process crash point."""


def arm(name: str) -> None:
    """Crash the next request of this process that reaches `name` (tests only)."""
    _armed.add(name)


def disarm_all() -> None:
    _armed.clear()


def crash_point(name: str) -> None:
    if name in _armed:
        _armed.discard(name)  # once: the retry must get through
        _mark(name)
        raise CrashPointReached(name)
    if os.environ.get("LABGPU_CRASH_AT") == name:
        if os.environ.get("LABGPU_CRASH_ONE_PROCESS"):
            if _marked(name):
                return
            _mark(name)
            os.kill(os.getpid(), signal.SIGKILL)
        _mark(name)
        os.killpg(os.getpgrp(), signal.SIGKILL)


def _marked(name: str) -> bool:
    marker = os.environ.get("LABGPU_CRASH_MARKER")
    return bool(marker) and Path(marker).exists() and name in Path(marker).read_text().split()


def _mark(name: str) -> None:
    marker = os.environ.get("LABGPU_CRASH_MARKER")
    if marker:
        with Path(marker).open("a") as fh:
            fh.write(name + "\n")
            fh.flush()
            os.fsync(fh.fileno())
