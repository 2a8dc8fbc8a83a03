"""Real tool outputs published by AMD, NVIDIA and users, parsed as printed.

Each file lives under tests/fixtures/published/<tool>/ with its source URL on its first line and
in that folder's README.md; each test names the source again and checks the facts a human reads
off it. `test_every_published_fixture_has_a_test` keeps the list complete. None of these may
leave a parse problem, except the one saved precisely because the thread cut it off.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import LOCAL_FIXTURES

from labgpu_agent.parsers import ParseError, parse

PUBLISHED = LOCAL_FIXTURES / "published"


def read(relative: str) -> str:
    return (PUBLISHED / relative).read_text(encoding="utf-8")


def parse_clean(tool: str, relative: str):
    facts = parse(tool, read(relative))
    assert facts.parse_problems == [], f"{relative}: {facts.parse_problems}"
    return facts


# --- amd-smi monitor: the shape AMD's acceptance guide prints -----------------------------------


def test_amd_smi_monitor_with_bold_headers_and_single_spaces_from_the_acceptance_guide():
    """https://github.com/ROCm/system-acceptance-docs/blob/main/docs/health-checks/mi300x.rst"""
    facts = parse_clean(
        "amd-smi-monitor", "amd-smi/monitor_putm_8x_mi300x_idle_acceptance_rocm6.2.txt"
    )
    assert [g.index for g in facts.gpus] == list(range(8))
    assert [g.power_draw_w for g in facts.gpus] == [125, 121, 124, 122, 125, 124, 124, 122]
    assert [g.temperature_hotspot_c for g in facts.gpus] == [37, 36, 39, 36, 40, 36, 38, 37]
    assert facts.gpus[4].temperature_memory_c == 32 and facts.gpus[0].sm_clock_mhz == 158
    assert {g.utilisation_pct for g in facts.gpus} == {0}


def test_amd_smi_monitor_with_power_cap_and_an_elision_line():
    """https://github.com/ROCm/system-acceptance-docs/blob/main/docs/common/health-checks.md"""
    (gpu,) = parse_clean(
        "amd-smi-monitor", "amd-smi/monitor_putm_pwrcap_idle_acceptance_common.txt"
    ).gpus
    assert (gpu.power_draw_w, gpu.power_cap_w) == (251, 1000)
    assert (gpu.temperature_hotspot_c, gpu.temperature_memory_c, gpu.sm_clock_mhz) == (55, 43, 144)


def test_amd_smi_monitor_of_a_cpx_mi300x_lists_partitions_with_their_vram():
    """https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md (ROCm 6.4.1, CPX example)"""
    gpus = parse_clean("amd-smi-monitor", "amd-smi/monitor_cpx_mi300x_rocm6.4.1_changelog.txt").gpus
    assert len(gpus) == 9
    assert gpus[0].power_draw_w == 202 and gpus[0].vram_total_mib == 192 * 1024
    partitions = gpus[1:8]
    assert {g.power_draw_w for g in partitions} == {None}  # N/A, not 0
    assert {g.vram_total_mib for g in partitions} == {24 * 1024}  # `0.5/ 24.0 GB`
    assert gpus[8].sm_clock_mhz == 2104


def test_amd_smi_monitor_in_a_guest_with_the_xcp_column():
    """https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md (ROCm 7.1.0, guest monitor)"""
    (gpu,) = parse_clean(
        "amd-smi-monitor", "amd-smi/monitor_guest_xcp_rocm7.1.0_changelog.txt"
    ).gpus
    assert (gpu.index, gpu.power_draw_w, gpu.temperature_hotspot_c) == (0, 12, 40)
    assert gpu.vram_used_mib == pytest.approx(0.2 * 1024) and gpu.utilisation_pct == 8


