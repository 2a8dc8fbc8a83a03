"""Monthly statements sent to lab admins, each in their own language, once per lab and month."""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from labgpu.accounts.emails import verified_email
from labgpu.accounts.models import Lab, Membership
from labgpu.statements.models import StatementDelivery
from labgpu.statements.render import PdfFontMissing, money, statement_pdf
from labgpu.statements.selectors import month_usage_open, previous_month, statement_build

logger = logging.getLogger(__name__)


class StatementNotSent(Exception):
    """A lab admin's mail did not go; the delivery stays unsent and a later run retries it."""


def _claim(*, lab: Lab, month: date, now: datetime) -> StatementDelivery | None:
    """Take (lab, month) for one lease: one conditional UPDATE, so two runs never both send.
    None: sent already, or another run holds an unexpired lease."""
    try:
        with transaction.atomic():
            StatementDelivery.objects.get_or_create(lab=lab, month=month)
    except IntegrityError:
        pass  # a parallel run made the row first
    lease = timedelta(seconds=settings.LABGPU_STATEMENT_LEASE_S)
    claimed = (
        StatementDelivery.objects.filter(lab=lab, month=month, sent_at__isnull=True)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lte=now))
        .update(claimed_until=now + lease, attempts=F("attempts") + 1)
    )
    return StatementDelivery.objects.get(lab=lab, month=month) if claimed else None


def statement_send(
    *, lab: Lab, month: date, now: datetime | None = None
) -> StatementDelivery | None:
    """E-mail `lab`'s statement for `month` (PDF attached) to each lab admin with a verified
    address, in that admin's language: at least once, never twice to one admin in one run.

    The (lab, month) row is claimed for a lease, and marked sent only after every mail went:
    a worker killed in between leaves it to a later run once the lease ends; an admin whose
    mail failed is retried (raises StatementNotSent), the ones already mailed are not."""
    now = now or timezone.now()
    delivery = _claim(lab=lab, month=month, now=now)
    if delivery is None:
        return None
    statement = statement_build(lab=lab, month=month)
    admins = (
        Membership.objects.filter(lab=lab, role=Membership.Role.LAB_ADMIN)
        .select_related("user")
        .order_by("user__username")
    )
    sent: list[str] = list(delivery.recipients)
    failed: list[str] = []
    pdfs: dict[str, bytes] = {}
    for membership in admins:
        user = membership.user
        address = verified_email(user)
        if not address or user.username in sent:
            continue
        with translation.override(user.language):
            subject = _("LabGPU statement for %(lab)s, %(month)s") % {
                "lab": lab.name,
                "month": f"{month:%Y-%m}",
            }
            body = _(
                "The statement of %(lab)s for %(month)s is attached. Total: USD %(total)s."
            ) % {"lab": lab.name, "month": f"{month:%Y-%m}", "total": money(statement.total)}
        message = EmailMessage(subject, body, None, [address])
        try:
            if user.language not in pdfs:
                pdfs[user.language] = statement_pdf(statement, language=user.language)
            message.attach(
                f"labgpu-statement-{lab.pk}-{month:%Y-%m}.pdf",
                pdfs[user.language],
                "application/pdf",
            )
        except PdfFontMissing as exc:
            logger.error("statement PDF for %s not attached: %s", user.username, exc.message)
        try:
            message.send()
        except Exception as exc:
            # The class only: an SMTP server's reply can echo credentials or addresses.
            logger.error(
                "statement of lab %s for %s not mailed to %s (%s); retried on a later run",
                lab.pk,
                f"{month:%Y-%m}",
                user.username,
                type(exc).__name__,
            )
            failed.append(type(exc).__name__)
            continue
        sent.append(user.username)
        StatementDelivery.objects.filter(pk=delivery.pk).update(recipients=sent)
    if failed:
        # Release the lease: the next run retries the admins left.
        StatementDelivery.objects.filter(pk=delivery.pk).update(
            claimed_until=None, last_error=", ".join(sorted(set(failed)))[:200]
        )
        raise StatementNotSent(lab.pk)
    StatementDelivery.objects.filter(pk=delivery.pk).update(
        sent_at=timezone.now(), recipients=sent, total=statement.total, last_error=""
    )
    delivery.refresh_from_db()
    return delivery


def statements_send_due(*, now: datetime | None = None) -> int:
    """The beat's hourly run: last month's statement for every lab not yet sent it, once the
    month's usage is closed (labgpu.statements.selectors.month_usage_open); a lab whose
    month is still open, or whose sending failed, is tried again on a later run without
    holding up the others. Returns how many were sent."""
    now = now or timezone.now()
    month = previous_month(now.date())
    done = set(
        StatementDelivery.objects.filter(month=month, sent_at__isnull=False).values_list(
            "lab_id", flat=True
        )
    )
    count = 0
    for lab in Lab.objects.exclude(pk__in=done).order_by("pk"):
        pending = month_usage_open(lab=lab, month=month)
        if pending:
            logger.info(
                "statement of lab %s for %s waits for metering: %s",
                lab.pk,
                f"{month:%Y-%m}",
                "; ".join(pending[:5]),
            )
            continue
        try:
            if statement_send(lab=lab, month=month, now=now) is not None:
                count += 1
        except StatementNotSent:
            continue  # logged per admin; the next run retries
        except Exception as exc:
            StatementDelivery.objects.filter(lab=lab, month=month, sent_at__isnull=True).update(
                claimed_until=None, last_error=type(exc).__name__[:200]
            )
            logger.error(
                "statement of lab %s for %s failed (%s); retried on a later run",
                lab.pk,
                f"{month:%Y-%m}",
                type(exc).__name__,
            )
    return count
