"""The rendered cloud-init of issue 15: only SSH is reachable; JupyterLab listens on loopback."""

from __future__ import annotations

import shlex

import pytest

from labgpu.providers.cloudinit import JUPYTER_TOKEN_FILE, render_user_data

yaml = pytest.importorskip("yaml")

UNIT = "/etc/systemd/system/labgpu-jupyter.service"


def render(**overrides):
    options = {"api_url": "https://labgpu.example.org", "bootstrap_token": "bt_0123456789abcdef"}
    options.update(overrides)
    return yaml.safe_load(render_user_data(**options))


def commands(doc) -> list[list[str]]:
    return [[str(part) for part in command] for command in doc["runcmd"]]


def unit_directives(doc, path: str) -> dict[str, str]:
    content = {f["path"]: f["content"] for f in doc["write_files"]}[path]
    return dict(
        line.split("=", 1) for line in content.splitlines() if "=" in line and line[0] != "#"
    )


@pytest.mark.parametrize("jupyter", [False, True])
def test_firewall_denies_every_incoming_connection_but_ssh_before_anything_starts(jupyter):
    runcmd = commands(render(jupyter=jupyter))
    ufw = [c for c in runcmd if c[0] == "ufw"]

    assert ufw == [
        ["ufw", "default", "deny", "incoming"],
        ["ufw", "default", "allow", "outgoing"],
        ["ufw", "allow", "22/tcp"],
        ["ufw", "--force", "enable"],
    ]
    # the only port opened is SSH, and the firewall is up before the agent or Jupyter start
    assert [c for c in ufw if c[1] == "allow" and c[2] != "outgoing"] == [
        ["ufw", "allow", "22/tcp"]
    ]
    assert runcmd.index(["ufw", "--force", "enable"]) < min(
        i for i, c in enumerate(runcmd) if c[0] != "ufw"
    )


def test_jupyterlab_unit_binds_loopback_only_with_the_token_from_a_file():
    doc = render(jupyter=True)
    unit = unit_directives(doc, UNIT)
    argv = shlex.split(unit["ExecStart"])
    options = dict(a.split("=", 1) for a in argv if a.startswith("--") and "=" in a)

    assert argv[0].endswith("/bin/jupyter-lab")
    assert options["--ServerApp.ip"] == "127.0.0.1"
    assert options["--ServerApp.port"] == "8888"
    assert options["--ServerApp.port_retries"] == "0"
    assert "--no-browser" in argv
    # the token is read from a root-only file the agent writes, never given on the command line
    assert not any("token" in a.lower() for a in argv)
    assert unit["Environment"] == f"JUPYTER_TOKEN_FILE={JUPYTER_TOKEN_FILE}"
    assert unit["ConditionPathExists"] == JUPYTER_TOKEN_FILE
    runcmd = commands(doc)
    assert any(c[-1] == "jupyterlab" and "install" in c for c in runcmd)
    # cloud-init does not start it: the agent does, once the bootstrap answer gave the token
    assert not any("labgpu-jupyter.service" in " ".join(c) for c in runcmd)


def test_no_jupyter_asked_no_jupyter_installed():
    doc = render()
    assert UNIT not in {f["path"] for f in doc["write_files"]}
    assert not any("jupyter" in " ".join(c) for c in commands(doc))