def test_amd_smi_monitor_vram_columns():
    """https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md (ROCm 6.4.1, monitor -v)"""
    gpus = parse_clean("amd-smi-monitor", "amd-smi/monitor_vram_rocm6.4.1_changelog.txt").gpus
    assert [(g.vram_used_mib, g.vram_total_mib) for g in gpus] == [(174, 16185), (78, 425)]


def test_amd_smi_monitor_violation_table_is_read_without_inventing_readings():
    """https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md (ROCm 6.4.0, monitor --viol)"""
    gpus = parse_clean("amd-smi-monitor", "amd-smi/monitor_violation_rocm6.4.0_changelog.txt").gpus
    assert [g.index for g in gpus] == list(range(8))
    assert {g.power_draw_w for g in gpus} == {None}


# --- amd-smi xgmi --link-status ------------------------------------------------------------------


def test_amd_smi_xgmi_link_status_as_the_changelog_prints_it():
    """https://github.com/ROCm/amdsmi/blob/8e874f198dbc8176b330044b68a156c445c1718c/CHANGELOG.md
    (the `amd-smi xgmi --link-status` entry's example output: two GPUs, links 4 and 6 down, 7
    disabled, an elision line and the legend)"""
    facts = parse_clean("amd-smi-xgmi", "amd-smi/xgmi_link_status_rocm6.4.0_changelog.txt")
    assert [(g.index, g.bdf) for g in facts.gpus] == [(0, "0000:08:00.0"), (1, "0000:44:00.0")]
    states = {(link.gpu, link.link): link.state for link in facts.interconnect}
    assert len(states) == 16
    for gpu in (0, 1):
        assert [states[(gpu, n)] for n in range(8)] == ["up"] * 4 + [
            "down",
            "up",
            "down",
            "disabled",
        ]


def test_amd_smi_xgmi_link_status_per_peer_in_an_mvf_guest():
    """https://github.com/ROCm/rocm-systems/blob/develop/projects/amdsmi/CHANGELOG.md (the mVF
    fix of ROCm/rocm-systems#2053: one column per peer GPU, SELF on the diagonal, all N/A)"""
    facts = parse_clean("amd-smi-xgmi", "amd-smi/xgmi_link_status_mvf_na_rocm7.12_changelog.txt")
    assert [g.bdf for g in facts.gpus][:2] == ["0000:05:00.0", "0000:15:00.0"]
    assert len(facts.gpus) == 8 and len(facts.interconnect) == 8 * 7
    assert {link.state for link in facts.interconnect} == {"unknown"}
    # each cell is the link to the GPU of its column; no GPU has a link to itself
    assert {link.link for link in facts.interconnect if link.gpu == 3} == {0, 1, 2, 4, 5, 6, 7}


def test_amd_smi_bad_pages_in_hex_as_the_changelog_prints_it():
    """https://github.com/ROCm/rocm-systems/blob/develop/projects/amdsmi/CHANGELOG.md (ROCm
    7.11.0, "Added `--hex` flag to `amd-smi bad-pages`": one retired page, the rest N/A)"""
    facts = parse_clean("amd-smi-bad-pages", "amd-smi/bad_pages_hex_rocm7.11.0_changelog.txt")
    (gpu,) = facts.gpus
    assert (gpu.index, gpu.retired_pages, gpu.pending_retired_pages) == (0, 1, 0)
    assert gpu.unreservable_pages == 0


# --- amd-smi default view, static and metric ---------------------------------------------------


def test_amd_smi_default_view_of_eight_mi300x_under_load():
    """https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md (ROCm 7.0.0, "Default command")"""
    facts = parse_clean("amd-smi-default", "amd-smi/default_8x_mi300x_load_rocm7.0.0_changelog.txt")
    assert len(facts.gpus) == 8 and facts.rocm_version == "7.0.0"
    first, last = facts.gpus[0], facts.gpus[7]
    assert (first.bdf, first.power_draw_w, first.power_cap_w) == ("0000:0c:00.0", 734, 750)
    assert (last.index, last.bdf, last.temperature_hotspot_c) == (7, "0000:df:00.0", 62)
    assert {(g.compute_partition, g.memory_partition) for g in facts.gpus} == {("SPX", "NPS1")}
    assert facts.gpus[0].utilisation_pct == 98 and facts.gpus[0].vram_used_mib == 4976


