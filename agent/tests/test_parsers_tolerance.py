"""Parsers tolerate what real nodes print: N/A fields, partitions, trimmed and failed output."""

from __future__ import annotations

import json

import pytest
from conftest import LOCAL_FIXTURES

from labgpu_agent.collect import RawOutput, facts_from_outputs
from labgpu_agent.parsers import ParseError, parse

# `amd-smi list` on an MI300X in CPX mode: one device, eight logical GPUs of 38 CUs each.
CPX_LIST = "\n".join(
    f"GPU: {i}\n    BDF: 0000:0{5 + i // 8}:00.{i % 8}\n    UUID: N/A\n    PARTITION_ID: {i}\n"
    for i in range(8)
)


def test_partitioned_gpu_lists_one_logical_gpu_per_partition():
    static = json.dumps(
        [
            {
                "gpu": i,
                "asic": {
                    "market_name": "AMD Instinct MI300X",
                    "num_compute_units": 38,
                    "target_graphics_version": "gfx942",
                },
                "partition": {"compute_partition": "CPX", "memory_partition": "NPS1"},
            }
            for i in range(8)
        ]
    )
    facts = facts_from_outputs(
        {"amd-smi-static": RawOutput(static), "amd-smi-list": RawOutput(CPX_LIST)}
    )
    assert len(facts.gpus) == 8
    assert {g.compute_partition for g in facts.gpus} == {"CPX"}
    assert {g.compute_units for g in facts.gpus} == {38}
    assert facts.gpus[7].bdf == "0000:05:00.7"


def test_amd_smi_rocm6_list_shape_without_gpu_data_wrapper():
    text = json.dumps(
        [
            {
                "gpu": 0,
                "temperature": {"hotspot": 51, "edge": "N/A"},
                "power": {"socket_power": "N/A"},
            }
        ]
    )
    (gpu,) = parse("amd-smi-metric", text).gpus
    assert gpu.temperature_hotspot_c == 51 and gpu.temperature_edge_c is None
    assert gpu.power_draw_w is None


def test_amd_smi_monitor_table():
    text = (
        "GPU  POWER   GPU_T   MEM_T   GFX_CLK   GFX%   MEM%   ENC%   DEC%      VRAM_USAGE\n"
        "  0  171 W   42 °C   34 °C   132 MHz    0 %    0 %    0 %    0 %    0.3/192.0 GB\n"
    )
    (gpu,) = parse("amd-smi-monitor", text).gpus
    assert (gpu.power_draw_w, gpu.temperature_hotspot_c, gpu.temperature_memory_c) == (171, 42, 34)
    assert gpu.vram_total_mib == 192 * 1024


def test_rocminfo_without_the_kernel_driver():
    facts = parse("rocminfo", "ROCk module is NOT loaded, possibly no GPU devices\n")
    assert facts.gpus == [] and facts.driver_loaded is False


def test_a_failed_tool_is_recorded_as_an_error_not_a_crash():
    facts = facts_from_outputs(
        {
            "amd-smi-static": RawOutput("ERROR: Unable to detect any GPU devices", exit_code=255),
            "nvidia-smi-xml": RawOutput(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
                exit_code=9,
            ),
            "rocminfo": RawOutput(None),
        }
    )
    assert facts.gpus == []
    assert facts.sources["rocminfo"] == "missing"
    assert facts.sources["nvidia-smi-xml"].startswith("error:")
    # The failed tool's own words are kept; an error message is not a parse problem to report.
    assert facts.sources["amd-smi-static"] == (
        "error: exit 255: ERROR: Unable to detect any GPU devices"
    )
    assert facts.parse_problems == []


def test_unknown_tool_name_is_a_parse_error():
    with pytest.raises(ParseError, match="unknown tool"):
        parse("gpu-z", "")


def test_older_nvidia_driver_spells_throttle_reasons_the_old_way():
    text = (
        "index, name, clocks_throttle_reasons.hw_thermal_slowdown, temperature.gpu\n"
        "0, NVIDIA A100-SXM4-80GB, Active, 88\n"
    )
    (gpu,) = parse("nvidia-smi-csv", text).gpus
    assert gpu.throttle_reasons == ["hw_thermal_slowdown"] and gpu.temperature_hotspot_c == 88


def test_nvidia_smi_q_text_recorded_on_the_h200():
    text = (LOCAL_FIXTURES / "h200" / "captures" / "nvidia-smi-q.txt").read_text()
    (gpu,) = parse("nvidia-smi-q", text).gpus
    assert gpu.model == "NVIDIA H200" and (gpu.pcie_gen, gpu.pcie_width) == (5, 16)
    assert gpu.vram_total_mib == 143771 and gpu.power_cap_w == 700


