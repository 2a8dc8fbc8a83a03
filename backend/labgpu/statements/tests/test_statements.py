"""Monthly statements: lines per user, cost centre and pool; totals equal to the cent to what the
fixture's seconds cost at the prices in force, worked out by hand in this file (never from our
periods), checked in the text read back out of the PDF with pypdf and in the HTML read with the
standard library's parser; sent to lab admins once per lab-month, in their language, only once
the month's metering is closed, at least once."""

import io
import re
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from html.parser import HTMLParser

import pypdf
import pytest
from django.core import mail
from django.db import connection

from conftest import client_for
from labgpu.accounts.models import Membership
from labgpu.accounts.tests.factories import UserFactory
from labgpu.bookings.tests.factories import BookingFactory
from labgpu.budgets.models import CostCentre
from labgpu.catalog.tests.factories import InstanceTypeFactory, NodePoolFactory
from labgpu.pricing.models import InstanceTypePrice, PriceSource
from labgpu.pricing.services import display_currency_set
from labgpu.provisioning.models import Node, Volume
from labgpu.statements.models import StatementDelivery
from labgpu.statements.render import statement_html, statement_pdf
from labgpu.statements.selectors import statement_build
from labgpu.statements.services import statements_send_due
from labgpu.usage.models import StorageUsage
from labgpu.usage.services import storage_record, usage_record_droplet

pytestmark = pytest.mark.django_db

MAY = date(2030, 5, 1)
T0 = datetime(2030, 5, 3, 9, 0, tzinfo=UTC)


def _price(instance_type, at, price):
    InstanceTypePrice.objects.create(
        instance_type=instance_type,
        effective_from=at,
        provider_price_hourly=Decimal(price),
        price_hourly=Decimal(price),
        source=PriceSource.SYNC,
    )


def _droplet(booking, start, seconds, *, charged=True):
    node = Node.objects.create(
        booking=booking,
        attempt=Node.objects.filter(booking=booking).count() + 1,
        provider_account=booking.pool.instance_type.provider_account,
        region="tor1",
        size="s",
        image="i",
        status="destroyed",
    )
    return usage_record_droplet(
        booking=booking,
        node_id=node.pk,
        provider_account_id=node.provider_account_id,
        droplet_id=f"d{node.pk}",
        started_at=start,
        ended_at=start + timedelta(seconds=seconds),
        charged=charged,
    )


@pytest.fixture
def may(alice, bob, vision_lab, instance_type):
    """A month of use: two users, two pools, a price change in a booking, a droplet running
    over the month's end, a failed node (not charged) and two volumes."""
    dave = UserFactory(username="dave")
    Membership.objects.create(user=dave, lab=vision_lab, role=Membership.Role.MEMBER)
    big = InstanceTypeFactory(
        name="8x",
        slug="eightx",
        provider_size="gpu-mi300x8-1536gb",
        provider_account=instance_type.provider_account,
    )
    small_pool = NodePoolFactory(instance_type=instance_type, name="mi300x-tor1")
    big_pool = NodePoolFactory(instance_type=big, name="mi300x8-atl1")
    _price(instance_type, T0 - timedelta(days=30), "1.99")
    _price(instance_type, T0 + timedelta(days=10, seconds=17), "2.07")
    _price(big, T0 - timedelta(days=30), "15.92")
    erc = CostCentre.objects.create(lab=vision_lab, code="ERC-1", name="ERC grant")
    nsf = CostCentre.objects.create(lab=vision_lab, code="NSF-2")
    for user, pool, offset_h, seconds, centre in [
        (alice, small_pool, 0, 5 * 3600 + 11, erc),
        (alice, small_pool, 24 * 10 - 1, 3 * 3600 + 7, nsf),  # across the price change
        (dave, big_pool, 48, 3 * 3600 + 1234, None),
        (alice, big_pool, 24 * 28 + 6, 50 * 3600 + 999, None),  # into June
    ]:
        start = T0 + timedelta(hours=offset_h)
        booking = BookingFactory(
            lab=vision_lab,
            user=user,
            pool=pool,
            start=start,
            end=start + timedelta(seconds=seconds + 60),
            status="completed",
            cost_centre=centre,
        )
        _droplet(booking, T0 + timedelta(hours=offset_h), seconds)
    _droplet(booking, T0, 9999, charged=False)  # a failed node: our cost, not the lab's
    for owner, gb in ((alice, 100), (dave, 333)):
        volume = Volume.objects.create(
            owner_user=owner,
            provider_account=instance_type.provider_account,
            region="tor1",
            name=f"v-{owner.username}",
            size_gb=gb,
            state=Volume.State.AVAILABLE,
        )
        since = datetime(2030, 4, 20, tzinfo=UTC)
        while storage_record(
            volume=volume,
            lab_id=vision_lab.pk,
            user_id=owner.pk,
            region="tor1",
            size_gb=gb,
            since=since,
            until=datetime(2030, 6, 2, 5, tzinfo=UTC),
        ):
            pass
    return vision_lab


