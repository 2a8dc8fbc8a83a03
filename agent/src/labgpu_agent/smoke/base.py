"""What every smoke test shares: the result record, optional-torch loading and timing.

torch, diffusers and transformers are optional (the `smoke` extra). Their absence, or a machine
with no GPU, turns into a `skipped` result with the reason — never an exception.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from types import ModuleType
from typing import Any


class SmokeSkipped(Exception):
    """The smoke test cannot run here (no torch, no GPU, no diffusers …)."""


class SmokeFailed(Exception):
    """The smoke test ran but its output is wrong (NaN/inf, mismatch)."""


@dataclass
class SmokeResult:
    name: str
    status: str  # passed | failed | skipped
    metric: str
    value: float | None = None
    unit: str = ""
    baseline: float | None = None
    duration_s: float | None = None
    higher_is_better: bool = True
    reason: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SmokeResult:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def load_torch() -> ModuleType:
    """Import torch and check a GPU is visible (ROCm builds also call it `cuda`)."""
    try:
        import torch
    except ImportError as exc:
        raise SmokeSkipped(
            "PyTorch is not installed (install labgpu-agent[smoke] with a ROCm or CUDA build)"
        ) from exc
    if not torch.cuda.is_available():
        raise SmokeSkipped("PyTorch sees no GPU (torch.cuda.is_available() is False)")
    module: ModuleType = torch
    return module


# Installed beside the smoke libraries on many images and imported by them at load, never used by a
# smoke test: transformers imports scikit-learn (2.2 s on the H200, docs/benchmarks.md) whenever it
# is installed, for assisted generation's candidate generator only.
UNUSED_IMPORTS = ("sklearn",)


@contextlib.contextmanager
def unused_imports_blocked() -> Iterator[None]:
    """Inside the block, `import sklearn` fails and `importlib.util.find_spec("sklearn")` is None
    (sys.modules mapping a name to None is the import system's own mark of an absent module), so
    transformers' `is_sklearn_available()` is False and it skips the import. A module already
    imported is left alone; the marks are taken away again at the end."""
    marked = [name for name in UNUSED_IMPORTS if name not in sys.modules]
    for name in marked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in marked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def import_optional(name: str) -> ModuleType:
    try:
        return __import__(name)
    except ImportError as exc:
        raise SmokeSkipped(f"{name} is not installed (install labgpu-agent[smoke])") from exc


def torch_environment(torch: ModuleType) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {
        "torch": torch.__version__,
        "hip": getattr(torch.version, "hip", None),
        "cuda": getattr(torch.version, "cuda", None),
        "device": props.name,
        "multiprocessors": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
    }


def time_host(torch: ModuleType, fn: Callable[[], Any], *, warmup: int, iters: int) -> list[float]:
    """Wall time of whole calls (each several ms or more), synchronising the device around each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


def time_events(torch: ModuleType, fn: Callable[[], Any], *, warmup: int, iters: int) -> float:
    """Median device time in seconds of one `fn()` call, from CUDA/HIP events around each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for start, end in zip(starts, ends, strict=True):
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    millis = [float(s.elapsed_time(e)) for s, e in zip(starts, ends, strict=True)]
    return statistics.median(millis) / 1000


def guarded(name: str, metric: str, unit: str, run: Callable[[], SmokeResult]) -> SmokeResult:
    """Run one smoke test; turn SmokeSkipped/any error into a skipped/failed result."""
    started = time.perf_counter()
    try:
        result = run()
    except SmokeSkipped as exc:
        result = SmokeResult(name=name, status="skipped", metric=metric, unit=unit, reason=str(exc))
    except SmokeFailed as exc:
        result = SmokeResult(name=name, status="failed", metric=metric, unit=unit, reason=str(exc))
    except Exception as exc:  # a smoke test must never take the agent down with it
        last = traceback.format_exception_only(exc)[-1].strip()
        result = SmokeResult(name=name, status="failed", metric=metric, unit=unit, reason=last)
    result.duration_s = round(time.perf_counter() - started, 3)
    return result