def test_amd_smi_default_view_of_an_apu_without_a_power_cap():
    """https://github.com/ROCm/amdsmi/pull/110 (Strix Halo, AMD-SMI 26.1.0)"""
    facts = parse_clean(
        "amd-smi-default", "amd-smi/default_apu_strix_halo_rocm6.4.1_amdsmi_pr110.txt"
    )
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.power_draw_w, gpu.power_cap_w) == ("Radeon 8050S Graphics", 14, None)
    assert (gpu.compute_partition, gpu.memory_partition) == (None, None)
    assert (gpu.vram_used_mib, gpu.vram_total_mib) == (3056, 8192)
    assert facts.driver_version is None  # `Linuxver`: the banner cut short, not a version


def test_amd_smi_static_text_of_an_mi300a_from_the_cli_docs():
    """https://github.com/ROCm/amdsmi/blob/develop/docs/how-to/amdsmi-cli-tool.md"""
    facts = parse_clean("amd-smi-static", "amd-smi/static_mi300a_rocm6.4_cli_docs.txt")
    (gpu,) = facts.gpus  # the CPU: block and the `...` elisions are not GPUs
    assert (gpu.model, gpu.gfx_target, gpu.compute_units) == ("AMD Instinct MI300A", "gfx942", 228)
    assert (gpu.power_cap_w, gpu.power_max_cap_w, gpu.vram_total_mib) == (550, 550, 96434)
    assert (gpu.compute_partition, gpu.memory_partition) == ("SPX", "NPS1")
    assert facts.driver_version == "6.10.10"


def test_amd_smi_static_text_of_an_mi350x():
    """https://github.com/ROCm/rocm-systems/pull/2987"""
    facts = parse_clean("amd-smi-static", "amd-smi/static_mi350x_gfx950_rocm7_pr2987_excerpt.txt")
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.gfx_target, gpu.bdf) == ("AMD Instinct MI350X", "gfx950", "0000:05:00.0")
    assert (gpu.pcie_max_gen, gpu.pcie_max_width) == (5, 16)
    assert facts.kernel_release == "5.15.0-164-generic" and facts.driver_version == "6.18.3"


def test_amd_smi_metric_text_with_elisions_and_board_temperatures():
    """https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md (ROCm 7.1.0, `amd-smi metric`)"""
    (gpu,) = parse_clean(
        "amd-smi-metric", "amd-smi/metric_text_mi300x_rocm7.1.0_changelog.txt"
    ).gpus
    assert (gpu.power_draw_w, gpu.temperature_hotspot_c, gpu.temperature_edge_c) == (140, 37, None)
    assert (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert (gpu.ecc_correctable, gpu.ecc_uncorrectable) == (0, 0)
    assert (gpu.vram_used_mib, gpu.vram_total_mib) == (283, 196592)


def test_amd_smi_static_json_of_an_mi210_with_an_in_kernel_driver():
    """https://github.com/ROCm/device-metrics-exporter/tree/main/pkg/testrunner"""
    facts = parse_clean("amd-smi-static", "amd-smi/static_json_mi210_device_metrics_exporter.json")
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.gfx_target, gpu.compute_units) == ("AMD Instinct MI210", "gfx90a", 104)
    assert (gpu.vram_total_mib, gpu.power_cap_w, gpu.pcie_max_gen) == (65520, 300, 4)
    # `Linuxversion6.14.0-24-generic(buildd@…)`: the in-kernel driver's version is the kernel's
    assert facts.driver_version == facts.kernel_release == "6.14.0-24-generic"


