"""Every recorded tool output in ../shared/fixtures is parsed, and the facts it holds come out.

The files are read in place (never copied into the project). Each test names the facts a human
reads off the file; `test_every_shared_fixture_has_a_parser_test` keeps the list complete.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_fixtures_dir

from labgpu_agent.parsers import parse

COVERED = {
    "amd/amd-smi_default_mi300x-vf_digitalocean_rocm7.2.4.txt",
    "amd/amd-smi_list_static-asic_ecc-blocks_mi300-series_rocm6.x_changelog.txt",
    "amd/amd-smi_metric_json_mi300x_rocm7.0.2.txt",
    "amd/amd-smi_static_mi300a_gfx942_rocm7.14_docs.txt",
    "amd/lspci_vvv_lnksta_mi300x_amd_acceptance.txt",
    "amd/rocm-smi_json_mi300x_rocm7.0.2.txt",
    "amd/rocm-smi_showall_json_mi250.txt",
    "amd/rocminfo_gfx942_mi300x-vf_digitalocean_rocm7.2.4.txt",
    "amd/rvs_gst_mi355x_rocm7.2.1.txt",
    "nvidia/dcgmi_diag_r2_a100_dcgm3.3.3.txt",
    "nvidia/nvidia-smi_q_h100_load_driver590.txt",
    "nvidia/nvidia-smi_q_x_h200_driver580.xml",
    "nvidia/nvidia-smi_query-gpu_csv_h100_driver590.txt",
    "nvidia/nvidia-smi_query-gpu_csv_h200_driver580.csv",
}


def test_every_shared_fixture_has_a_parser_test():
    root = shared_fixtures_dir()
    if not root.is_dir():
        pytest.skip(f"{root} not found (../shared is absent on a fresh clone)")
    present = {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != "README.md"
    }
    assert present - COVERED == set(), "new recorded outputs need a parser test"


TOOL_OF = {
    "amd-smi_default": "amd-smi-default",
    "amd-smi_list": "amd-smi-list",
    "amd-smi_metric": "amd-smi-metric",
    "amd-smi_static": "amd-smi-static",
    "lspci": "lspci",
    "rocm-smi": "rocm-smi",
    "rocminfo": "rocminfo",
    "rvs": "rvs",
    "dcgmi": "dcgmi-diag",
    "nvidia-smi_q_h100": "nvidia-smi-q",
    "nvidia-smi_q_x": "nvidia-smi-xml",
    "nvidia-smi_query": "nvidia-smi-csv",
}


@pytest.mark.parametrize("relative", sorted(COVERED))
def test_every_shared_recording_parses_without_a_parse_problem(shared_fixture, relative):
    """The echoed command above a capture (`amd-smi`, `~$ amd-smi static`) is not output."""
    name = relative.split("/")[1]
    tool = next(t for prefix, t in TOOL_OF.items() if name.startswith(prefix))
    assert parse(tool, shared_fixture(relative)).parse_problems == []


def test_amd_smi_default_view_of_a_digitalocean_mi300x_vf(shared_fixture):
    facts = parse(
        "amd-smi-default",
        shared_fixture("amd/amd-smi_default_mi300x-vf_digitalocean_rocm7.2.4.txt"),
    )
    (gpu,) = facts.gpus
    assert gpu.model == "AMD Instinct MI300X VF" and gpu.virtual_function is True
    assert gpu.bdf == "0000:83:00.0" and gpu.index == 0
    assert gpu.temperature_hotspot_c == 37 and gpu.ecc_uncorrectable == 0
    assert (gpu.power_draw_w, gpu.power_cap_w) == (160, 750)
    assert (gpu.vram_used_mib, gpu.vram_total_mib) == (285, 196288)
    assert (gpu.compute_partition, gpu.memory_partition) == ("SPX", "NPS1")
    assert facts.rocm_version == "7.2.4" and facts.driver_version == "6.16.13"
    assert facts.platform == "Linux Guest" and facts.driver_loaded is True


def test_amd_smi_list_static_asic_and_ecc_blocks_of_two_mi308x(shared_fixture):
    text = shared_fixture(
        "amd/amd-smi_list_static-asic_ecc-blocks_mi300-series_rocm6.x_changelog.txt"
    )
    facts = parse("amd-smi-list", text)
    assert [g.bdf for g in facts.gpus] == ["0000:23:00.0", "0000:26:00.0"]
    assert facts.gpus[0].uuid is None  # `<redacted>` is not a UUID
    first = facts.gpus[0]
    assert first.model == "MI308X" and first.gfx_target == "gfx942"
    assert first.compute_units == 20  # a partitioned MI308X: few CUs per logical GPU
    assert (first.ecc_correctable, first.ecc_uncorrectable, first.ecc_deferred) == (0, 0, 0)
    assert facts.gpus[1].model is None  # the sample trims static/metric to GPU 0


def test_amd_smi_metric_json_trimmed_mi300x_rocm7(shared_fixture):
    facts = parse("amd-smi-metric", shared_fixture("amd/amd-smi_metric_json_mi300x_rocm7.0.2.txt"))
    (gpu,) = facts.gpus
    assert gpu.temperature_edge_c is None  # "N/A" on MI300X: only hotspot and memory exist
    assert (gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (45, 38)
    assert gpu.power_draw_w == 158 and gpu.power_cap_w is None  # no cap in metric output
    assert gpu.utilisation_pct == 0
    assert gpu.ecc_uncorrectable is None  # the ecc block was trimmed away: unknown, not zero


def test_amd_smi_static_text_of_an_mi300a(shared_fixture):
    facts = parse(
        "amd-smi-static", shared_fixture("amd/amd-smi_static_mi300a_gfx942_rocm7.14_docs.txt")
    )
    (gpu,) = facts.gpus  # the CPU: block is not a GPU
    assert gpu.model == "AMD Instinct MI300A" and gpu.gfx_target == "gfx942"
    assert gpu.compute_units == 228 and gpu.bdf == "0000:01:00.0"
    assert (gpu.pcie_max_gen, gpu.pcie_max_width) == (5, 16)
    assert gpu.vram_total_mib == 96432
    assert gpu.power_max_cap_w == 550 and gpu.power_cap_w is None  # 0 W socket limit = unset
    assert facts.driver_name == "amdgpu" and facts.driver_version == "6.19.4"
    assert facts.kernel_release == "5.15.0-generic"


def test_lspci_link_status_excerpt_of_eight_mi300x(shared_fixture):
    facts = parse("lspci", shared_fixture("amd/lspci_vvv_lnksta_mi300x_amd_acceptance.txt"))
    links = [lk for lk in facts.pcie_links if lk.width is not None]
    assert len(links) == 8
    assert all((lk.gen, lk.speed_gts, lk.width) == (5, 32.0, 16) for lk in links)
    assert all(lk.fatal_error is False and lk.downgraded is False for lk in links)
    vf = next(lk for lk in facts.pcie_links if lk.bdf == "0000:85:02.0")
    assert "MI300X VF" in (vf.description or "") and vf.kernel_driver == "vfio-pci"


def test_rocm_smi_json_mi300x_has_socket_power_and_no_edge_sensor(shared_fixture):
    facts = parse("rocm-smi", shared_fixture("amd/rocm-smi_json_mi300x_rocm7.0.2.txt"))
    (gpu,) = facts.gpus
    assert gpu.temperature_edge_c is None
    assert (gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (45, 38)
    assert (gpu.power_draw_w, gpu.power_cap_w) == (159, 750)
    assert gpu.vram_total_mib == pytest.approx(196288, abs=1)  # 205822885888 B
    assert gpu.vram_used_mib == pytest.approx(285.8, abs=0.1)


def test_rocm_smi_showall_json_mi250_legacy_keys(shared_fixture):
    facts = parse("rocm-smi", shared_fixture("amd/rocm-smi_showall_json_mi250.txt"))
    (gpu,) = facts.gpus
    assert gpu.model == "AMD INSTINCT MI250 (MCM) OAM AC MBA"
    assert gpu.bdf == "0000:2f:00.0"
    assert (gpu.temperature_edge_c, gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (
        32,
        35,
        43,
    )
    assert (gpu.power_draw_w, gpu.power_cap_w) == (89, 560)  # "Average Graphics Package Power"
    assert facts.driver_version == "6.2.4"


def test_rocminfo_of_a_digitalocean_mi300x_vf(shared_fixture):
    facts = parse(
        "rocminfo", shared_fixture("amd/rocminfo_gfx942_mi300x-vf_digitalocean_rocm7.2.4.txt")
    )
    (gpu,) = facts.gpus  # the Xeon agent is skipped
    assert gpu.gfx_target == "gfx942" and gpu.compute_units == 304
    assert gpu.model == "AMD Instinct MI300X VF" and gpu.virtual_function is True
    assert gpu.bdf == "0000:83:00.0"  # BDFID 33536, the same address amd-smi prints
    assert gpu.vram_total_mib == pytest.approx(196288)  # 200998912 KB coarse-grained pool
    assert facts.driver_loaded is True and facts.driver_version == "6.16.13"


def test_rvs_gst_on_eight_mi355x(shared_fixture):
    facts = parse("rvs", shared_fixture("amd/rvs_gst_mi355x_rocm7.2.1.txt"))
    per_gpu = [d for d in facts.diagnostics if " gpu " in d.test]
    assert per_gpu and all(d.result == "pass" for d in per_gpu)
    assert per_gpu[0].detail == "1063.6 TFLOPS"
    summary = [d for d in facts.diagnostics if d.test == "gst-Tflops-2K2K2K-trig-fp4"]
    assert [d.result for d in summary] == ["pass"]
    assert facts.rocm_version == "7.2.1"


def test_dcgmi_diag_r2_all_pass_on_a100(shared_fixture):
    facts = parse("dcgmi-diag", shared_fixture("nvidia/dcgmi_diag_r2_a100_dcgm3.3.3.txt"))
    results = {d.test: d.result for d in facts.diagnostics}
    assert results["PCIe"] == "pass" and results["GPU Memory"] == "pass"
    assert results["Page Retirement/Row Remap"] == "pass"
    assert set(results.values()) == {"pass"}
    assert facts.driver_version == "535.104.12"


def test_nvidia_smi_q_text_of_an_h100_under_load(shared_fixture):
    facts = parse("nvidia-smi-q", shared_fixture("nvidia/nvidia-smi_q_h100_load_driver590.txt"))
    (gpu,) = facts.gpus
    assert gpu.model == "NVIDIA H100 80GB HBM3" and gpu.bdf == "0000:00:09.0"
    assert (gpu.pcie_gen, gpu.pcie_width, gpu.pcie_max_width) == (5, 16, 16)
    assert (gpu.vram_total_mib, gpu.vram_used_mib) == (81559, 19818)
    assert gpu.utilisation_pct == 100 and gpu.temperature_hotspot_c == 59
    assert gpu.temperature_memory_c == 55
    assert (gpu.power_draw_w, gpu.power_cap_w) == (629.45, 700)
    assert (gpu.ecc_uncorrectable, gpu.retired_pages, gpu.pending_retired_pages) == (0, 0, 0)
    assert gpu.sm_clock_mhz == 1980 and gpu.throttle_reasons == []
    assert facts.driver_version == "590.48.01" and facts.cuda_version == "13.1"


def test_nvidia_smi_q_x_of_an_h200(shared_fixture):
    facts = parse("nvidia-smi-xml", shared_fixture("nvidia/nvidia-smi_q_x_h200_driver580.xml"))
    (gpu,) = facts.gpus
    assert gpu.model == "NVIDIA H200" and gpu.bdf == "0000:00:06.0"
    assert gpu.uuid == "GPU-6ef1b346-de8f-8ace-28a7-48f50ae419c2"
    assert (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert gpu.vram_total_mib == 143771 and gpu.utilisation_pct == 45
    assert (gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (40, 43)
    assert gpu.power_cap_w == 700 and gpu.power_draw_w == pytest.approx(129.69)
    assert (gpu.ecc_uncorrectable, gpu.retired_pages, gpu.pending_retired_pages) == (0, 0, 0)
    assert facts.driver_version == "580.159.04" and facts.cuda_version == "13.0"


def test_nvidia_smi_query_csv_of_an_h100_beside_its_default_table(shared_fixture):
    text = shared_fixture("nvidia/nvidia-smi_query-gpu_csv_h100_driver590.txt")
    (gpu,) = parse("nvidia-smi-csv", text).gpus  # the default table around it is ignored
    assert gpu.model == "NVIDIA H100 80GB HBM3" and gpu.compute_capability == "9.0"
    assert (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert (gpu.vram_total_mib, gpu.vram_used_mib) == (81559, 19818)
    assert gpu.power_draw_w == 631.95 and gpu.power_cap_w == 700
    assert gpu.ecc_uncorrectable == 0 and gpu.retired_pages == 0
    assert gpu.sm_clock_mhz == 1980 and gpu.throttle_reasons == []


def test_nvidia_smi_query_csv_of_an_h200(shared_fixture):
    text = shared_fixture("nvidia/nvidia-smi_query-gpu_csv_h200_driver580.csv")
    (gpu,) = parse("nvidia-smi-csv", text).gpus
    assert gpu.model == "NVIDIA H200" and gpu.bdf == "0000:00:06.0"
    assert (gpu.pcie_gen, gpu.pcie_width, gpu.pcie_max_width) == (5, 16, 16)
    assert gpu.temperature_hotspot_c == 40 and gpu.power_draw_w == 129.84
    assert gpu.vram_total_mib == 143771 and gpu.utilisation_pct == 45
    assert gpu.sm_clock_mhz == 1980 and gpu.sm_clock_max_mhz == 1980


def test_no_recorded_output_is_copied_into_the_project():
    """The shared recordings are read in place; a copy would drift from the original."""
    root = shared_fixtures_dir()
    if not root.is_dir():
        pytest.skip(f"{root} not found (../shared is absent on a fresh clone)")
    shared_names = {p.name for p in root.rglob("*") if p.is_file() and p.name != "README.md"}
    agent_dir = Path(__file__).resolve().parents[1]
    ours = {p.name for p in agent_dir.rglob("*") if p.is_file() and ".venv" not in p.parts}
    assert ours & shared_names == set()