def _pdf_text(data: bytes) -> str:
    # pypdf reads fpdf2's CFF (CJK) text with a NUL before each character; drop them.
    reader = pypdf.PdfReader(io.BytesIO(data))
    return "\n".join(page.extract_text() for page in reader.pages).replace("\x00", "")


def _amount(text: str, label: str) -> Decimal:
    match = re.search(re.escape(label) + r": USD ([0-9,]+\.[0-9]{2})", text)
    assert match, f"{label} not in {text!r}"
    return Decimal(match[1].replace(",", ""))


def _cents(seconds: int, price: str) -> Decimal:
    """One period's charge, as the statement's rule says: seconds × hourly price / 3600,
    rounded half up to the cent once."""
    return (Decimal(seconds) * Decimal(price) / 3600).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP
    )


def _storage_cents(gb: int, hours: int) -> Decimal:
    """A volume's month: GB × hours / 730 GB-months at USD 0.10, rounded once."""
    return (Decimal(gb) * hours / 730 * Decimal("0.10")).quantize(
        Decimal("0.01"), rounding=ROUND_HALF_UP
    )


# May 2030 worked out by hand from the fixture's seconds and prices (not from our periods):
# alice's first booking, 18011 s at 1.99; her second starts May 13 08:00, 3617 s at 1.99 up to
# the change at 09:00:17, then 7190 s at 2.07; dave's 12034 s at 15.92; alice's last droplet
# starts May 31 15:00: 9 h = 32400 s of it are May's, at 15.92 (the rest, 148599 s, June's).
# Storage: 31 days = 744 h of May, 100 GB (alice) and 333 GB (dave).
MAY_GPU_LINES = {
    ("alice", "ERC-1", "mi300x-tor1"): _cents(18011, "1.99"),
    ("alice", "NSF-2", "mi300x-tor1"): _cents(3617, "1.99") + _cents(7190, "2.07"),
    ("dave", "—", "mi300x8-atl1"): _cents(12034, "15.92"),
    ("alice", "—", "mi300x8-atl1"): _cents(32400, "15.92"),
}
MAY_STORAGE_LINES = {"alice": _storage_cents(100, 744), "dave": _storage_cents(333, 744)}
MAY_GPU = sum(MAY_GPU_LINES.values())
MAY_STORAGE = sum(MAY_STORAGE_LINES.values())
JUNE_GPU_OF_ALICE = _cents(148599, "15.92")


def test_the_hand_sums_are_what_they_say():
    # The figures once more, as a person with a calculator gets them.
    assert MAY_GPU_LINES[("alice", "ERC-1", "mi300x-tor1")] == Decimal("9.96")
    assert MAY_GPU_LINES[("alice", "NSF-2", "mi300x-tor1")] == Decimal("6.13")
    assert sum(MAY_GPU_LINES.values()) == Decimal("212.59")
    assert sum(MAY_STORAGE_LINES.values()) == Decimal("44.13")


class _Rows(HTMLParser):
    """Table rows of the statement page, as lists of cell texts (the standard library's parser)."""

    def __init__(self):
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _html_rows(html: str) -> list[list[str]]:
    parser = _Rows()
    parser.feed(html)
    return parser.rows