def test_amd_smi_version_with_the_kernel_banner_as_driver_version():
    """https://github.com/ROCm/k8s-device-plugin/issues/157"""
    facts = parse_clean(
        "amd-smi-version", "amd-smi/version_inkernel_amdgpu_rocm6.4.0_k8s_device_plugin157.txt"
    )
    assert (facts.rocm_version, facts.driver_version) == ("6.4.0", "6.8.0-79-generic")
    assert facts.tool_versions["amd-smi"] == "25.3.0+ede62f2"


def test_amd_smi_metric_text_with_a_list_wrapped_onto_continuation_lines():
    """https://github.com/joular/powerjoular/issues/67"""
    (gpu,) = parse_clean(
        "amd-smi-metric", "amd-smi/metric_text_wrapped_lists_radeon_powerjoular67_excerpt.txt"
    ).gpus
    assert (gpu.index, gpu.utilisation_pct, gpu.power_draw_w) == (0, 0, 20)


def test_a_truncated_rocm6_json_list_is_a_parse_problem_naming_the_cut():
    """https://github.com/henrygd/beszel/issues/737 (the thread as stored ends mid-list)"""
    text = read("amd-smi/metric_json_usage_w7700_rocm6_beszel737_truncated.json")
    with pytest.raises(ParseError) as caught:
        parse("amd-smi-metric", text)
    problem = caught.value.problem
    assert problem is not None and problem.tool == "amd-smi-metric"
    assert "JSON" in problem.reason
    assert problem.line_number == len(text.splitlines())  # the line where the output stops
    assert problem.line == '"N/A",'


# --- rocm-smi -------------------------------------------------------------------------------------


def test_rocm_smi_concise_table_of_eight_mi300x():
    """https://github.com/ROCm/ROCm/issues/4021"""
    gpus = parse_clean("rocm-smi", "rocm-smi/concise_8x_mi300x_rocm6.2.3_rocm_issue4021.txt").gpus
    assert [g.index for g in gpus] == list(range(8))
    assert [g.temperature_hotspot_c for g in gpus][:3] == [48, 40, 42]  # `Temp (Junction)`
    assert {g.temperature_edge_c for g in gpus} == {None}
    assert gpus[3].power_draw_w == 150 and {g.power_cap_w for g in gpus} == {750}
    assert {(g.compute_partition, g.memory_partition) for g in gpus} == {("SPX", "NPS1")}
    assert {g.virtual_function for g in gpus} == {False}  # device id 0x74a1: bare metal


def test_rocm_smi_concise_table_in_an_sriov_guest():
    """https://github.com/ROCm/ROCm/issues/5231 (device id 0x74b5, the MI300X VF)"""
    (gpu,) = parse_clean(
        "rocm-smi", "rocm-smi/concise_mi300x_vf_sriov_rocm_smi3.0_issue5231.txt"
    ).gpus
    assert gpu.virtual_function is True
    assert (gpu.temperature_hotspot_c, gpu.power_draw_w, gpu.power_cap_w) == (39, 191, 750)
    assert gpu.sm_clock_mhz == 2105


def test_rocm_smi_concise_table_of_cpx_partitions_and_its_memory_section():
    """https://github.com/ROCm/ROCm/issues/4750"""
    gpus = {
        g.index: g
        for g in parse_clean(
            "rocm-smi", "rocm-smi/concise_cpx_mi300x_rocm6.3.3_issue4750_excerpt.txt"
        ).gpus
    }
    assert gpus[15].compute_partition == "CPX" and gpus[15].memory_partition == "NPS1"
    assert gpus[62].temperature_hotspot_c == 43
    assert gpus[0].vram_total_mib == pytest.approx(196592, abs=1)  # from `--showmeminfo`


