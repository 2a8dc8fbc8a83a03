"""JupyterLab on the node (issue 15): token from the bootstrap answer, state to the API."""

from __future__ import annotations

import stat
import subprocess

from test_client import BOOT, api  # noqa: F401 - the stub API fixture

from labgpu_agent.cli import main
from labgpu_agent.notebook import NotebookSpec, start_notebook

SPEC = NotebookSpec(token="nb-secret-token-0123456789abcdef", port=8888)


def test_fixture_agent_reports_the_notebook_running_after_its_health_report(api):  # noqa: F811
    api.on("bootstrap", (200, {**BOOT, "notebook": {"token": SPEC.token, "port": 8888}}))
    api.on("reports", (201, {"id": 1}))
    api.on("notebook", (204, None))
    api.on("heartbeat", (200, {"action": "stop"}))
    code = main(["run", "--api", api.url, "--token", "boot", "--fixture-profile", "healthy-h200"])
    assert code == 0
    assert api.paths() == ["bootstrap", "reports", "notebook", "notebook", "heartbeat"]
    states = [(auth, body) for path, auth, body in api.received if path.endswith("/notebook/")]
    assert states == [
        ("Bearer hb-secret", {"state": "starting"}),
        ("Bearer hb-secret", {"state": "running"}),
    ]


def test_no_notebook_asked_no_notebook_reported(api):  # noqa: F811
    api.on("bootstrap", (200, BOOT))
    api.on("reports", (201, {"id": 1}))
    api.on("heartbeat", (200, {"action": "stop"}))
    assert main(["run", "--api", api.url, "--token", "b", "--fixture-profile", "healthy-h200"]) == 0
    assert "notebook" not in api.paths()


def test_a_failing_notebook_report_does_not_stop_the_agent(api):  # noqa: F811
    api.on("bootstrap", (200, {**BOOT, "notebook": {"token": SPEC.token, "port": 8888}}))
    api.on("reports", (201, {"id": 1}))
    api.on("notebook", (400, {"code": "no_notebook"}))
    api.on("heartbeat", (200, {"action": "stop"}))
    assert main(["run", "--api", api.url, "--token", "b", "--fixture-profile", "healthy-h200"]) == 0
    assert api.paths()[-1] == "heartbeat"


def test_real_mode_writes_the_token_root_only_enables_the_unit_and_waits_for_loopback(tmp_path):
    token_file = tmp_path / "labgpu" / "jupyter.token"
    said: list[str] = []
    ran: list[list[str]] = []
    answers = iter([False, False, True])

    def run(argv, **_kwargs):
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    final = start_notebook(
        SPEC,
        say=said.append,
        token_file=token_file,
        run=run,
        is_up=lambda spec: next(answers),
        sleep=lambda s: None,
    )
    assert (final, said) == ("running", ["starting", "running"])
    assert ran == [["systemctl", "enable", "--now", "labgpu-jupyter.service"]]
    assert token_file.read_text() == SPEC.token  # verbatim: Jupyter reads the whole file
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600


def test_real_mode_reports_failed_when_the_unit_fails_or_never_answers(tmp_path):
    said: list[str] = []
    broken = start_notebook(
        SPEC,
        say=said.append,
        token_file=tmp_path / "t",
        run=lambda argv, **_: subprocess.CompletedProcess(argv, 1, "", "no such unit"),
    )
    silent = start_notebook(
        SPEC,
        say=said.append,
        token_file=tmp_path / "t",
        run=lambda argv, **_: subprocess.CompletedProcess(argv, 0, "", ""),
        is_up=lambda spec: False,
        sleep=lambda s: None,
        timeout_s=10,
    )
    assert (broken, silent) == ("failed", "failed")
    assert said == ["starting", "failed", "starting", "failed"]


def test_the_bootstrap_repr_never_shows_the_token():
    from labgpu_agent.client import Bootstrap

    boot = Bootstrap(node=1, heartbeat_token="h", profile=None, heartbeat_interval_s=1)
    boot.notebook = SPEC
    assert SPEC.token not in repr(boot) and SPEC.token not in repr(SPEC)
