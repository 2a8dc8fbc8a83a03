from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _
from labgpu_agent.report import ReportValidationError, validate_report

from labgpu.audit.services import audit_record
from labgpu.bookings.services import NOTEBOOK_PORT, booking_notebook_token
from labgpu.core.crashpoints import crash_point
from labgpu.core.errors import ApplicationError, Conflict
from labgpu.core.reasons import FAILED_CHECKS
from labgpu.core.reasons import reason as stored_reason
from labgpu.core.sealed import seal, unseal
from labgpu.core.timeutils import now
from labgpu.core.transitions import transition
from labgpu.health import limits
from labgpu.health.models import HealthReport
from labgpu.health.utilisation import utilisation_record
from labgpu.providers import ProviderError
from labgpu.provisioning.models import Node
from labgpu.provisioning.services.agent import node_report_passed
from labgpu.provisioning.services.nodes import node_adopt, node_fail
from labgpu.provisioning.services.volumes import volume_usage_record
from labgpu.provisioning.tokens import hash_secret, new_heartbeat_token

NodeStatus = Node.Status


class DropletUnknown(ApplicationError):
    """The agent is up but its droplet is not recorded yet; it retries (I-8: no node leaves
    `creating` without its droplet)."""

    status_code = 503
    default_code = "node_not_ready"


def agent_bootstrap(*, node: Node) -> dict[str, Any]:
    """Trade the bootstrap token for a heartbeat token; the node is now checking.

    The token is accepted until the node's first report, and every answer until then carries the
    same heartbeat token: an agent whose answer was lost (a timeout while the request queued, a
    dropped connection) asks again and carries on, where a fresh token per call would strand it
    whenever an earlier, slower call of its own committed last. Nothing new is handed out: the
    only one who can ask is whoever holds the token, the node itself, and after the first report
    the token is refused (`token_used`) and no copy of the heartbeat token is kept.

    A node leaves `creating` only with its droplet recorded: when the create's answer was lost
    (a worker died after the POST), adopt the droplet by its tag first, or ask the agent to retry.
    """
    if not node.provider_id and not _adopt_droplet(node):
        raise DropletUnknown(
            _("The node's droplet is not recorded yet; retry shortly."),
            extra={"retry_after_s": 5 * settings.TIME_SCALE},
        )
    crash_point("bootstrap.before_claim")
    token = new_heartbeat_token()
    with transaction.atomic():
        claimed = Node.objects.filter(pk=node.pk, bootstrap_used_at__isnull=True).update(
            bootstrap_used_at=now(),
            heartbeat_token_hash=hash_secret(token),
            heartbeat_token_sealed=seal(token, purpose=HEARTBEAT_TOKEN_PURPOSE),
            last_heartbeat_at=now(),
        )
        if not claimed:
            # A concurrent first claim holds the row until it commits; this reads its outcome.
            token = _bootstrap_answered_before(node)
        else:
            moved = transition(
                Node,
                pk=node.pk,
                from_statuses=[NodeStatus.CREATING, NodeStatus.BOOTING],
                to_status=NodeStatus.CHECKING,
                condition=~Q(provider_id=""),
            )
            if not moved:
                raise Conflict(
                    _("Node is %(status)s; it does not accept an agent now.")
                    % {"status": node.get_status_display()},
                    code="invalid_status",
                )
            crash_point("bootstrap.before_commit")
    pool = node.booking.pool
    instance_type = pool.instance_type
    answer: dict[str, Any] = {
        "node": node.pk,
        "heartbeat_token": token,
        "profile": instance_type.agent_profile or instance_type.slug,
        "heartbeat_interval_s": settings.LABGPU_HEARTBEAT_INTERVAL_S,
        # The agent fails its report when one of these cannot run (issue 12: never a silent skip).
        "required_smoke": list(pool.required_smoke),
        # The first report must then come from `check --deep` (report_ingest holds it to that).
        "deep": pool.deep_at_handover,
    }
    return answer | _bootstrap_notebook(node)


HEARTBEAT_TOKEN_PURPOSE = "node-heartbeat-token"


def _bootstrap_answered_before(node: Node) -> str:
    """The heartbeat token an earlier bootstrap of this node handed out, while the node checks
    and has sent no report; otherwise the bootstrap token is used up."""
    current = Node.objects.filter(pk=node.pk).values("status", "heartbeat_token_sealed").get()
    token = unseal(current["heartbeat_token_sealed"], purpose=HEARTBEAT_TOKEN_PURPOSE)
    if current["status"] != NodeStatus.CHECKING or token is None:
        raise ApplicationError(
            _("This bootstrap token was already used."), code="token_used", status_code=401
        )
    Node.objects.filter(pk=node.pk).update(last_heartbeat_at=now())
    return token