def test_rocm_smi_concise_table_of_rocm5_with_secondary_dies():
    """https://github.com/wandb/wandb/pull/5449"""
    gpus = parse_clean("rocm-smi", "rocm-smi/concise_8x_mi250_gcd_wandb_pr5449.txt").gpus
    assert len(gpus) == 8
    assert gpus[0].temperature_edge_c == 47 and gpus[0].temperature_hotspot_c is None
    assert (gpus[0].power_draw_w, gpus[0].power_cap_w) == (91, 560)
    assert (gpus[1].power_draw_w, gpus[1].power_cap_w) == (None, None)  # N/A, 0.0W


def test_rocm_smi_id_listing_with_partition_n_a_values():
    """https://github.com/ROCm/ROCm/issues/4759"""
    gpus = parse_clean(
        "rocm-smi", "rocm-smi/id_partitioned_mi300x_rocm6.4.1_issue4759_excerpt.txt"
    ).gpus
    assert [g.model for g in gpus] == ["AMD Instinct MI300X"] * 6
    assert [g.virtual_function for g in gpus] == [False, None] * 3  # N/A id: unknown


def test_rocm_smi_product_names_of_four_virtual_functions():
    """http://brick-house.org/b79c88a7-ccd0-4bfd-8b08-3b53db05c2c4?page=8"""
    gpus = parse_clean("rocm-smi", "rocm-smi/showproductname_4x_mi300x_vf_brick_house.txt").gpus
    assert [g.model for g in gpus] == ["AMD Instinct MI300X VF"] * 4
    assert {g.virtual_function for g in gpus} == {True} and {g.gfx_target for g in gpus} == {
        "gfx942"
    }


def test_rocm_smi_showpower_secondary_dies_are_unknown_not_zero():
    """https://github.com/ROCm/rocm_smi_lib/issues/160"""
    gpus = parse_clean(
        "rocm-smi", "rocm-smi/showpower_4x_mi250_secondary_die_rocm_smi_lib160.txt"
    ).gpus
    assert [g.power_draw_w for g in gpus] == [237, None, 230, None, 220, None, 235, None]


