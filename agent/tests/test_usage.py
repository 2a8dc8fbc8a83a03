"""Heartbeat utilisation: the process/session counters on real outputs, live collection through
the health parsers, and fixture mode's varying numbers that go idle and come back on command."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from labgpu_agent.collect import facts_from_outputs, load_fixture_profile
from labgpu_agent.parsers import parse
from labgpu_agent.usage import (
    FixtureUsage,
    count_processes_amd_default,
    count_processes_nvidia_q,
    count_processes_nvidia_xml,
    count_ssh_sessions,
    data_disk_usage,
    usage_from_facts,
)

AMD_DEFAULT = "amd/amd-smi_default_mi300x-vf_digitalocean_rocm7.2.4.txt"
NVIDIA_XML = "nvidia/nvidia-smi_q_x_h200_driver580.xml"
NVIDIA_Q = "nvidia/nvidia-smi_q_h100_load_driver590.txt"


def test_amd_smi_default_view_gives_utilisation_memory_power_and_its_two_processes(
    shared_fixture,
):
    text = shared_fixture(AMD_DEFAULT)
    usage = usage_from_facts(
        parse("amd-smi-default", text),
        gpu_processes=count_processes_amd_default(text),
        ssh_sessions=None,
    )
    assert usage["gpu_processes"] == 2  # PIDs 1823 and 4212 in the recorded table
    (gpu,) = usage["gpus"]
    assert gpu["index"] == 0
    assert {"utilisation_pct", "vram_used_mib", "vram_total_mib", "power_w"} <= gpu.keys()
    assert "ssh_sessions" not in usage  # unknown, not zero


def test_nvidia_xml_with_an_empty_process_list_counts_zero(shared_fixture):
    text = shared_fixture(NVIDIA_XML)
    assert count_processes_nvidia_xml(text) == 0
    usage = usage_from_facts(parse("nvidia-smi-xml", text), gpu_processes=0, ssh_sessions=3)
    (gpu,) = usage["gpus"]
    assert gpu["vram_total_mib"] > 100_000 and gpu["power_w"] > 0
    assert usage["ssh_sessions"] == 3


def test_nvidia_q_under_load_counts_its_processes(shared_fixture):
    text = shared_fixture(NVIDIA_Q)
    count = count_processes_nvidia_q(text)
    assert count is not None and count >= 1
    assert count == text.count("Process ID")


def test_outputs_without_a_process_table_give_unknown_not_zero():
    assert count_processes_amd_default("| AMD-SMI 26.2.1 |\n") is None
    assert count_processes_nvidia_xml("not xml") is None
    assert count_processes_nvidia_xml("<nvidia_smi_log><gpu></gpu></nvidia_smi_log>") is None


def test_ssh_sessions_count_established_connections():
    ss = (
        "0      0      10.0.0.5:22     203.0.113.7:51234\n"
        "0      0      10.0.0.5:22     203.0.113.9:40022\n\n"
    )
    assert count_ssh_sessions(ss) == 2
    assert count_ssh_sessions("") == 0


def fixture_usage(tmp_path: Path, name: str = "healthy-mi300x") -> FixtureUsage:
    facts = facts_from_outputs(load_fixture_profile(name).outputs)
    return FixtureUsage(facts=facts, seed="demo", control_file=tmp_path / "usage")


def test_fixture_mode_reports_varying_busy_numbers_within_the_gpu(tmp_path):
    usage = fixture_usage(tmp_path)
    samples = [usage.sample() for _ in range(12)]
    utils = [s["gpus"][0]["utilisation_pct"] for s in samples]
    assert len(set(utils)) > 3  # varies
    assert all(35 <= u <= 100 for u in utils)
    for s in samples:
        gpu = s["gpus"][0]
        assert 0 < gpu["vram_used_mib"] <= gpu["vram_total_mib"]
        assert s["ssh_sessions"] >= 1 and s["gpu_processes"] == 1


def test_fixture_mode_goes_idle_and_comes_back_on_command(tmp_path):
    usage = fixture_usage(tmp_path)
    assert usage.sample()["gpus"][0]["utilisation_pct"] > 0
    (tmp_path / "usage").write_text("idle\n")
    idle = usage.sample()
    assert idle["gpus"][0]["utilisation_pct"] == 0
    assert idle["ssh_sessions"] == 0 and idle["gpu_processes"] == 0
    (tmp_path / "usage").write_text("busy")
    assert usage.sample()["gpus"][0]["utilisation_pct"] >= 35


def test_fixture_mode_idle_after_n_heartbeats_for_the_demo(tmp_path):
    usage = fixture_usage(tmp_path, "healthy-h200")
    usage.idle_after = 2
    utils = [usage.sample()["gpus"][0]["utilisation_pct"] for _ in range(4)]
    assert utils[0] > 0 and utils[1] > 0 and utils[2:] == [0, 0]


def test_data_disk_usage_counts_like_df_and_only_on_a_mounted_volume(monkeypatch):
    stats = SimpleNamespace(f_blocks=1000, f_bfree=250, f_frsize=4096)
    monkeypatch.setattr("labgpu_agent.usage.os.statvfs", lambda path: stats)
    monkeypatch.setattr("labgpu_agent.usage.os.path.ismount", lambda path: path == "/data")

    assert data_disk_usage() == {"used_bytes": 750 * 4096, "total_bytes": 1000 * 4096}
    assert data_disk_usage("/srv") is None  # a bare directory: its numbers are the boot disk's


def test_data_disk_usage_gives_none_when_the_filesystem_cannot_be_read(monkeypatch):
    def broken(path):
        raise OSError("stale file handle")

    monkeypatch.setattr("labgpu_agent.usage.os.path.ismount", lambda path: True)
    monkeypatch.setattr("labgpu_agent.usage.os.statvfs", broken)
    assert data_disk_usage() is None
    monkeypatch.setattr(
        "labgpu_agent.usage.os.statvfs",
        lambda path: SimpleNamespace(f_blocks=0, f_bfree=0, f_frsize=4096),
    )
    assert data_disk_usage() is None


def test_data_disk_usage_of_a_real_mount_is_within_its_total():
    data = data_disk_usage("/")  # the root is always a mount point
    assert data is not None and 0 <= data["used_bytes"] <= data["total_bytes"]


def test_fixture_mode_reports_data_only_with_a_volume_and_fills_it_while_busy(tmp_path):
    facts = facts_from_outputs(load_fixture_profile("healthy-mi300x").outputs)
    control = tmp_path / "usage"
    assert "data" not in FixtureUsage(facts=facts, seed="n1").sample()

    usage = FixtureUsage(facts=facts, seed="n1", data_gb=100, control_file=control)
    first = usage.sample()["data"]
    assert first["total_bytes"] == 100 * 2**30
    assert 0.1 * first["total_bytes"] <= first["used_bytes"] <= 0.5 * first["total_bytes"]
    busy = [usage.sample()["data"]["used_bytes"] for _ in range(5)]
    assert busy == sorted(busy) and busy[-1] > first["used_bytes"]
    control.write_text("idle")
    assert usage.sample()["data"]["used_bytes"] == usage.sample()["data"]["used_bytes"]
    control.write_text("busy")
    for _ in range(1000):
        data = usage.sample()["data"]
    assert data["used_bytes"] == int(0.95 * data["total_bytes"])  # full enough to warn, no more
