"""Failure and end reasons: stored in English by workers, read in each reader's language
(issue 24 item 5)."""

import re

import pytest
from django.utils import translation
from rest_framework.test import APIClient

from labgpu.bookings.models import Booking
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.core.reasons import REASONS, reason, reason_in_language

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("template", REASONS)
def test_every_reason_reads_in_chinese(template):
    names = re.findall(r"%\((\w+)\)s", template)
    stored = reason(template, **{name: f"<{name}>" for name in names})
    with translation.override("zh-hans"):
        shown = reason_in_language(stored)
    assert shown != stored
    assert CJK.search(shown), shown
    for name in names:  # the facts are kept, wherever the translation puts them
        assert f"<{name}>" in shown


def test_a_site_admins_own_words_stay_as_written():
    stored = reason(
        "Destroyed by site admin %(username)s: %(reason)s", username="carol", reason="disk full"
    )
    with translation.override("zh-hans"):
        assert reason_in_language(stored) == "已被站点管理员 carol 销毁：disk full"
    with translation.override("en"):
        assert reason_in_language(stored) == stored
    assert reason_in_language("A lab admin typed this.") == "A lab admin typed this."


def test_the_booking_page_shows_the_reason_in_the_readers_language(alice, vision_lab, pool):
    alice.language = "zh-hans"
    alice.save(update_fields=["language"])
    booking = BookingFactory(
        user=alice,
        lab=vision_lab,
        pool=pool,
        status=Booking.Status.FAILED,
        failure_reason=reason("The droplet did not become active in time."),
    )
    client = APIClient()
    client.force_login(alice)

    body = client.get(f"/api/v1/bookings/{booking.pk}/").json()

    assert body["failure_reason"] == "云主机未能按时进入运行状态。"
    assert Booking.objects.get(pk=booking.pk).failure_reason == (
        "The droplet did not become active in time."
    )


def test_a_failed_gate_reads_each_findings_meaning_in_chinese_and_keeps_the_english_as_written():
    from labgpu.health.services import failed_checks_reason

    stored = failed_checks_reason(
        [
            {"id": "pcie.link_narrow", "message": "GPU 0 PCIe link is x8, expected x16."},
            {"id": "xid.48", "message": "The kernel log has 1 Xid 48 event(s)."},
        ]
    )
    assert stored == (
        "The node failed its health checks (pcie.link_narrow, xid.48): "
        "GPU 0 PCIe link is x8, expected x16.; The kernel log has 1 Xid 48 event(s)."
    )
    with translation.override("en"):
        assert reason_in_language(stored) == stored
    with translation.override("zh-hans"):
        shown = reason_in_language(stored)
    assert shown.startswith("节点未通过健康检查（pcie.link_narrow, xid.48）：")
    assert "expected" not in shown and "kernel log" not in shown
    assert "PCIe" in shown and "Xid" in shown


def test_a_failed_gate_with_an_id_the_catalogue_does_not_know_keeps_the_agents_words():
    from labgpu.health.services import failed_checks_reason

    stored = failed_checks_reason([{"id": "brand.new", "message": "Something new broke."}])
    with translation.override("zh-hans"):
        assert "Something new broke." in reason_in_language(stored)
