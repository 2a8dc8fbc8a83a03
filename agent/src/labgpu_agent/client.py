"""The agent side of the API protocol (see agent/README.md): bootstrap, report, heartbeat.

Transient failures (timeouts, connection errors, 5xx, 429) are retried with capped, jittered
exponential backoff, honouring Retry-After; any other 4xx is final. Every call is safe to repeat:
a bootstrap whose answer was lost is answered again with the same heartbeat token until the
node's first report (the API's side of issue 29). 401/410 on a heartbeat, or `{"action": "stop"}`,
end the agent cleanly; a heartbeat that still fails after its retries is skipped, not fatal.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from labgpu_agent.notebook import NotebookSpec

log = logging.getLogger("labgpu_agent.client")

BOOTSTRAP_PATH = "/api/v1/agent/bootstrap/"
REPORTS_PATH = "/api/v1/agent/reports/"
HEARTBEAT_PATH = "/api/v1/agent/heartbeat/"
NOTEBOOK_PATH = "/api/v1/agent/notebook/"


class ApiError(Exception):
    """The API answered with a non-retryable error (or retries ran out)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Bootstrap:
    node: int | str
    heartbeat_token: str
    profile: str | None
    heartbeat_interval_s: float
    required_smoke: list[str] | None = None  # None: the agent's default (all four)
    deep: bool = False  # the pool wants `check --deep` before handover (NodePool.deep_at_handover)
    # JupyterLab's token and port, when the booking asked for it (never logged)
    notebook: NotebookSpec | None = field(default=None, repr=False)


@dataclass
class RetryPolicy:
    """Exponential backoff from `base_delay_s`, capped at `max_delay_s`, each delay shortened by up
    to `jitter` of itself at random, so that agents which failed together (a storm of boots
    queueing at the API) do not come back together. Eight attempts span about a minute and a half,
    beyond the API's usual hiccups (a web worker restarting, a deploy)."""

    max_attempts: int = 8
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    jitter: float = 0.5
    rng: random.Random = field(default_factory=random.Random, repr=False)

    @classmethod
    def scaled(cls, scale: float) -> RetryPolicy:
        """The same policy with every delay times `scale`: the server's LABGPU_TIME_SCALE, which
        cloud-init writes into the agent's environment when it is not 1 (lifecycle tests only).
        A Retry-After from the API is taken as given, within the (scaled) cap."""
        return cls(base_delay_s=cls.base_delay_s * scale, max_delay_s=cls.max_delay_s * scale)

    def delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after is not None:
            try:
                return float(min(float(retry_after), self.max_delay_s))
            except ValueError:
                pass  # an HTTP date; fall back to our own backoff
        backoff = min(self.base_delay_s * 2**attempt, self.max_delay_s)
        return float(backoff * (1 - self.jitter * self.rng.random()))


