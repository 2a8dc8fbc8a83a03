"""Each check as a specification: the facts that trigger it, its severity, its remediation."""

from __future__ import annotations

from dataclasses import replace

from labgpu_agent.checks import check_smoke, run_checks, verdict_of
from labgpu_agent.facts import DeviceNode, Facts, GpuFacts, PcieLink
from labgpu_agent.profiles import get_profile
from labgpu_agent.smoke.base import SmokeResult

MI300X = get_profile("mi300x")
MI350X = get_profile("mi350x")
H200 = get_profile("h200")


def healthy_mi300x(**changes: object) -> GpuFacts:
    gpu = GpuFacts(
        index=0,
        bdf="0000:83:00.0",
        vendor="amd",
        model="AMD Instinct MI300X",
        gfx_target="gfx942",
        compute_units=304,
        vram_total_mib=196288,
        temperature_hotspot_c=45,
        power_cap_w=750,
        pcie_gen=5,
        pcie_width=16,
        ecc_uncorrectable=0,
        virtual_function=False,
    )
    return replace(gpu, **changes)


def amd_node(*gpus: GpuFacts, **changes: object) -> Facts:
    facts = Facts(
        gpus=list(gpus) or [healthy_mi300x()],
        driver_loaded=True,
        rocm_version="7.2.4",
        kernel_release="6.8.0-71-generic",
        device_nodes=[
            DeviceNode(path="/dev/kfd", exists=True, accessible=True),
            DeviceNode(path="/dev/dri/renderD128", exists=True, accessible=True),
        ],
        sources={"devices": "ok"},
    )
    return replace(facts, **changes)


def ids(facts: Facts, profile=MI300X, smoke=None) -> dict[str, str]:
    return {f.id: f.severity for f in run_checks(facts, profile, smoke)}


def test_a_healthy_node_passes_with_no_findings():
    findings = run_checks(amd_node(), MI300X)
    assert findings == [] and verdict_of(findings) == "pass"


def test_missing_driver_fails_and_says_how_to_load_it():
    facts = Facts(driver_loaded=False, kernel_modules=[], kernel_release="5.4.0-150-generic")
    (driver,) = [f for f in run_checks(facts, MI300X) if f.id == "driver.not_loaded"]
    assert driver.severity == "fail"
    for hint in ("5.15", "modprobe amdgpu", "render", "/dev/kfd"):
        assert hint in driver.remediation
    assert ids(facts)["kernel.too_old"] == "fail"


def test_wrong_gpu_count_fails():
    assert ids(amd_node(), get_profile("mi300x:8"))["gpu.count"] == "fail"


def test_cpx_partitions_count_as_one_physical_gpu_each():
    parts = [
        healthy_mi300x(index=i, bdf=None, compute_units=38, compute_partition="CPX")
        for i in range(8)
    ]
    assert ids(amd_node(*parts)) == {}
    assert ids(amd_node(*parts[:7]))["gpu.count"] == "fail"


def test_wrong_model_and_gfx_target_fail():
    found = ids(amd_node(healthy_mi300x(model="AMD Instinct MI250X", gfx_target="gfx90a")))
    assert found["gpu.model"] == "fail" and found["gpu.gfx_target"] == "fail"


def test_mi350x_needs_rocm_7():
    gpu = healthy_mi300x(
        model="AMD Instinct MI350X",
        gfx_target="gfx950",
        compute_units=256,
        vram_total_mib=294912,
        power_cap_w=1000,
    )
    assert ids(amd_node(gpu, rocm_version="6.4.1"), MI350X) == {"rocm.too_old": "fail"}
    assert ids(amd_node(gpu, rocm_version="7.0.2"), MI350X) == {}


def test_hsa_override_to_gfx900_on_an_instinct_card_fails():
    found = run_checks(amd_node(environment={"HSA_OVERRIDE_GFX_VERSION": "9.0.0"}), MI300X)
    (override,) = [f for f in found if f.id == "env.hsa_override_gfx_version"]
    assert override.severity == "fail" and "gfx900" in override.message
    matching = amd_node(environment={"HSA_OVERRIDE_GFX_VERSION": "9.4.2"})
    assert ids(matching) == {"env.hsa_override_gfx_version": "info"}


