"""Chat channels: add, test, remove; and `chat_notify`, the one way an app posts an event to the
channels that want it. Delivery runs in a Celery task (enqueued by name through the outbox, so a
delivery row and the work to send it commit together) with retries and exponential back-off."""

import logging
import zoneinfo
from datetime import timedelta
from typing import Any

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils.translation import gettext as _

from labgpu import egress
from labgpu.accounts.models import Lab, User
from labgpu.accounts.services import require_lab_admin
from labgpu.audit.services import audit_record
from labgpu.chat import crypto, kinds
from labgpu.chat.messages import render
from labgpu.chat.models import SUBSCRIBABLE_EVENTS, ChatChannel, ChatDelivery, Event
from labgpu.core.errors import ApplicationError, NotPermitted
from labgpu.core.outbox import enqueue_on_commit, publish_best_effort
from labgpu.core.timeutils import now

logger = logging.getLogger(__name__)

DELIVER_TASK = "labgpu.chat.tasks.deliver_chat_message"
MAX_RESPONSE_BYTES = 64 * 1024
Status = ChatDelivery.Status


def require_channel_manager(*, actor: User, channel: ChatChannel) -> None:
    """A user manages their own channels; a lab's lab admins (and site admins) manage its."""
    if channel.user_id is not None:
        if channel.user_id != actor.pk:
            raise NotPermitted(_("This is someone else's channel."), code="not_channel_owner")
        return
    assert channel.lab is not None
    require_lab_admin(actor=actor, lab=channel.lab)


def _clean_events(events: list[str] | None) -> list[str]:
    if events is None:
        return list(SUBSCRIBABLE_EVENTS)
    unknown = sorted(set(events) - set(SUBSCRIBABLE_EVENTS))
    if unknown:
        raise ApplicationError(
            _("Unknown events: %(events)s.") % {"events": ", ".join(unknown)},
            code="invalid_events",
            field="events",
        )
    return [event for event in SUBSCRIBABLE_EVENTS if event in events]


def _check_secret(kind: str, secret: str) -> None:
    if len(secret) > kinds.MAX_SECRET:
        raise ApplicationError(
            _("The secret is longer than %(limit)s characters.") % {"limit": kinds.MAX_SECRET},
            code="invalid_secret",
            field="secret",
        )
    if kind == ChatChannel.Kind.WEBHOOK and len(secret) < 16:
        raise ApplicationError(
            _("A generic webhook needs a signing secret of at least 16 characters."),
            code="invalid_secret",
            field="secret",
        )


@transaction.atomic
def channel_create(
    *,
    actor: User,
    kind: str,
    name: str,
    url: str,
    secret: str = "",
    lab: Lab | None = None,
    events: list[str] | None = None,
    language: str = "",
    timezone: str = "",
) -> ChatChannel:
    """A channel of `actor` (or of `lab`, which `actor` administers). The URL and secret are
    sealed and never shown again; `hint` is what the API shows."""
    if kind not in ChatChannel.Kind.values:
        raise ApplicationError(
            _("Unknown kind %(kind)s.") % {"kind": kind}, code="invalid_kind", field="kind"
        )
    if lab is not None:
        require_lab_admin(actor=actor, lab=lab)
    _check_secret(kind, secret)
    url = url.strip()
    kinds.validate_url(kind, url)
    if timezone and timezone not in zoneinfo.available_timezones():
        raise ApplicationError(_("Unknown time zone."), code="invalid_timezone", field="timezone")
    channel = ChatChannel.objects.create(
        name=name.strip()[:100] or kind,
        kind=kind,
        user=None if lab is not None else actor,
        lab=lab,
        created_by=actor,
        secret_box=crypto.seal({"url": url, "secret": secret}),
        hint=kinds.hint(url),
        events=_clean_events(events),
        language=language or actor.language,
        timezone=timezone or actor.timezone or "UTC",
    )
    audit_record(
        actor=actor,
        action="chat_channel.create",
        target=channel,
        lab=lab,
        data={"kind": kind, "name": channel.name, "hint": channel.hint},
    )
    return channel