def test_statement_totals_equal_the_hand_sums_to_the_cent(may):
    statement = statement_build(lab=may, month=MAY)
    text = _pdf_text(statement_pdf(statement, language="en"))
    assert _amount(text, "GPU total") == MAY_GPU
    assert _amount(text, "Storage total") == MAY_STORAGE
    assert _amount(text, "Total") == MAY_GPU + MAY_STORAGE
    flat = " ".join(text.split())
    for (user, centre, pool), amount in MAY_GPU_LINES.items():
        assert re.search(rf"{user} {re.escape(centre)} {pool} [0-9.,]+ {amount:,.2f}", flat), (
            user,
            centre,
            pool,
            amount,
            flat,
        )
    for user, amount in MAY_STORAGE_LINES.items():
        assert re.search(rf"{user} [0-9.,]+ {amount:,.2f}", flat), (user, amount, flat)

    rows = [r for r in _html_rows(statement_html(statement, language="en")) if r[0] != "User"]
    gpu_rows = {(r[0], r[1], r[2]): Decimal(r[4].replace(",", "")) for r in rows if len(r) == 5}
    assert gpu_rows == MAY_GPU_LINES
    storage_rows = {r[0]: Decimal(r[2].replace(",", "")) for r in rows if len(r) == 3}
    assert storage_rows == MAY_STORAGE_LINES
    totals = {r[0]: r[1] for r in rows if len(r) == 2}
    assert totals["GPU total"] == f"USD {MAY_GPU:,.2f}"
    assert totals["Storage total"] == f"USD {MAY_STORAGE:,.2f}"
    assert totals["Total"] == f"USD {MAY_GPU + MAY_STORAGE:,.2f}"


def test_the_june_part_of_a_droplet_is_on_junes_statement(may):
    june = statement_build(lab=may, month=date(2030, 6, 1))
    june_gpu = _amount(_pdf_text(statement_pdf(june, language="en")), "GPU total")
    assert june_gpu == JUNE_GPU_OF_ALICE
    # And the ledger holds no second more: May's and June's periods are every charged second.
    with connection.cursor() as cur:
        cur.execute(
            "SELECT SUM(cost) FROM usage_usagerecord WHERE lab_id = %s AND charged_to_lab", [may.pk]
        )
        assert cur.fetchone()[0] == MAY_GPU + JUNE_GPU_OF_ALICE


def test_chinese_pdf_and_html_read_in_chinese_with_a_labelled_conversion(may, carol):
    display_currency_set(actor=carol, code="CNY", rate="7.1234", rate_date=date(2030, 5, 31))
    statement = statement_build(lab=may, month=MAY)
    text = _pdf_text(statement_pdf(statement, language="zh-hans"))
    assert "月度账单" in text or "账单" in text
    assert _amount(text, "总计") == MAY_GPU + MAY_STORAGE
    converted = ((MAY_GPU + MAY_STORAGE) * Decimal("7.1234")).quantize(Decimal("0.01"))
    assert f"CNY {converted:,.2f}" in text and "7.1234" in text and "2030-05-31" in text
    html = statement_html(statement, language="zh-hans")
    assert "总计" in html and "7.1234" in html and "2030-05-31" in html


def test_chinese_pdf_without_a_cjk_font_is_a_clear_error(may, settings):
    settings.LABGPU_PDF_FONT_CJK = "/nonexistent/font.ttc"
    from labgpu.statements.render import PdfFontMissing

    with pytest.raises(PdfFontMissing) as err:
        statement_pdf(statement_build(lab=may, month=MAY), language="zh-hans")
    assert "LABGPU_PDF_FONT_CJK" in err.value.message


def test_statements_go_to_lab_admins_once_per_lab_month_in_their_language(may, bob):
    bob.email = bob.verified_email = "bob@example.org"
    bob.language = "zh-hans"
    bob.save()
    sent = statements_send_due(now=datetime(2030, 6, 1, 0, 30, tzinfo=UTC))
    assert sent >= 1
    assert statements_send_due(now=datetime(2030, 6, 1, 1, 30, tzinfo=UTC)) == 0
    to_bob = [m for m in mail.outbox if m.to == ["bob@example.org"]]
    assert len(to_bob) == 1
    message = to_bob[0]
    assert "账单" in message.subject
    ((name, content, mimetype),) = message.attachments
    assert mimetype == "application/pdf" and name.endswith("2030-05.pdf")
    assert _amount(_pdf_text(content), "总计") == MAY_GPU + MAY_STORAGE
    assert StatementDelivery.objects.get(lab=may, month=MAY).recipients == ["bob"]


def test_statement_api_is_for_lab_admins(may, alice, bob, mallory):
    url = f"/api/v1/labs/{may.pk}/statement/"
    assert client_for(alice).get(url, {"month": "2030-05"}).status_code == 403
    assert client_for(mallory).get(url, {"month": "2030-05"}).status_code == 404
    bad = client_for(bob).get(url, {"month": "2030-13"})
    assert bad.status_code == 400 and "month" in bad.json()["extra"]["fields"]
    body = client_for(bob).get(url, {"month": "2030-05"}).json()
    assert Decimal(body["total"]) == MAY_GPU + MAY_STORAGE and body["currency"] == "USD"
    pdf = client_for(bob).get(f"{url}pdf/", {"month": "2030-05", "language": "en"})
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert _amount(_pdf_text(pdf.content), "Total") == Decimal(body["total"])
    html = client_for(bob).get(f"{url}html/", {"month": "2030-05"})
    assert html.status_code == 200 and b"USD" in html.content