def test_the_agent_query_csv_recorded_on_the_h200_reports_compute_capability():
    text = (LOCAL_FIXTURES / "h200" / "captures" / "nvidia-smi-query.csv").read_text()
    (gpu,) = parse("nvidia-smi-csv", text).gpus
    assert gpu.compute_capability == "9.0" and gpu.pending_retired_pages == 0
    assert gpu.retired_pages == 0  # retired_pages.* are [N/A] on Hopper; remapped rows count


def test_lspci_with_pciutils_311_annotations_and_a_fatal_error():
    text = (
        "c1:00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Device 74a1\n"
        "\t\tDevSta:\tCorrErr+ NonFatalErr- FatalErr+ UnsupReq- AuxPwr- TransPend-\n"
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)\n"
        "\tKernel driver in use: amdgpu\n"
    )
    (link,) = parse("lspci", text).pcie_links
    assert (link.bdf, link.gen, link.width, link.max_width) == ("0000:c1:00.0", 4, 8, 16)
    assert link.downgraded is True and link.fatal_error is True
    assert link.kernel_driver == "amdgpu"


def test_device_nodes_need_group_membership_unless_world_writable():
    listing = (
        "crw-rw---- 1 root render 235, 0 Nov 29 20:14 /dev/kfd\n\n/dev/dri:\n"
        "crw-rw---- 1 root render 226, 128 Nov 29 20:14 renderD128\n"
    )
    from labgpu_agent.parsers.system import parse_devices

    outsider = parse_devices(listing, groups={"users"}, uid=1000).device_nodes
    member = parse_devices(listing, groups={"render"}, uid=1000).device_nodes
    assert [n.path for n in outsider] == ["/dev/kfd", "/dev/dri/renderD128"]
    assert not any(n.accessible for n in outsider)
    assert all(n.accessible for n in member)


def test_plain_nvidia_smi_table_recorded_on_the_h200():
    facts = parse(
        "nvidia-smi", (LOCAL_FIXTURES / "h200" / "captures" / "nvidia-smi.txt").read_text()
    )
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.bdf, gpu.temperature_hotspot_c) == ("NVIDIA H200", "0000:00:06.0", 41)
    assert (gpu.power_draw_w, gpu.power_cap_w, gpu.vram_total_mib) == (80, 700, 143771)
    assert facts.driver_version == "580.159.04" and facts.parse_problems == []


def test_amd_smi_metric_csv_with_the_watch_timestamp_column():
    """Header shape as published in https://github.com/SemiAnalysisAI/InferenceX/issues/890
    (`amd-smi metric -w … --csv`: `timestamp,gpu,gfx_activity,…,socket_power,…`); the thread
    shows the header only, so the rows here are written to that header."""
    text = (
        "timestamp,gpu,gfx_activity,umc_activity,mm_activity,socket_power,gfx_voltage,"
        "throttle_status,gfx_0_clk,hotspot,mem,total_correctable_count,"
        "total_uncorrectable_count,total_deferred_count,used_vram,total_vram\r\n"
        "1741400000,0,98,40,N/A,734,N/A,N/A,2100,71,58,0,0,0,4976,196592\r\n"
        "1741400000,1,97,41,N/A,N/A,N/A,N/A,2100,70,57,50000,0,3,4976,196592\r\n"
    )
    facts = parse("amd-smi-metric", text)
    assert facts.parse_problems == []
    first, second = facts.gpus
    assert (first.index, first.utilisation_pct, first.power_draw_w) == (0, 98, 734)
    assert (first.temperature_hotspot_c, first.temperature_memory_c) == (71, 58)
    assert second.power_draw_w is None  # N/A
    assert (second.ecc_correctable, second.ecc_deferred) == (50000, 3)
    assert (second.vram_used_mib, second.vram_total_mib) == (4976, 196592)


def test_amd_smi_static_csv_reads_socket_power_as_the_cap():
    text = "gpu,market_name,target_graphics_version,num_compute_units,max_power,socket_power\n"
    text += "0,AMD Instinct MI300X,gfx942,304,750,750\n0,garbled\n"
    facts = parse("amd-smi-static", text)
    (gpu,) = facts.gpus
    assert (gpu.model, gpu.gfx_target, gpu.compute_units) == ("AMD Instinct MI300X", "gfx942", 304)
    assert (gpu.power_cap_w, gpu.power_draw_w) == (750, None)
    (problem,) = facts.parse_problems
    assert (problem.line_number, problem.line) == (3, "0,garbled")