def _bootstrap_notebook(node: Node) -> dict[str, Any]:
    """JupyterLab's token reaches the node only here, in the answer to the single-use bootstrap
    token (never in cloud-init, which the provider stores and the droplet's metadata serves)."""
    if not node.booking.jupyter:
        return {}
    token = booking_notebook_token(booking=node.booking)
    return {"notebook": {"token": token, "port": NOTEBOOK_PORT}}


NOTEBOOK_REPORTED_IN = (NodeStatus.CHECKING, NodeStatus.READY)


def agent_notebook_state(*, node: Node, state: str) -> None:
    """Record JupyterLab's state as the node's agent reports it (booking detail shows it)."""
    if not node.booking.jupyter:
        raise ApplicationError(
            _("This node's booking did not ask for JupyterLab."), code="no_notebook", field="state"
        )
    Node.objects.filter(pk=node.pk, status__in=NOTEBOOK_REPORTED_IN).update(
        notebook_state=state, last_heartbeat_at=now()
    )


def report_ingest(*, node: Node, payload: Any) -> HealthReport:
    """Store the agent's report; a passing first report makes the node (and booking) ready (I-5),
    a failing one fails the node with the findings as the reason."""
    collected_at = report_validate(payload)
    crash_point("report.before_store")
    verdict, findings = payload["verdict"], list(payload["findings"])
    handover = node.status in (NodeStatus.CHECKING, NodeStatus.BOOTING)
    if handover and node.booking.pool.deep_at_handover and not payload.get("deep"):
        verdict = HealthReport.Verdict.FAIL
        findings.append(
            {
                "id": "deep.required_not_run",
                "severity": "fail",
                "message": "The pool requires the deep check before handover, but this report "
                "is not one.",
                "evidence": {"deep_at_handover": True},
                "remediation": "Run the agent as the bootstrap answer says (`deep: true`): an "
                "older agent ignores it; update labgpu-agent on the image.",
            }
        )
    if handover or not payload.get("deep"):
        missing = _required_smoke_not_passed(node.booking.pool.required_smoke, payload["smoke"])
        if missing:
            # The pool's rule holds whatever the agent concluded (an old agent, or one without
            # its smoke packages, would pass a node whose workloads never ran).
            verdict = HealthReport.Verdict.FAIL
            findings.append(
                {
                    "id": "smoke.required_not_passed",
                    "severity": "fail",
                    "message": "The pool requires smoke tests that did not pass on this node: "
                    + ", ".join(missing)
                    + ".",
                    "evidence": {"required": list(node.booking.pool.required_smoke)},
                    "remediation": _smoke_remediation(missing, payload["smoke"]),
                }
            )
    report = HealthReport.objects.create(
        node=node,
        instance_type_id=node.booking.pool.instance_type_id,
        verdict=verdict,
        profile=payload.get("profile") or "",
        agent_version=payload.get("agent_version", ""),
        collected_at=collected_at,
        findings=findings,
        smoke=payload["smoke"],
        facts=payload["facts"],
        deep=bool(payload.get("deep", False)),
        required_smoke=list(payload.get("required_smoke", [])),
        timing=dict(payload.get("timing", {})),
    )
    # The first report closes the bootstrap: its token is refused from now on (see agent_bootstrap).
    Node.objects.filter(pk=node.pk).update(last_heartbeat_at=now(), heartbeat_token_sealed="")
    if node.status in (NodeStatus.CHECKING, NodeStatus.BOOTING):
        if report.verdict in HealthReport.PASSING:
            node_report_passed(node=node)
        else:
            failing = [f for f in report.findings if f.get("severity") == "fail"]
            node_fail(node_id=node.pk, reason=failed_checks_reason(failing), findings=failing)
    return report


def failed_checks_reason(failing: list[dict[str, Any]]) -> str:
    """The stored reason a node failed its gate: the first three failing findings' ids (so each
    reader's language can say what they mean, health.finding_texts) and the agent's messages."""
    shown = failing[:3]
    return stored_reason(
        FAILED_CHECKS,
        ids=", ".join(str(f.get("id", "")) for f in shown),
        summary="; ".join(str(f.get("message", f.get("id", ""))) for f in shown),
    )