class AgentClient:
    def __init__(
        self,
        api: str,
        *,
        http: httpx.Client | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.http = http or httpx.Client(base_url=api.rstrip("/"), timeout=30.0)
        self.retry = retry or RetryPolicy()
        self.sleep = sleep

    def _post(self, path: str, token: str, body: Any, ok: tuple[int, ...]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"}
        last_error = "no attempt made"
        for attempt in range(self.retry.max_attempts):
            retry_after = None
            try:
                response = self.http.post(path, json=body, headers=headers)
            except httpx.TransportError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code in ok:
                    return response
                if response.status_code == 429 or response.status_code >= 500:
                    retry_after = response.headers.get("Retry-After")
                    last_error = f"HTTP {response.status_code}"
                else:
                    raise ApiError(
                        f"POST {path}: HTTP {response.status_code}: {response.text[:300]}",
                        status=response.status_code,
                    )
            if attempt + 1 < self.retry.max_attempts:
                delay = self.retry.delay(attempt, retry_after)
                log.warning("POST %s failed (%s); retrying in %.1fs", path, last_error, delay)
                self.sleep(delay)
        raise ApiError(
            f"POST {path}: giving up after {self.retry.max_attempts} attempts: {last_error}"
        )

    def bootstrap(self, token: str) -> Bootstrap:
        data = self._post(BOOTSTRAP_PATH, token, {}, ok=(200, 201)).json()
        return Bootstrap(
            node=data["node"],
            heartbeat_token=data["heartbeat_token"],
            profile=data.get("profile"),
            heartbeat_interval_s=float(data.get("heartbeat_interval_s", 30)),
            required_smoke=(
                [str(n) for n in data["required_smoke"]]
                if isinstance(data.get("required_smoke"), list)
                else None
            ),
            notebook=NotebookSpec.from_bootstrap(data.get("notebook")),
            deep=data.get("deep") is True,
        )

    def send_report(self, token: str, report: dict[str, Any]) -> None:
        self._post(REPORTS_PATH, token, report, ok=(200, 201))

    def notebook_state(self, token: str, state: str) -> None:
        """Tell the API how JupyterLab is doing; a failure to say so never stops the agent."""
        try:
            self._post(NOTEBOOK_PATH, token, {"state": state}, ok=(204,))
        except ApiError as exc:
            log.warning("could not report the notebook as %s: %s", state, exc)

    def heartbeat(self, token: str, usage: dict[str, Any] | None = None) -> str:
        """Return the API's action: "continue", "stop" (401/410 also mean stop) or "deep_check"
        (a site admin asked for the vendor stress tools; the agent reports their result).

        `usage` (labgpu_agent.usage) rides along: GPU utilisation, memory, power, sessions."""
        body: dict[str, Any] = {"status": "alive"}
        if usage is not None:
            body["usage"] = usage
        try:
            try:
                response = self._post(HEARTBEAT_PATH, token, body, ok=(200,))
            except ApiError as exc:
                if exc.status != 400 or "usage" not in body:
                    raise
                # The server refused our numbers (a tool printed nonsense): still say alive.
                log.warning("heartbeat usage refused (%s); sent without it", exc)
                response = self._post(HEARTBEAT_PATH, token, {"status": "alive"}, ok=(200,))
        except ApiError as exc:
            if exc.status in (401, 410):
                return "stop"  # the booking ended and the token was revoked
            raise
        action = response.json().get("action", "continue")
        return action if action in ("stop", "deep_check") else "continue"


def run_agent(
    client: AgentClient,
    *,
    bootstrap_token: str,
    make_report: Callable[[Bootstrap], dict[str, Any]],
    make_deep_report: Callable[[Bootstrap], dict[str, Any]] | None = None,
    make_usage: Callable[[], dict[str, Any] | None] | None = None,
    start_notebook: Callable[[NotebookSpec, Callable[[str], None]], Any] | None = None,
    max_heartbeats: int | None = None,
) -> int:
    """Bootstrap, send one report, then heartbeat until told to stop; a `deep_check` answer runs
    the deep check and sends its report. Returns an exit code."""
    boot = client.bootstrap(bootstrap_token)
    log.info("bootstrapped as node %s (profile %s)", boot.node, boot.profile)
    client.send_report(boot.heartbeat_token, make_report(boot))
    _notebook(client, boot, start_notebook)
    beats = 0
    while max_heartbeats is None or beats < max_heartbeats:
        client.sleep(boot.heartbeat_interval_s)
        beats += 1
        try:
            action = client.heartbeat(boot.heartbeat_token, _usage_or_none(make_usage))
        except ApiError as exc:
            if exc.status is not None:
                raise  # the API refused what we sent: retrying the same would not help
            log.warning("heartbeat skipped: %s", exc)  # the API is away; the next one tries again
            continue
        if action == "stop":
            log.info("told to stop after %d heartbeats", beats)
            return 0
        if action == "deep_check" and make_deep_report is not None:
            log.info("deep check requested")
            client.send_report(boot.heartbeat_token, make_deep_report(boot))
    return 0


def _notebook(
    client: AgentClient,
    boot: Bootstrap,
    start: Callable[[NotebookSpec, Callable[[str], None]], Any] | None,
) -> None:
    """Start JupyterLab when the booking asked for it; a failure is reported, never fatal."""
    if boot.notebook is None or start is None:
        return

    def say(state: str) -> None:
        client.notebook_state(boot.heartbeat_token, state)

    try:
        start(boot.notebook, say)
    except Exception:  # the node stays usable over SSH whatever JupyterLab does
        log.exception("JupyterLab could not be started")
        say("failed")


def _usage_or_none(make_usage: Callable[[], dict[str, Any] | None] | None) -> dict[str, Any] | None:
    """Utilisation is a nice-to-have: a tool that breaks must not stop the heartbeat."""
    if make_usage is None:
        return None
    try:
        return make_usage()
    except Exception:  # any failure means "no numbers this time"
        log.exception("could not read utilisation; heartbeat sent without it")
        return None