def test_a_month_outside_the_calendar_is_a_field_error(may, bob):
    url = f"/api/v1/labs/{may.pk}/statement/"
    for month in ("0000-05", "9999-12"):
        bad = client_for(bob).get(url, {"month": month})
        assert bad.status_code == 400, (month, bad.content)
        assert "month" in bad.json()["extra"]["fields"]


def test_english_pdf_keeps_a_chinese_lab_name(may):
    may.name = "视觉实验室"
    may.save(update_fields=["name"])
    text = _pdf_text(statement_pdf(statement_build(lab=may, month=MAY), language="en"))
    assert "视觉实验室" in text


def test_pdf_without_its_latin_font_is_a_clear_error(may, settings):
    # Helvetica (the PDF core font) has no "—" or "≈": rendering would fail deep in fpdf2.
    settings.LABGPU_PDF_FONT = "/nonexistent/font.ttf"
    from labgpu.statements.render import PdfFontMissing

    with pytest.raises(PdfFontMissing) as err:
        statement_pdf(statement_build(lab=may, month=MAY), language="en")
    assert "LABGPU_PDF_FONT" in err.value.message


# --- Only once the month's usage is closed; delivered at least once, each lab on its own. ---

JUNE_1 = datetime(2030, 6, 1, tzinfo=UTC)


def _mailable(user, address):
    user.email = user.verified_email = address
    user.save()


def _running_node(booking, created_at):
    """A droplet the provider made in May and has not destroyed yet: no usage record."""
    return Node.objects.create(
        booking=booking,
        attempt=Node.objects.filter(booking=booking).count() + 1,
        provider_account=booking.pool.instance_type.provider_account,
        region="tor1",
        size="s",
        image="i",
        status="ready",
        provider_id="run-1",
        provider_created_at=created_at,
        ready_at=created_at,
        passed_at=created_at,
        public_ip="203.0.113.7",
    )


def test_a_droplet_running_over_the_month_end_holds_the_statement_until_it_is_metered(
    may, bob, instance_type
):
    _mailable(bob, "bob@example.org")
    start = datetime(2030, 5, 31, 20, tzinfo=UTC)
    booking = BookingFactory(
        lab=may,
        user=bob,
        pool=NodePoolFactory(instance_type=instance_type, name="late-pool"),
        start=start,
        end=start + timedelta(hours=8),
        status="ready",
    )
    node = _running_node(booking, start)
    assert statements_send_due(now=JUNE_1 + timedelta(minutes=30)) == 0
    assert mail.outbox == []
    assert not StatementDelivery.objects.filter(lab=may, sent_at__isnull=False).exists()
    # The provider confirms the destroy on June 1 at 04:00: the ledger now holds the May part.
    Node.objects.filter(pk=node.pk).update(
        status="destroyed", destroyed_at=JUNE_1 + timedelta(hours=4)
    )
    usage_record_droplet(
        booking=booking,
        node_id=node.pk,
        provider_account_id=node.provider_account_id,
        droplet_id="run-1",
        started_at=start,
        ended_at=JUNE_1 + timedelta(hours=4),
        charged=True,
    )
    assert statements_send_due(now=JUNE_1 + timedelta(hours=5)) == 1
    (message,) = mail.outbox
    ((_name, content, _mime),) = message.attachments
    # 4 h of May at 2.07 (the price in force since May 13), by hand: 14400 s × 2.07 / 3600.
    text = _pdf_text(content)
    assert "late-pool" in text
    assert _amount(text, "GPU total") == MAY_GPU + _cents(14400, "2.07")


