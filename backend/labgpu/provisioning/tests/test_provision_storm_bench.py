"""bench/provision_storm.py still runs end to end: three bookings through the whole lifecycle.

Measures nothing (numbers live in docs/benchmarks.md); it keeps the benchmark from rotting. The
beat and the poll are sped up (--set) so the run takes seconds, not minutes.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from labgpu.core.testing import database_url

REPO = Path(__file__).resolve().parents[4]
STORM = REPO / "bench" / "provision_storm.py"
BOOKINGS = 3

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not STORM.exists(), reason="bench/ is not part of this checkout"),
]


def test_a_tiny_provision_storm_readies_and_tears_down_every_booking():
    storm = [
        sys.executable, str(STORM), "--json", "--pg-url", database_url(database=""),
        "--db", f"labgpu_pstorm_smoke_{os.getpid()}",
        "--bookings", str(BOOKINGS), "--window", "1", "--end-window", "1", "--hold", "0",
        "--boot", "2", "--ip-delay", "1", "--web-workers", "1", "--labs", "1",
        "--users-per-lab", "2", "--ready-timeout", "180", "--teardown-timeout", "180",
        "--set", "LABGPU_TIME_SCALE=0.05",
    ]  # fmt: skip
    result = subprocess.run(
        storm,
        capture_output=True,
        text=True,
        timeout=420,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["bookings"]["created_201"] == BOOKINGS
    assert summary["bookings"]["final_status"] == {"completed": BOOKINGS}
    assert summary["bookings"]["failed"] == 0 and summary["lost_work"]["stranded_nodes"] == []
    # The emulator's own counters: one droplet created and deleted per booking, none left.
    assert summary["provider"]["creates"] == BOOKINGS, summary["provider"]
    assert summary["duplicates"] == 0 and summary["orphans_after_teardown"] == []
    assert summary["lost_work"]["droplets_without_usage"] == []
    assert summary["lost_work"]["api_5xx"] == 0 and summary["lost_work"]["failed_nodes"] == []
    # Every hop was measured for every node: the record the numbers come from is complete.
    measured = {key: hop["n"] for key, hop in summary["hops_s"].items()}
    assert measured == dict.fromkeys(measured, BOOKINGS) and len(measured) >= 10, measured
