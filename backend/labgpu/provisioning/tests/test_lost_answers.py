"""A lost answer costs a retry, not a node (issue 29, item 1).

The real agent (started by the emulator from the droplet's cloud-init) reaches the live API through
a TCP proxy that loses the first answer of each kind: its bootstrap, its report and its first
heartbeat reach the server and are done there, and the agent never hears back. Before, the
retried bootstrap met `401 token_used`, the agent exited and the node sat in `checking` until the
15-minute report timeout.
"""

import pytest

from labgpu.health.models import HealthReport
from labgpu.provisioning.models import Node
from labgpu.provisioning.tests.harness import wait_for
from labgpu.provisioning.tests.lossy_proxy import AnswerDroppingProxy
from labgpu.provisioning.tests.test_lifecycle import (
    assert_no_orphans,
    create_booking,
    end_early,
    wait_status,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_lost_answer_of_each_kind_costs_the_agent_a_retry_not_the_node(
    lifecycle, live_server, alice
):
    proxy = AnswerDroppingProxy(
        live_server.url, drop_first={"bootstrap", "reports", "heartbeat"}
    ).start()
    try:
        lifecycle.start_worker(LABGPU_PUBLIC_API_URL=proxy.url)
        booking_id = create_booking(alice, lifecycle.pool)
        booking = wait_status(lifecycle, booking_id, "ready", timeout_s=120)
        node = Node.objects.get(booking=booking)

        lost, retried = proxy.of_kind("bootstrap")[:2]
        assert (lost.status, lost.dropped) == (200, True)  # done at the server, answer lost
        assert (retried.status, retried.dropped) == (200, False)

        # The lost report was stored (and made the node ready); its retry is stored too.
        lost_report, retried_report = wait_for(
            lambda: proxy.of_kind("reports")[:2] if len(proxy.of_kind("reports")) >= 2 else None,
            timeout_s=30,
            message="the report and its retry",
        )
        assert (lost_report.status, lost_report.dropped) == (201, True)
        assert (retried_report.status, retried_report.dropped) == (201, False)
        # What made the node ready is the chain the retry started, not a timeout: the bootstrap's
        # retry was answered, then the first report (sent after it) made the node ready while the
        # server handled it (`at` is when each answer was in at the proxy).
        assert retried.at < node.ready_at.timestamp() <= lost_report.at < retried_report.at
        assert HealthReport.objects.filter(node=node, verdict__in=["pass", "warn"]).count() == 2

        # The agent keeps heartbeating after losing one heartbeat's answer.
        wait_for(
            lambda: len([h for h in proxy.of_kind("heartbeat") if not h.dropped]) >= 2,
            timeout_s=30,
            message="heartbeats after the lost one",
        )
        assert proxy.of_kind("heartbeat")[0].dropped
        (droplet,) = lifecycle.emulator.droplets()
        assert droplet["agent"]["status"] == "running" and droplet["agent"]["starts"] == 1

        end_early(alice, booking_id)
        wait_status(lifecycle, booking_id, "completed")
        assert_no_orphans(lifecycle)
    finally:
        proxy.close()