def _smoke_remediation(missing: list[str], smoke: list[dict[str, Any]]) -> str:
    """What to do depends on why the tests did not pass: a GPU PyTorch cannot see is a driver
    matter (the smoke packages are there), a failed test has its own reason; only tests never
    run point at the smoke packages. English, like the agent's own findings beside it."""
    results = [r for r in smoke if r.get("name") in missing]
    if any("sees no GPU" in str(r.get("reason") or "") for r in results):
        return (
            "PyTorch on the node sees no GPU, so the smoke tests could not run: fix the driver "
            "and device findings of this report first; the smoke packages are installed."
        )
    if any(r.get("status") == "failed" for r in results):
        return (
            "A required smoke test failed on the node: read its reason in this report and run "
            "`labgpu-agent smoke NAME` there by hand."
        )
    return (
        "Install labgpu-agent[smoke] (or set the pool's smoke_preinstalled only for images that "
        "have torch, diffusers and transformers) and let the agent run every required smoke test."
    )


def _required_smoke_not_passed(required: list[str], smoke: list[dict[str, Any]]) -> list[str]:
    """Required smoke tests with no result, or with any result that did not pass."""
    results: dict[str, list[str]] = {}
    for result in smoke:
        results.setdefault(result["name"], []).append(result["status"])
    return [
        name
        for name in required
        if not results.get(name) or any(status != "passed" for status in results[name])
    ]


def report_validate(payload: Any) -> datetime:
    """Refuse a report that is not one (I-9): sizes and finite numbers first, so the schema check
    never walks a hostile structure; then the shared schema; then the backend's physical bounds.
    Returns the report's `collected_at`."""
    try:
        limits.check_sizes(payload)
        validate_report(payload)
        return limits.check_semantics(payload)
    except ReportValidationError as error:
        message, path = str(error), error.path
    except limits.ReportRefused as refused:
        message = f"invalid agent report at {refused.path or '<root>'}: {refused.message}"
        path = refused.path
    raise ApplicationError(
        message,
        code="invalid_report",
        extra={"path": path, "fields": {path or "report": [message]}},
    )


def _adopt_droplet(node: Node) -> bool:
    try:
        return node_adopt(node_id=node.pk)
    except ProviderError:
        return False  # the provider is unreachable: the agent retries


DEEP_CHECK_FROM = (NodeStatus.CHECKING, NodeStatus.READY)


def agent_heartbeat(*, node: Node, payload: Any = None) -> str:
    """Record that the agent lives (and what its GPUs are doing: `usage`, validated first, I-9);
    tell it to stop once its node is on the way out, or to run the deep check a site admin asked
    for (handed out once: the flag is cleared as it is read)."""
    try:
        usage = limits.check_heartbeat(payload)
    except limits.ReportRefused as refused:
        path = refused.path or "heartbeat"
        message = f"invalid heartbeat at {path}: {refused.message}"
        raise ApplicationError(
            message, code="invalid_heartbeat", extra={"path": path, "fields": {path: [message]}}
        ) from None
    Node.objects.filter(pk=node.pk).update(last_heartbeat_at=now())
    node.refresh_from_db(fields=["status"])
    live = (NodeStatus.BOOTING, NodeStatus.CHECKING, NodeStatus.READY)
    if node.status not in live:
        return "stop"
    if usage is not None:
        utilisation_record(node=node, usage=usage)
        if usage.data is not None:
            volume_usage_record(
                node=node, used_bytes=usage.data.used_bytes, total_bytes=usage.data.total_bytes
            )
    handed = Node.objects.filter(
        pk=node.pk, status__in=DEEP_CHECK_FROM, deep_check_requested_at__isnull=False
    ).update(deep_check_requested_at=None)
    return "deep_check" if handed else "continue"


@transaction.atomic
def node_request_deep_check(*, node: Node, actor: Any) -> Node:
    """Ask the node's agent to run the vendor stress tools; its report joins the health history.

    Only a node that is checking or ready has an agent listening; the request is recorded in the
    audit log (a long stress test on a user's node is worth knowing about).
    """
    requested = Node.objects.filter(pk=node.pk, status__in=DEEP_CHECK_FROM).update(
        deep_check_requested_at=now()
    )
    if not requested:
        raise Conflict(
            _("Node is %(status)s; only a checking or ready node can run a deep check.")
            % {"status": node.get_status_display()},
            code="invalid_status",
        )
    node.refresh_from_db(fields=["deep_check_requested_at", "status"])
    audit_record(actor=actor, action="node.deep_check", target=node, lab=node.booking.lab)
    return node