@transaction.atomic
def channel_update(
    *,
    actor: User,
    channel: ChatChannel,
    name: str | None = None,
    events: list[str] | None = None,
    language: str | None = None,
    enabled: bool | None = None,
    url: str | None = None,
    secret: str | None = None,
) -> ChatChannel:
    """Change what `channel` is sent and how it reads. A new `url` or `secret` replaces the sealed
    one (checked as at creation) and, like it, is never shown; the audit names what changed,
    never a secret's value."""
    require_channel_manager(actor=actor, channel=channel)
    changed: dict[str, Any] = {}
    if name is not None and name.strip()[:100] and name.strip()[:100] != channel.name:
        channel.name = changed["name"] = name.strip()[:100]
    if events is not None and _clean_events(events) != channel.events:
        channel.events = changed["events"] = _clean_events(events)
    if language is not None and language != channel.language:
        channel.language = changed["language"] = language
    if enabled is not None and enabled != channel.enabled:
        channel.enabled = changed["enabled"] = enabled
    fields = list(changed)
    if url is not None or secret is not None:
        box = crypto.unseal(channel.secret_box)
        if url is not None:
            box["url"] = url.strip()
            kinds.validate_url(channel.kind, box["url"])
            channel.hint = kinds.hint(box["url"])
            changed["url"] = f"replaced ({channel.hint})"
            fields.append("hint")
        if secret is not None:
            _check_secret(channel.kind, secret)
            box["secret"] = secret
            changed["secret"] = "replaced"
        channel.secret_box = crypto.seal(box)
        fields.append("secret_box")
    if not changed:
        return channel
    channel.save(update_fields=[*fields, "updated_at"])
    audit_record(
        actor=actor,
        action="chat_channel.update",
        target=channel,
        lab=channel.lab,
        data={"changes": changed},
    )
    return channel


@transaction.atomic
def channel_delete(*, actor: User, channel: ChatChannel) -> None:
    require_channel_manager(actor=actor, channel=channel)
    audit_record(
        actor=actor,
        action="chat_channel.delete",
        target=channel,
        lab=channel.lab,
        data={"kind": channel.kind, "name": channel.name},
    )
    channel.delete()


def _queue(channel: ChatChannel, event: str, context: dict[str, Any]) -> ChatDelivery:
    title, text = render(event, context, language=channel.language, zone=channel.timezone)
    delivery = ChatDelivery.objects.create(
        channel=channel, event=event, title=title[:300], text=text
    )
    enqueue_on_commit(DELIVER_TASK, delivery.pk)
    return delivery


@transaction.atomic
def channel_test(*, actor: User, channel: ChatChannel) -> ChatDelivery:
    """Queue a test message to `channel`; its delivery log shows how it went."""
    require_channel_manager(actor=actor, channel=channel)
    return _queue(channel, Event.TEST, {"channel": channel.name})


def chat_notify(
    event: str,
    *,
    user: User | None = None,
    lab: Lab | None = None,
    context: dict[str, Any],
) -> int:
    """Post `event` to `user`'s own channels and `lab`'s channels that subscribe to it; returns
    how many deliveries were queued. Never raises: a chat outage must not break the caller.

    `context` holds the plain values the event's message reads (labgpu.chat.messages.EVENT_KEYS;
    docs/chat.md). Call it after the change commits (or inside the transaction: the deliveries
    then commit with it)."""
    if event not in SUBSCRIBABLE_EVENTS:
        raise ValueError(f"unknown chat event {event!r}")
    owners = Q()
    if user is not None:
        owners |= Q(user=user)
    if lab is not None:
        owners |= Q(lab=lab)
    if not owners:
        return 0
    try:
        with transaction.atomic():
            channels = ChatChannel.objects.filter(owners, enabled=True, events__contains=[event])
            return len([_queue(channel, event, context) for channel in channels])
    except Exception:
        logger.exception("could not queue chat event %s", event)
        return 0


