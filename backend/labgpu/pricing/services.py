"""Price writes: the provider sync, the site admin's adjustment and display currency.

A change is a new row effective from the moment it is known (DigitalOcean publishes no effective
time, so the sync's clock is the price's start); rows are never updated or deleted. Each write
locks the instance type's row first, so a sync and an adjustment racing each other write their
rows one after the other and the later one carries the earlier one's values.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from labgpu.accounts.models import User
from labgpu.audit.services import audit_record
from labgpu.catalog.models import InstanceType, ProviderAccount
from labgpu.core.errors import ApplicationError, NotPermitted
from labgpu.pricing.models import DisplayCurrency, InstanceTypePrice, PriceSource, VolumePrice
from labgpu.providers import ProviderDriver, driver_from_settings
from labgpu.providers.errors import ProviderError
from labgpu.providers.metrics import provider_transport

logger = logging.getLogger(__name__)

FIVE_PLACES = Decimal("0.00001")
MAX_ADJUSTMENT = Decimal(1000)
MIN_ADJUSTMENT = Decimal(-100)


def _require_site_admin(actor: User | None) -> None:
    if actor is not None and not actor.is_site_admin:
        raise NotPermitted(_("Only site admins can change prices."), code="not_site_admin")


def adjusted(provider_price: Decimal, adjustment_pct: Decimal) -> Decimal:
    """The provider's price with the site admin's percent applied, to 5 places."""
    return (provider_price * (100 + adjustment_pct) / 100).quantize(FIVE_PLACES)


def _record_catalog_price(instance_type: InstanceType) -> InstanceTypePrice:
    """The price typed into the catalog, as the row in force since the type was made."""
    return InstanceTypePrice.objects.create(
        instance_type=instance_type,
        effective_from=instance_type.created_at,
        provider_price_hourly=instance_type.price_per_hour,
        provider_price_monthly=None,
        adjustment_pct=Decimal(0),
        price_hourly=instance_type.price_per_hour,
        source=PriceSource.CATALOG,
    )


def _latest(instance_type: InstanceType) -> InstanceTypePrice:
    row = instance_type.prices.order_by("-effective_from").first()
    return row if row is not None else _record_catalog_price(instance_type)


def _after(latest: InstanceTypePrice, now: datetime) -> datetime:
    """`now`, or just after the latest row when the clock has not moved past it (one row per
    instant; the order of writes is the order of the locks)."""
    return now if now > latest.effective_from else latest.effective_from + timedelta(microseconds=1)


def _write(
    *,
    instance_type: InstanceType,
    at: datetime,
    provider_hourly: Decimal,
    provider_monthly: Decimal | None,
    adjustment_pct: Decimal,
    source: str,
) -> InstanceTypePrice:
    row = InstanceTypePrice.objects.create(
        instance_type=instance_type,
        effective_from=at,
        provider_price_hourly=provider_hourly,
        provider_price_monthly=provider_monthly,
        adjustment_pct=adjustment_pct,
        price_hourly=adjusted(provider_hourly, adjustment_pct),
        source=source,
    )
    # The catalog's copy is what a new booking's estimate starts from (4 places there).
    InstanceType.objects.filter(pk=instance_type.pk).update(
        price_per_hour=row.price_hourly.quantize(Decimal("0.0001")), updated_at=at
    )
    return row


@dataclass
class SyncResult:
    changed: list[dict] = field(default_factory=list)
    unchanged: int = 0
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    volume_changed: bool = False


def _driver(account: ProviderAccount) -> ProviderDriver:
    return driver_from_settings(
        kind=account.kind,
        base_url=account.api_base_url,
        credential_env=account.token_env_var,
        max_attempts=settings.LABGPU_PROVIDER_MAX_ATTEMPTS,
        max_retry_wait_s=settings.LABGPU_PROVIDER_MAX_RETRY_WAIT_S,
        transport=provider_transport(),
    )


def prices_sync(
    *,
    actor: User | None = None,
    account: ProviderAccount | None = None,
    now: datetime | None = None,
) -> SyncResult:
    """Read each active account's `GET /v2/sizes` and record every instance type whose
    `price_hourly` or `price_monthly` changed, effective `now`; then the volume price.

    `actor` None is the schedule; a person must be a site admin. An account that cannot be read
    (no token, provider down) is reported in `errors` and its prices stay as they were.
    """
    _require_site_admin(actor)
    now = now or timezone.now()
    result = SyncResult()
    accounts = [account] if account else list(ProviderAccount.objects.filter(is_active=True))
    for acct in accounts:
        types = list(InstanceType.objects.filter(provider_account=acct))
        if not types:
            continue
        try:
            driver = _driver(acct)
            try:
                sizes = {size.slug: size for size in driver.sizes()}
            finally:
                close = getattr(driver, "close", None)
                if close:
                    close()
        except ProviderError as exc:
            logger.warning("price sync of %s failed: %s", acct.name, exc)
            result.errors.append(f"{acct.name}: {exc}")
            continue
        for instance_type in types:
            size = sizes.get(instance_type.provider_size)
            if size is None:
                result.missing.append(instance_type.provider_size)
                continue
            change = _sync_one(instance_type=instance_type, size=size, now=now, actor=actor)
            if change:
                result.changed.append(change)
            else:
                result.unchanged += 1
    result.volume_changed = _sync_volume_price(now=now, actor=actor)
    return result


@transaction.atomic
def _sync_one(*, instance_type: InstanceType, size: object, now: datetime, actor: User | None):
    instance_type = InstanceType.objects.select_for_update().get(pk=instance_type.pk)
    latest = _latest(instance_type)
    hourly: Decimal = size.price_hourly  # type: ignore[attr-defined]
    monthly: Decimal = size.price_monthly  # type: ignore[attr-defined]
    if (
        latest.source != PriceSource.CATALOG
        and latest.provider_price_hourly == hourly
        and latest.provider_price_monthly == monthly
    ):
        return None
    at = _after(latest, now)
    row = _write(
        instance_type=instance_type,
        at=at,
        provider_hourly=hourly,
        provider_monthly=monthly,
        adjustment_pct=latest.adjustment_pct,
        source=PriceSource.SYNC,
    )
    change = {
        "instance_type": instance_type.pk,
        "provider_size": instance_type.provider_size,
        "from": str(latest.price_hourly),
        "to": str(row.price_hourly),
        "provider_price_hourly": str(hourly),
        "effective_from": at.isoformat(),
    }
    audit_record(actor=actor, action="price.sync", target=instance_type, data=change)
    return change


@transaction.atomic
def _sync_volume_price(*, now: datetime, actor: User | None) -> bool:
    """The configured block-storage list price (DigitalOcean's API publishes none), recorded
    when it differs from the price in force."""
    configured = Decimal(str(settings.LABGPU_VOLUME_PRICE_GB_MONTH))
    latest = VolumePrice.objects.select_for_update().order_by("-effective_from").first()
    if latest is not None and latest.price_gb_month == configured:
        return False
    row = VolumePrice.objects.create(
        effective_from=now, price_gb_month=configured, source=PriceSource.SETTING
    )
    audit_record(
        actor=actor,
        action="price.volume",
        target=row,
        data={"from": str(latest.price_gb_month) if latest else None, "to": str(configured)},
    )
    return True


def _decimal(value: object, *, field_name: str) -> Decimal:
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        number = Decimal("NaN")
    if not number.is_finite():
        raise ApplicationError(_("Enter a number."), code="invalid_number", field=field_name)
    return number


@transaction.atomic
def price_adjustment_set(
    *, actor: User, instance_type: InstanceType, adjustment_pct: object, now: datetime | None = None
) -> InstanceTypePrice:
    """Set the site admin's percent on the provider's price (−10 = 10 % discount), effective now."""
    _require_site_admin(actor)
    pct = _decimal(adjustment_pct, field_name="adjustment_pct")
    if not MIN_ADJUSTMENT <= pct <= MAX_ADJUSTMENT or pct != pct.quantize(Decimal("0.01")):
        raise ApplicationError(
            _("The adjustment must be a percentage from -100 to 1000 with at most two decimals."),
            code="adjustment_out_of_range",
            field="adjustment_pct",
        )
    now = now or timezone.now()
    instance_type = InstanceType.objects.select_for_update().get(pk=instance_type.pk)
    latest = _latest(instance_type)
    if latest.adjustment_pct == pct:
        return latest
    row = _write(
        instance_type=instance_type,
        at=_after(latest, now),
        provider_hourly=latest.provider_price_hourly,
        provider_monthly=latest.provider_price_monthly,
        adjustment_pct=pct,
        source=PriceSource.ADJUSTMENT,
    )
    audit_record(
        actor=actor,
        action="price.adjustment",
        target=instance_type,
        data={
            "adjustment_pct": {"from": f"{latest.adjustment_pct:.2f}", "to": f"{pct:.2f}"},
            "price_hourly": {"from": str(latest.price_hourly), "to": str(row.price_hourly)},
            "effective_from": row.effective_from.isoformat(),
        },
    )
    return row


def catalog_price_recorded(*, instance_type: InstanceType, now: datetime | None = None) -> None:
    """A price typed into the catalog after pricing started recording: the row in force from
    now (provider price and adjustment both replaced by it until the next sync)."""
    with transaction.atomic():
        locked = InstanceType.objects.select_for_update().get(pk=instance_type.pk)
        latest = locked.prices.order_by("-effective_from").first()
        if (
            latest is None
            or latest.price_hourly.quantize(Decimal("0.0001")) == locked.price_per_hour
        ):
            return
        InstanceTypePrice.objects.create(
            instance_type=locked,
            effective_from=_after(latest, now or timezone.now()),
            provider_price_hourly=locked.price_per_hour,
            provider_price_monthly=None,
            adjustment_pct=Decimal(0),
            price_hourly=locked.price_per_hour,
            source=PriceSource.CATALOG,
        )


CURRENCY_CODES = {"CNY", "EUR", "GBP", "JPY", "HKD", "SGD", "CAD", "AUD", "CHF", "KRW", "INR"}


@transaction.atomic
def display_currency_set(
    *, actor: User, code: str, rate: object = None, rate_date: date | None = None
) -> DisplayCurrency:
    """Show amounts also in `code` at `rate` per USD as of `rate_date`; `code` "" = USD only."""
    _require_site_admin(actor)
    code = (code or "").strip().upper()
    if code in ("", "USD"):
        row = DisplayCurrency.objects.create(code="", rate=None, rate_date=None, set_by=actor)
    else:
        if code not in CURRENCY_CODES:
            raise ApplicationError(
                _("Choose a currency from %(codes)s.")
                % {"codes": ", ".join(sorted(CURRENCY_CODES))},
                code="unknown_currency",
                field="code",
            )
        number = _decimal(rate, field_name="rate")
        # Checked as stored (six places): 0.0000004 is positive but stores as 0.
        if number > Decimal("100000") or number.quantize(Decimal("0.000001")) <= 0:
            raise ApplicationError(
                _("The rate must be a positive number of %(code)s per US dollar.") % {"code": code},
                code="invalid_rate",
                field="rate",
            )
        if rate_date is None:
            raise ApplicationError(
                _("Give the date the rate is from."), code="rate_date_required", field="rate_date"
            )
        row = DisplayCurrency.objects.create(
            code=code, rate=number.quantize(Decimal("0.000001")), rate_date=rate_date, set_by=actor
        )
    audit_record(
        actor=actor,
        action="price.display_currency",
        target=row,
        data={
            "code": row.code or "USD",
            "rate": str(row.rate) if row.rate else None,
            "rate_date": row.rate_date.isoformat() if row.rate_date else None,
        },
    )
    return row