def test_inaccessible_device_nodes_fail_with_the_groups_to_join():
    nodes = [
        DeviceNode("/dev/kfd", exists=True, accessible=False, mode="crw-rw----", group="render"),
        DeviceNode("/dev/dri/renderD128", exists=True, accessible=True),
    ]
    (finding,) = run_checks(amd_node(device_nodes=nodes), MI300X)
    assert (
        finding.id == "devices.inaccessible" and "usermod -aG render,video" in finding.remediation
    )


def test_narrow_pcie_link_fails_on_bare_metal_but_only_warns_in_an_sriov_guest():
    narrow = healthy_mi300x(pcie_width=8, pcie_gen=4)
    assert ids(amd_node(narrow)) == {"pcie.link_narrow": "fail", "pcie.link_slow": "warn"}
    vf = replace(narrow, virtual_function=True)
    assert ids(amd_node(vf)) == {"pcie.link_narrow": "warn", "pcie.link_slow": "warn"}


def test_lspci_links_are_judged_when_no_gpu_tool_reports_one():
    facts = amd_node(
        healthy_mi300x(pcie_width=None, pcie_gen=None),
        pcie_links=[PcieLink(bdf="0000:05:00.0", gen=5, width=4, downgraded=True)],
    )
    assert ids(facts) == {"pcie.link_narrow": "fail", "pcie.link_downgraded": "warn"}


def test_power_cap_below_board_power_warns_and_far_below_fails():
    assert ids(amd_node(healthy_mi300x(power_cap_w=650))) == {"power.capped": "warn"}
    assert ids(amd_node(healthy_mi300x(power_cap_w=500))) == {"power.capped": "fail"}


def test_temperature_over_the_limit_fails_and_near_it_warns():
    assert ids(amd_node(healthy_mi300x(temperature_hotspot_c=90))) == {"thermal.over_limit": "fail"}
    assert ids(amd_node(healthy_mi300x(temperature_hotspot_c=82))) == {"thermal.near_limit": "warn"}


def test_uncorrectable_ecc_and_pending_retirement_fail_retired_pages_warn():
    found = ids(
        amd_node(healthy_mi300x(ecc_uncorrectable=3, retired_pages=2, pending_retired_pages=1))
    )
    assert found == {
        "ecc.uncorrectable": "fail",
        "ecc.pending_retirement": "fail",
        "ecc.retired_pages": "warn",
    }


def test_kernel_log_gpu_errors_warn_and_a_gpu_off_the_bus_fails():
    assert ids(amd_node(kernel_log_errors=["amdgpu: ring gfx_0.0.0 timeout"])) == {
        "kernel_log.gpu_errors": "warn"
    }
    fallen = ["NVRM: Xid (PCI:0000:00:07): 79, GPU has fallen off the bus."]
    assert ids(amd_node(kernel_log_errors=fallen)) == {"xid.79": "fail"}


def test_throughput_under_the_baseline_warns_and_far_under_fails():
    def matmul(value: float) -> SmokeResult:
        return SmokeResult(
            name="matmul",
            status="passed",
            metric="bf16_tflops",
            value=value,
            unit="TFLOP/s",
            baseline=790.0,
        )

    def found(value: float) -> dict[str, str]:
        return {f.id: f.severity for f in check_smoke([matmul(value)], H200)}

    assert found(780) == {}
    assert found(600) == {"smoke.matmul.below_baseline": "warn"}
    assert found(300) == {"smoke.matmul.below_baseline": "fail"}


def test_skipped_smoke_is_information_and_a_failed_one_fails_the_node():
    skipped = SmokeResult(
        name="sdxl", status="skipped", metric="images_per_s", reason="PyTorch is not installed"
    )
    failed = SmokeResult(
        name="llm", status="failed", metric="tokens_per_s_batch1", reason="non-finite logits"
    )
    found = ids(amd_node(), MI300X, [skipped, failed])
    assert found == {"smoke.sdxl.skipped": "info", "smoke.llm.failed": "fail"}


def test_profiles_carry_design_hard_facts():
    assert (MI300X.gfx_target, MI300X.compute_units, MI300X.vram_gib) == ("gfx942", 304, 192)
    assert get_profile("mi325x").vram_gib == 256
    assert (MI350X.gfx_target, MI350X.compute_units, MI350X.min_rocm) == ("gfx950", 256, "7.0")
    assert get_profile("mi355x").board_power_w == 1400
    assert get_profile("gpu-mi300x8-1536gb").gpu_count == 8
    assert get_profile("gpu-h100x1-80gb").name == "h100"
