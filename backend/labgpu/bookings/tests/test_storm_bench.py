"""bench/booking_storm.py still runs end to end: a short storm, then its capacity check.

Measures nothing (numbers live in docs/benchmarks.md); it keeps the benchmark from rotting.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from labgpu.core.testing import database_url

REPO = Path(__file__).resolve().parents[4]
STORM = REPO / "bench" / "booking_storm.py"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not STORM.exists(), reason="bench/ is not part of this checkout"),
]


@pytest.mark.skipif(not shutil.which("wrk"), reason="wrk is not installed (apt-get install wrk)")
def test_a_short_booking_storm_books_and_verifies_capacity():
    storm = [
        sys.executable, str(STORM), "--json", "--pg-url", database_url(database=""),
        "--db", f"labgpu_storm_smoke_{os.getpid()}",
        "--clients", "4", "--seconds", "2", "--warmup", "0", "--workers", "1",
        "--pools", "2", "--capacity", "2", "--days", "2", "--preseed", "200",
    ]  # fmt: skip
    result = subprocess.run(
        storm,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        # Not settings.SETTINGS_MODULE: under an override (conftest autouse) Django answers None.
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["verify"]["capacity_ok"], summary["verify"]
    assert summary["creates"] > 0 and summary["conflicts_by_code"].keys() <= {"pool_full"}
    assert summary["server_errors_5xx"] == 0 and summary["errors"] == 0