def test_rocm_smi_showallinfo_text():
    """https://github.com/ROCm/rocm_smi_lib/issues/77"""
    facts = parse_clean("rocm-smi", "rocm-smi/showallinfo_rx6800_rocm_smi_lib77_excerpt.txt")
    (gpu,) = facts.gpus
    assert (gpu.temperature_edge_c, gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (
        67,
        76,
        68,
    )
    assert facts.driver_version == "5.6.19"


# --- rocminfo, lspci ----------------------------------------------------------------------


def test_rocminfo_of_an_mi300x_server():
    """https://github.com/ROCm/ROCm/issues/4021 (`rocminfo --support`)"""
    facts = parse_clean("rocminfo", "rocminfo/rocminfo_mi300x_rocm6.2.3_rocm_issue4021_trimmed.txt")
    (gpu,) = facts.gpus  # two Xeon agents skipped
    assert (gpu.gfx_target, gpu.compute_units, gpu.model) == ("gfx942", 304, "AMD Instinct MI300X")
    assert gpu.bdf == "0000:1b:00.0"  # BDFID 6912
    assert gpu.vram_total_mib == pytest.approx(196592, abs=1)
    assert facts.driver_version == "6.8.5" and facts.driver_loaded is True


def test_lspci_link_status_with_ok_annotations():
    """https://github.com/ROCm/system-acceptance-docs/blob/main/docs/common/health-checks.md"""
    (link,) = parse_clean(
        "lspci", "lspci/lspci_lnksta_ok_annotations_acceptance_common.txt"
    ).pcie_links
    assert (link.gen, link.width, link.downgraded, link.fatal_error) == (5, 16, False, False)


def test_lspci_listing_of_eight_mi300x():
    """https://github.com/ROCm/system-acceptance-docs/blob/main/docs/health-checks/mi300x.rst"""
    links = parse_clean("lspci", "lspci/lspci_8x_mi300x_listing_acceptance_rocm6.2.txt").pcie_links
    assert [lk.bdf for lk in links][:2] == ["0000:05:00.0", "0000:26:00.0"] and len(links) == 8
    assert all("Instinct MI300X" in (lk.description or "") for lk in links)


def test_rocm_smi_json_of_an_mi100_on_rocm6_with_old_key_spellings():
    """https://github.com/influxdata/telegraf/blob/master/plugins/inputs/amd_rocm_smi/testdata/mi100_rocm602.json"""
    facts = parse_clean("rocm-smi", "rocm-smi/json_4x_mi100_rocm6.0.2_telegraf.json")
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.bdf) == ("Arcturus GL-XL [Instinct MI100]", "0000:83:00.0")
    assert (gpu.temperature_edge_c, gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (
        53,
        55,
        53,
    )
    assert (gpu.power_draw_w, gpu.power_cap_w) == (36, 290)
    assert gpu.vram_total_mib == pytest.approx(32752) and facts.driver_version == "6.3.6"


# --- nvidia-smi ---------------------------------------------------------------------------------


def test_nvidia_smi_xml_of_an_a100_with_mig_enabled():
    """https://github.com/influxdata/telegraf/blob/master/plugins/inputs/nvidia_smi/testdata/a100-sxm4-v12.xml"""
    facts = parse_clean("nvidia-smi-xml", "nvidia-smi/q_x_a100_sxm4_mig_driver535_v12_telegraf.xml")
    (gpu,) = facts.gpus  # the four MIG devices are slices of it, not GPUs
    assert (gpu.model, gpu.bdf, gpu.index) == ("NVIDIA A100-SXM4-80GB", "0000:01:00.0", 1)
    assert (gpu.vram_total_mib, gpu.vram_used_mib) == (81920, 50)  # the GPU's, not a slice's
    assert (gpu.pcie_gen, gpu.pcie_width) == (4, 16)
    assert (gpu.power_draw_w, gpu.power_cap_w) == (67.03, 500)
    assert gpu.utilisation_pct is None  # N/A under MIG
    assert (gpu.retired_pages, gpu.pending_retired_pages) == (None, None)  # N/A, not 0
    assert (gpu.ecc_correctable, gpu.ecc_uncorrectable) == (0, 0)
    assert facts.driver_version == "535.54.03" and facts.cuda_version == "12.2"


def test_nvidia_smi_xml_v11_inside_a_vgpu_guest():
    """https://github.com/influxdata/telegraf/blob/master/plugins/inputs/nvidia_smi/testdata/tesla_p4.xml"""
    facts = parse_clean(
        "nvidia-smi-xml", "nvidia-smi/q_x_grid_p4_vgpu_guest_driver513_v11_telegraf.xml"
    )
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.virtual_function, gpu.index) == ("GRID P4-1Q", True, 0)  # minor N/A
    assert (gpu.vram_total_mib, gpu.vram_used_mib) == (1024, 807)
    assert (gpu.power_draw_w, gpu.power_cap_w, gpu.pcie_gen) == (None, None, None)  # all N/A
    assert (gpu.ecc_correctable, gpu.ecc_uncorrectable) == (None, None)  # single/double_bit N/A
    assert facts.driver_version == "513.46"


def test_plain_nvidia_smi_of_an_h200_in_mig_mode():
    """https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/master/internal/captures/linux-x86_64__nvidia-h200-mig__580.173.02.txt"""
    facts = parse_clean("nvidia-smi", "nvidia-smi/table_h200_mig_driver580_nvidia_gpu_exporter.txt")
    (gpu,) = facts.gpus  # the MIG device row is a slice, not a second GPU
    assert (gpu.model, gpu.bdf, gpu.temperature_hotspot_c) == ("NVIDIA H200", "0000:83:00.0", 38)
    assert (gpu.power_draw_w, gpu.power_cap_w) == (88, 700)
    assert (gpu.vram_used_mib, gpu.vram_total_mib) == (44, 143771)
    assert gpu.ecc_uncorrectable is None  # the cell reads `On` under MIG
    assert gpu.utilisation_pct is None and facts.driver_version == "580.173.02"


