"""The audit log says a worker's reason in the reader's language, and a person's words as they
wrote them (issue 24 item 5)."""

from rest_framework.test import APIClient

from labgpu.audit.models import AuditEvent
from labgpu.core.reasons import reason


def test_the_audit_log_reads_a_stored_reason_in_the_readers_language(carol):
    carol.language = "zh-hans"
    carol.save(update_fields=["language"])
    destroyed = reason("Destroyed by site admin %(username)s.", username="carol")
    AuditEvent.objects.create(action="node.destroy", target_type="node", target_id="1",
                              data={"reason": destroyed})  # fmt: skip
    AuditEvent.objects.create(action="booking.reject", target_type="booking", target_id="2",
                              data={"reason": "Too long for this week"})  # fmt: skip
    AuditEvent.objects.create(action="booking.create", target_type="booking", target_id="3")
    client = APIClient()
    client.force_login(carol)

    rows = {e["target_id"]: e for e in client.get("/api/v1/audit/").json()["results"]}

    assert rows["1"]["reason"] == "已被站点管理员 carol 销毁。"
    assert rows["1"]["data"]["reason"] == destroyed  # the record itself stays as written
    assert rows["2"]["reason"] == "Too long for this week"
    assert rows["3"]["reason"] is None