def retry_delay(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`: LABGPU_CHAT_RETRY_BASE_S doubling each time."""
    return settings.LABGPU_CHAT_RETRY_BASE_S * 2 ** (attempt - 1)


def _post(request: kinds.Request) -> tuple[int, bytes]:
    """POST through the egress policy: the host is resolved once and each address checked at
    send time (DNS may have changed since the channel was saved), the checked one connected to,
    and no redirect followed (labgpu.egress)."""
    with (
        egress.POLICY.client(kinds.exemptions(), timeout=settings.LABGPU_CHAT_TIMEOUT_S) as client,
        client.stream("POST", request.url, content=request.body, headers=request.headers) as r,
    ):
        body = b""
        for chunk in r.iter_bytes():
            body += chunk
            if len(body) > MAX_RESPONSE_BYTES:
                break
        return r.status_code, body[:MAX_RESPONSE_BYTES]


def delivery_attempt(*, delivery_id: int) -> float | None:
    """Try to send one delivery; returns the seconds to wait before the next try, or None when
    it is done (sent, or failed for good). Safe to run twice: the row is locked while it is
    sent, and a sent or failed delivery is left alone."""
    with transaction.atomic():
        delivery = (
            ChatDelivery.objects.select_for_update(skip_locked=True)
            .select_related("channel")
            .filter(pk=delivery_id, status__in=[Status.PENDING, Status.RETRYING])
            .first()
        )
        if delivery is None:
            return None  # done, gone with its channel, or another worker holds it
        channel = delivery.channel
        delivery.attempts += 1
        delivery.last_attempt_at = now()
        permanent = False
        code: int | None = None
        error = ""
        try:
            secrets = crypto.unseal(channel.secret_box)
            request = kinds.build_request(
                kind=channel.kind,
                url=secrets["url"],
                secret=secrets.get("secret", ""),
                event=delivery.event,
                title=delivery.title,
                text=delivery.text,
                data={"delivery": delivery.pk, "channel": channel.pk},
            )
            code, body = _post(request)
            if 200 <= code < 300:
                error = kinds.platform_error(channel.kind, body)
                permanent = bool(error)
            else:
                error = f"HTTP {code}"
                if channel.kind != ChatChannel.Kind.WEBHOOK:
                    # A platform's own refusal ("no_team", "invalid_token") helps its owner; a
                    # generic webhook's host is anyone's, and its answer is not ours to show.
                    error += f": {body[:200].decode(errors='replace')}"
                # 4xx other than a rate limit will answer the same next time.
                permanent = 400 <= code < 500 and code not in (408, 429)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a bad secret box, a refused address: retrying will not help
            error = f"{type(exc).__name__}: {exc}"
            permanent = True
        delivery.http_status = code
        delivery.error = error[:500]
        delay: float | None = None
        if not error:
            delivery.status = Status.SENT
            delivery.sent_at = now()
        elif permanent or delivery.attempts >= settings.LABGPU_CHAT_MAX_ATTEMPTS:
            delivery.status = Status.FAILED
        else:
            delivery.status = Status.RETRYING
            delay = retry_delay(delivery.attempts)
        delivery.save(
            update_fields=[
                "attempts",
                "last_attempt_at",
                "http_status",
                "error",
                "status",
                "sent_at",
                "updated_at",
            ]
        )
    if error:
        logger.warning(
            "chat delivery %s to channel %s, attempt %s: %s",
            delivery.pk,
            channel.pk,
            delivery.attempts,
            error,
        )
    return delay


# A retry the broker lost (Celery's retry is published straight to it, not through the outbox) is
# re-driven once it is this late.
REDRIVE_GRACE = timedelta(minutes=2)


def deliveries_redrive(*, batch: int = 200) -> int:
    """Publish the delivery task again for deliveries whose next try is overdue (a lost retry, a
    worker killed mid-send); returns how many. Safe: the task skips what is done or locked."""
    moment = now()
    overdue = []
    candidates = ChatDelivery.objects.filter(
        status__in=[Status.PENDING, Status.RETRYING],
        updated_at__lt=moment - REDRIVE_GRACE,
    ).order_by("updated_at")[:batch]
    for delivery in candidates:
        due = delivery.updated_at + timedelta(seconds=retry_delay(max(1, delivery.attempts)))
        if delivery.attempts == 0 or due + REDRIVE_GRACE < moment:
            overdue.append(delivery.pk)
    return sum(publish_best_effort(DELIVER_TASK, pk) for pk in overdue)