def test_storage_not_metered_to_the_month_end_holds_the_statement(may, bob, instance_type):
    _mailable(bob, "bob@example.org")
    volume = Volume.objects.create(
        owner_lab=may,
        provider_account=instance_type.provider_account,
        region="tor1",
        name="v-lab",
        size_gb=730,
        provider_id="vol-1",
        state=Volume.State.AVAILABLE,
    )
    Volume.objects.filter(pk=volume.pk).update(created_at=datetime(2030, 5, 30, tzinfo=UTC))
    volume.refresh_from_db()
    # The hourly meter last ran at 23:00 on May 31: the last hour of May is not metered.
    while storage_record(
        volume=volume,
        lab_id=may.pk,
        user_id=None,
        region="tor1",
        size_gb=730,
        since=volume.created_at,
        until=datetime(2030, 5, 31, 23, tzinfo=UTC),
    ):
        pass
    assert statements_send_due(now=JUNE_1 + timedelta(minutes=10)) == 0
    assert mail.outbox == []
    from labgpu.provisioning.services.volumes import volumes_meter

    volumes_meter(until=JUNE_1 + timedelta(minutes=20))
    assert statements_send_due(now=JUNE_1 + timedelta(minutes=30)) == 1
    (message,) = mail.outbox
    text = _pdf_text(message.attachments[0][1])
    # 730 GB × 48 h / 730 h = 48 GB-months at USD 0.10 = USD 4.80, on top of the fixture's.
    assert _amount(text, "Storage total") == MAY_STORAGE + _storage_cents(730, 48)
    lab_volume = StorageUsage.objects.filter(volume=volume, started_at__lt=JUNE_1)
    assert sum(u.gb_months for u in lab_volume) == Decimal(48)


def test_a_worker_killed_between_claim_and_send_sends_after_the_lease(may, bob, settings):
    _mailable(bob, "bob@example.org")
    from django.core.mail import EmailMessage

    real_send = EmailMessage.send

    def killed(self, *args, **kwargs):
        raise SystemExit("worker killed")

    EmailMessage.send = killed
    try:
        with pytest.raises(SystemExit):
            statements_send_due(now=JUNE_1 + timedelta(minutes=5))
    finally:
        EmailMessage.send = real_send
    assert mail.outbox == []
    # Within the lease another worker may still be sending: nothing goes.
    assert statements_send_due(now=JUNE_1 + timedelta(minutes=6)) == 0
    after_lease = JUNE_1 + timedelta(minutes=5, seconds=settings.LABGPU_STATEMENT_LEASE_S + 1)
    assert statements_send_due(now=after_lease) == 1
    assert [m.to for m in mail.outbox] == [["bob@example.org"]]
    delivery = StatementDelivery.objects.get(lab=may, month=MAY)
    assert delivery.sent_at is not None and delivery.recipients == ["bob"]
    assert delivery.attempts == 2
    assert statements_send_due(now=after_lease + timedelta(hours=1)) == 0


def test_a_failed_mail_is_retried_and_logs_no_secret(may, bob, caplog):
    import smtplib

    from django.core.mail import EmailMessage

    _mailable(bob, "bob@example.org")
    real_send = EmailMessage.send

    def refused(self, *args, **kwargs):
        raise smtplib.SMTPAuthenticationError(535, b"5.7.8 bad credentials s3cret-pass")

    EmailMessage.send = refused
    try:
        assert statements_send_due(now=JUNE_1 + timedelta(minutes=5)) == 0
    finally:
        EmailMessage.send = real_send
    assert StatementDelivery.objects.get(lab=may, month=MAY).sent_at is None
    assert "s3cret" not in caplog.text and f"lab {may.pk}" in caplog.text
    assert statements_send_due(now=JUNE_1 + timedelta(hours=1, minutes=5)) == 1
    assert [m.to for m in mail.outbox] == [["bob@example.org"]]


def test_one_labs_failure_does_not_stop_the_others(may, bob, other_lab, monkeypatch):
    _mailable(bob, "bob@example.org")
    erin = UserFactory(username="erin")
    Membership.objects.create(user=erin, lab=other_lab, role=Membership.Role.LAB_ADMIN)
    _mailable(erin, "erin@example.org")
    from labgpu.statements import services

    first = min(may.pk, other_lab.pk)
    real_build = services.statement_build

    def broken_for_first(*, lab, month):
        if lab.pk == first:
            raise RuntimeError("a bug in one lab's data")
        return real_build(lab=lab, month=month)

    monkeypatch.setattr(services, "statement_build", broken_for_first)
    assert statements_send_due(now=JUNE_1 + timedelta(minutes=5)) == 1
    addresses = {"bob@example.org": may.pk, "erin@example.org": other_lab.pk}
    assert [addresses[m.to[0]] for m in mail.outbox] == [max(may.pk, other_lab.pk)]
    monkeypatch.setattr(services, "statement_build", real_build)
    assert statements_send_due(now=JUNE_1 + timedelta(hours=1, minutes=5)) == 1
    assert sorted(addresses[m.to[0]] for m in mail.outbox) == sorted([may.pk, other_lab.pk])
