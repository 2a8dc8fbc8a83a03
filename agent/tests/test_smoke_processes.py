"""The gate's heavy smoke tests run in processes of their own (labgpu_agent.smoke.run_smokes)."""

from __future__ import annotations

import importlib.util
import sys

from labgpu_agent.smoke import run_smokes
from labgpu_agent.smoke.base import unused_imports_blocked


def test_smoke_tests_in_their_own_processes_come_back_in_the_order_asked():
    # No torch here: each child imports what it can, runs on `go` and reports its skip.
    names = ["matmul", "sdxl", "bandwidth", "llm"]
    results = run_smokes(names, {}, own_processes=True)
    assert [r.name for r in results] == ["matmul", "sdxl", "bandwidth", "llm", "llm"]
    assert [r.metric for r in results if r.name == "llm"] == [
        "tokens_per_s_batch1",
        "tokens_per_s_batch128",
    ]
    assert all(r.status == "skipped" for r in results)
    assert all("PyTorch is not installed" in (r.reason or "") for r in results)
    children = [r for r in results if r.name in ("sdxl", "llm")]
    assert all(r.extra["own_process"]["import_s"] is not None for r in children)
    assert all("own_process" not in r.extra for r in results if r.name not in ("sdxl", "llm"))


def test_a_smoke_process_that_dies_is_a_failed_test_not_a_hang():
    results = run_smokes(
        ["bandwidth", "sdxl"], {}, {"sdxl": {"no_such_option": 1}}, own_processes=True
    )
    assert [(r.name, r.status) for r in results] == [("bandwidth", "skipped"), ("sdxl", "failed")]
    assert results[1].metric == "images_per_s"
    assert "exited with code 1 before reporting" in (results[1].reason or "")


def test_without_torch_the_gate_runs_its_smoke_tests_in_this_process():
    if importlib.util.find_spec("torch") is not None:  # pragma: no cover - a GPU image
        return
    results = run_smokes(["matmul", "sdxl"], {})
    assert [r.status for r in results] == ["skipped", "skipped"]
    assert "own_process" not in results[1].extra


def test_scikit_learn_is_absent_inside_the_block_and_back_after_it():
    before = sys.modules.get("sklearn", "absent")
    with unused_imports_blocked():
        assert importlib.util.find_spec("sklearn") is None
        try:
            import sklearn  # noqa: F401
        except ImportError:
            pass
        else:  # pragma: no cover
            raise AssertionError("sklearn imported inside the block")
    assert sys.modules.get("sklearn", "absent") == before