def test_nvidia_smi_q_of_an_h200_in_mig_mode_in_a_pass_through_vm():
    """https://github.com/utkuozdemir/nvidia_gpu_exporter/blob/master/internal/captures/linux-x86_64__nvidia-h200-mig__580.173.02.txt"""
    facts = parse_clean(
        "nvidia-smi-q", "nvidia-smi/q_h200_mig_passthrough_driver580_nvidia_gpu_exporter.txt"
    )
    (gpu,) = facts.gpus
    assert gpu.vram_total_mib == 143771  # the GPU's memory, not the MIG slice's 71424
    assert (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert (gpu.power_draw_w, gpu.power_cap_w, gpu.power_max_cap_w) == (90.06, 700, 700)
    assert (gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (38, 38)
    assert (gpu.ecc_correctable, gpu.ecc_uncorrectable) == (0, 0)
    assert (gpu.retired_pages, gpu.pending_retired_pages) == (None, None)  # N/A
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz) == (345, 1980) and gpu.throttle_reasons == []


# --- an AMD engineer's MI350X acceptance run -----------------------------------------------------


def test_amd_smi_monitor_of_eight_idle_mi350x_aligned_with_power_cap():
    """https://github.com/mhilgema-amd/proj/blob/main/ihc_mi350x/README.md"""
    gpus = parse_clean(
        "amd-smi-monitor", "amd-smi/monitor_putm_8x_mi350x_idle_ihc_acceptance.txt"
    ).gpus
    assert len(gpus) == 8 and {g.power_cap_w for g in gpus} == {1000}
    assert [g.power_draw_w for g in gpus] == [251, 258, 251, 257, 257, 257, 256, 257]
    assert gpus[3].temperature_hotspot_c == 61 and gpus[5].temperature_memory_c == 49


def test_rocm_smi_concise_table_of_eight_mi350x():
    """https://github.com/mhilgema-amd/proj/blob/main/ihc_mi350x/README.md"""
    gpus = parse_clean("rocm-smi", "rocm-smi/concise_8x_mi350x_rocm7.0_ihc_acceptance.txt").gpus
    assert len(gpus) == 8 and {g.power_cap_w for g in gpus} == {1000}
    assert gpus[3].temperature_hotspot_c == 67 and gpus[0].sm_clock_mhz == 157
    assert {g.virtual_function for g in gpus} == {False}  # 0x75a0: bare-metal MI350X


def test_lspci_tab_indented_excerpt_with_lnksta2_lines():
    """https://github.com/mhilgema-amd/proj/blob/main/ihc_mi350x/README.md"""
    links = parse_clean("lspci", "lspci/lspci_lnksta2_tabs_8x_mi350x_ihc_acceptance.txt").pcie_links
    with_link = [lk for lk in links if lk.width is not None]
    assert len(with_link) == 8  # LnkSta2 is not a second link
    assert all(
        (lk.gen, lk.width, lk.downgraded, lk.fatal_error) == (5, 16, False, False)
        for lk in with_link
    )


def test_every_published_fixture_has_a_test():
    """Every saved output is named by a test in this file, or for RVS in
    test_rvs_published_outputs.py (read from the source, so the check does not depend on which
    tests ran)."""
    present = {
        str(p.relative_to(PUBLISHED))
        for p in PUBLISHED.rglob("*")
        if p.is_file() and p.name != "README.md"
    }
    named = set(
        re.findall(r'"([\w.-]+/[\w.-]+\.(?:txt|json|xml|csv))"', Path(__file__).read_text())
    )
    rvs_tests = Path(__file__).with_name("test_rvs_published_outputs.py").read_text()
    named |= {"rvs/" + n for n in re.findall(r'"([\w.-]+\.txt)"', rvs_tests)}
    assert present - named == set()
