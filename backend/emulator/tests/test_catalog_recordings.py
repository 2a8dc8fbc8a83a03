"""Every GPU size of the emulator's catalog boots an agent that replays its own GPU model and
count (issue 23 item 6, issue 28 item 3), checked by the agent's own checks against the profile a
DigitalOcean slug names (`gpu-mi300x8-1536gb` → `mi300x:8`)."""

import pytest
from labgpu_agent.checks import run_checks
from labgpu_agent.collect import facts_from_outputs, load_fixture_profile
from labgpu_agent.profiles import get_profile

from emulator import catalog

# Sizes for which no real recording of the model was found (named in the report, not hidden).
WITHOUT_A_RECORDING = {"gpu-mi325x8-2048gb-contracted"}
GPU_SIZES = [s for s in catalog.SIZES if s.get("gpu_info")]


@pytest.mark.parametrize("size", GPU_SIZES, ids=lambda s: s["slug"])
def test_each_gpu_size_replays_a_recording_of_its_own_model(size):
    if size["slug"] in WITHOUT_A_RECORDING:
        pytest.skip(f"{size['slug']}: no published recording of this model found")
    fixture = load_fixture_profile(catalog.default_profile(size["slug"]))
    facts = facts_from_outputs(fixture.outputs)
    assert len(facts.gpus) == size["gpu_info"]["count"]
    findings = run_checks(facts, get_profile(size["slug"]), fixture.smoke, [])
    assert not [f for f in findings if f.severity == "fail"], [f.message for f in findings]
    model = size["gpu_info"]["model"].split("_")[1].upper()  # amd_mi300x → MI300X
    assert all(model in g.model.upper() for g in facts.gpus if g.model)