def test_rocm_smi_csv_blocks_one_per_show_option():
    """`rocm-smi --showuse --showtemp --csv` prints one `device,…` block per option."""
    text = (
        "device,GPU use (%)\ncard0,42\ncard1,17\n\n"
        "device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C)\n"
        "card0,72.5,80.0\ncard1,69.0,N/A\n\n"
        "device,Average Graphics Package Power (W)\ncard0,210.0\ncard1,198.5\n"
    )
    facts = parse("rocm-smi", text)
    assert facts.parse_problems == []
    card0, card1 = facts.gpus
    assert (card0.utilisation_pct, card0.temperature_edge_c, card0.temperature_hotspot_c) == (
        42,
        72.5,
        80,
    )
    assert (card1.power_draw_w, card1.temperature_hotspot_c) == (198.5, None)


def test_amd_smi_rocm6_json_list_with_value_unit_objects_from_the_published_excerpt():
    """The ROCm 6 `amd-smi metric -u --json` published in
    https://github.com/henrygd/beszel/issues/737 is cut off inside `jpeg_activity`; closing it
    right before that list (the only change) gives the real first GPU object to read."""
    text = (
        LOCAL_FIXTURES / "published/amd-smi/metric_json_usage_w7700_rocm6_beszel737_truncated.json"
    ).read_text()
    head = text[: text.index('"jpeg_activity"')].rstrip().rstrip(",")
    facts = parse("amd-smi-metric", head + "\n        }\n    }\n]\n")
    (gpu,) = facts.gpus
    assert (gpu.index, gpu.utilisation_pct) == (0, 42)  # {"value": 42, "unit": "%"}
    assert facts.parse_problems == []


def test_amd_smi_json_after_a_warning_banner_and_the_watch_banner():
    text = (
        "WARNING: User is missing the following required groups: render, video. "
        "Please add user to these groups.\n"
        "'CTRL' + 'C' to stop watching output:\n"
        '[{"timestamp": 1769014607, "gpu": 0, "usage": "N/A",'
        ' "power": {"socket_power": {"value": 140, "unit": "W"}}}]\n'
        '[{"timestamp": 1769014608, "gpu": 0, "usage": "N/A",'
        ' "power": {"socket_power": {"value": 141, "unit": "W"}}}]\n'
    )
    facts = parse("amd-smi-metric", text)
    assert facts.parse_problems == []
    assert [g.power_draw_w for g in facts.gpus] == [140, 141]  # one document per interval


def test_rocm_smi_concise_rows_of_secondary_partitions_with_n_a_ids_and_modes():
    """rocm-smi 6.4.1 prints N/A for most partition values of secondary partitions
    (https://github.com/ROCm/ROCm/issues/4759); they are unknown, not a device id or a mode."""
    lines = [
        "Device  Node  IDs              Temp        Power     Partitions          SCLK    "
        "MCLK    Fan  Perf  PwrCap  VRAM%  GPU%",
        "              (DID,     GUID)  (Junction)  (Socket)  (Mem, Compute, ID)",
        "=" * 60,
        "0       2     0x74a1,   10931  48.0°C      145.0W    NPS1, CPX, 0        132Mhz  "
        "900Mhz  0%   auto  750.0W  0%     0%",
        "1       3     N/A,      6834   N/A         N/A       N/A, N/A, 1         N/A     "
        "N/A     0%   auto  N/A     0%     0%",
    ]
    text = "\n".join(lines) + "\n"
    facts = parse("rocm-smi", text)
    assert facts.parse_problems == []
    first, second = facts.gpus
    assert (first.compute_partition, first.virtual_function) == ("CPX", False)
    assert (second.compute_partition, second.memory_partition) == (None, None)
    assert (second.virtual_function, second.temperature_hotspot_c, second.power_cap_w) == (
        None,
        None,
        None,
    )


def test_a_flooded_kernel_log_keeps_the_report_small_and_the_newest_errors():
    from labgpu_agent.parsers.system import MAX_KERNEL_LOG_LINES, parse_dmesg

    flood = "\n".join(
        f"[{n}.0] NVRM: Xid (PCI:0000:18:00): 79, GPU has fallen off the bus {'x' * 5000}"
        for n in range(100_000)
    )
    facts = parse_dmesg(flood)
    assert len(facts.kernel_log_errors) == MAX_KERNEL_LOG_LINES
    assert facts.kernel_log_errors[-1].startswith("[99999.0]")
    assert sum(len(line) for line in facts.kernel_log_errors) < 64_000
