"""Writes about budgets and cost centres. Lab admins (and site admins) make every change; each is
audited. The booking rules check budgets (bookings.services.rules.check_budget); this module
records the thresholds they cross and tells the lab's admins."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from labgpu.accounts.models import Lab, Membership, User
from labgpu.accounts.selectors import is_lab_admin
from labgpu.audit.services import audit_record
from labgpu.bookings import notifications
from labgpu.budgets.models import Budget, BudgetAlert, CostCentre
from labgpu.budgets.selectors import THRESHOLDS, BudgetPeriod, money
from labgpu.core.errors import ApplicationError, NotPermitted

CURRENCIES = ("USD",)  # the provider's; a display currency is converted, never budgeted in


def _check_lab_admin(actor: User, lab_id: int) -> None:
    if not is_lab_admin(actor, lab_id):
        raise NotPermitted(
            _("Only this lab's admins can change its budgets and cost centres."),
            code="not_lab_admin",
        )


def cost_centre_of_lab(
    *, lab_id: int, cost_centre_id: int | None, field: str = "cost_centre"
) -> int | None:
    """`cost_centre_id` when it is an active cost centre of the lab; a clear error otherwise."""
    if cost_centre_id is None:
        return None
    if not CostCentre.objects.filter(pk=cost_centre_id, lab_id=lab_id, is_active=True).exists():
        raise ApplicationError(
            _("This is not an active cost centre of the booking's lab."),
            code="cost_centre_invalid",
            field=field,
        )
    return cost_centre_id


@transaction.atomic
def cost_centre_create(*, actor: User, lab: Lab, code: str, name: str = "") -> CostCentre:
    _check_lab_admin(actor, lab.pk)
    code = code.strip()
    if not code:
        raise ApplicationError(_("Give the cost centre a code."), code="invalid", field="code")
    try:
        with transaction.atomic():
            centre = CostCentre.objects.create(lab=lab, code=code, name=name)
    except IntegrityError:
        raise ApplicationError(
            _("%(lab)s has a cost centre %(code)s already.") % {"lab": lab.name, "code": code},
            code="cost_centre_exists",
            field="code",
        ) from None
    audit_record(
        actor=actor, action="cost_centre.create", target=centre, lab=lab, data={"code": code}
    )
    return centre


@transaction.atomic
def cost_centre_update(
    *, actor: User, cost_centre: CostCentre, name: str | None = None, is_active: bool | None = None
) -> CostCentre:
    """Rename or retire a cost centre; retiring one clears it as every member's default."""
    _check_lab_admin(actor, cost_centre.lab_id)
    data: dict = {}
    if name is not None and name != cost_centre.name:
        data["name"] = {"from": cost_centre.name, "to": name}
        cost_centre.name = name
    if is_active is not None and is_active != cost_centre.is_active:
        data["is_active"] = is_active
        cost_centre.is_active = is_active
        if not is_active:
            Membership.objects.filter(default_cost_centre=cost_centre).update(
                default_cost_centre=None
            )
    cost_centre.save(update_fields=["name", "is_active", "updated_at"])
    audit_record(
        actor=actor,
        action="cost_centre.update",
        target=cost_centre,
        lab=cost_centre.lab,
        data=data,
    )
    return cost_centre


@transaction.atomic
def cost_centre_default_set(
    *, actor: User, lab: Lab, user: User, cost_centre: CostCentre | None
) -> Membership:
    """The cost centre `user`'s bookings in `lab` carry unless they name another (None: none)."""
    _check_lab_admin(actor, lab.pk)
    membership = Membership.objects.filter(lab=lab, user=user).first()
    if membership is None:
        raise ApplicationError(
            _("%(user)s is not a member of %(lab)s.") % {"user": user.username, "lab": lab.name},
            code="not_a_member",
            field="user",
        )
    centre_id = cost_centre_of_lab(
        lab_id=lab.pk, cost_centre_id=cost_centre.pk if cost_centre else None
    )
    membership.default_cost_centre_id = centre_id
    membership.save(update_fields=["default_cost_centre", "updated_at"])
    audit_record(
        actor=actor,
        action="cost_centre.default_set",
        target=membership,
        lab=lab,
        data={"user": user.username, "cost_centre": cost_centre.code if cost_centre else None},
    )
    return membership


def _validate(
    *,
    lab: Lab,
    cost_centre: CostCentre | None,
    period: str,
    starts_on: date | None,
    ends_on: date | None,
    amount: Decimal,
    currency: str,
) -> None:
    if cost_centre is not None and cost_centre.lab_id != lab.pk:
        raise ApplicationError(
            _("This is not a cost centre of the lab."),
            code="cost_centre_invalid",
            field="cost_centre",
        )
    if amount < 0:
        raise ApplicationError(_("A budget cannot be negative."), code="invalid", field="amount")
    if currency not in CURRENCIES:
        raise ApplicationError(
            _("Budgets are in the provider's currency: %(currencies)s.")
            % {"currencies": ", ".join(CURRENCIES)},
            code="invalid_currency",
            field="currency",
        )
    if period == Budget.Period.CUSTOM:
        if starts_on is None:
            raise ApplicationError(
                _("A custom period needs its first day."), code="required", field="starts_on"
            )
        if ends_on is None or ends_on < starts_on:
            raise ApplicationError(
                _("A custom period ends on or after its first day."),
                code="end_before_start",
                field="ends_on",
            )


def _lab_lock(lab: Lab) -> None:
    """Lock the lab row for update before a budget appears or goes: a booking reads the lab's
    `has_budget` under a share lock with its pool's (bookings.services.snapshot.pool_lock), so it
    waits for this transaction and then sees its budget, or this waits for the booking."""
    Lab.objects.select_for_update().filter(pk=lab.pk).values_list("pk", flat=True).first()


def _lab_flag(lab: Lab) -> None:
    """Keep `Lab.has_budget`, which spares labs without a budget the rule's statements (called
    with the lab row locked: _lab_lock)."""
    has = Budget.objects.filter(lab=lab).exists()
    if lab.has_budget != has:
        Lab.objects.filter(pk=lab.pk).update(has_budget=has)
        lab.has_budget = has


def _audit_data(budget: Budget) -> dict:
    return {
        "cost_centre": budget.cost_centre.code if budget.cost_centre else None,
        "period": budget.period,
        "starts_on": budget.starts_on.isoformat() if budget.starts_on else None,
        "ends_on": budget.ends_on.isoformat() if budget.ends_on else None,
        "amount": str(budget.amount),
        "currency": budget.currency,
        "enforcement": budget.enforcement,
    }


@transaction.atomic
def budget_create(
    *,
    actor: User,
    lab: Lab,
    amount: Decimal,
    cost_centre: CostCentre | None = None,
    period: str = Budget.Period.MONTH,
    starts_on: date | None = None,
    ends_on: date | None = None,
    currency: str = "USD",
    enforcement: str = Budget.Enforcement.SOFT,
) -> Budget:
    _check_lab_admin(actor, lab.pk)
    _validate(
        lab=lab,
        cost_centre=cost_centre,
        period=period,
        starts_on=starts_on,
        ends_on=ends_on,
        amount=amount,
        currency=currency,
    )
    if period == Budget.Period.MONTH:
        starts_on = ends_on = None
    _lab_lock(lab)
    try:
        with transaction.atomic():
            budget = Budget.objects.create(
                lab=lab,
                cost_centre=cost_centre,
                period=period,
                starts_on=starts_on,
                ends_on=ends_on,
                amount=money(amount),
                currency=currency,
                enforcement=enforcement,
            )
    except IntegrityError:
        raise ApplicationError(
            _("This lab or cost centre has a budget already: change that one."),
            code="budget_exists",
            field="cost_centre" if cost_centre else "lab",
        ) from None
    _lab_flag(lab)
    audit_record(
        actor=actor, action="budget.create", target=budget, lab=lab, data=_audit_data(budget)
    )
    return budget


@transaction.atomic
def budget_update(*, actor: User, budget: Budget, **changes: object) -> Budget:
    """Change a budget's amount, period or enforcement. Locked like a booking locks it, so the
    change waits for bookings being checked against the old amount."""
    _check_lab_admin(actor, budget.lab_id)
    Budget.objects.select_for_update().filter(pk=budget.pk).first()
    before = _audit_data(budget)
    for name in ("period", "starts_on", "ends_on", "amount", "currency", "enforcement"):
        if name in changes:
            setattr(budget, name, changes[name])
    _validate(
        lab=budget.lab,
        cost_centre=budget.cost_centre,
        period=budget.period,
        starts_on=budget.starts_on,
        ends_on=budget.ends_on,
        amount=Decimal(budget.amount),
        currency=budget.currency,
    )
    if budget.period == Budget.Period.MONTH:
        budget.starts_on = budget.ends_on = None
    budget.amount = money(Decimal(budget.amount))
    budget.save()
    after = _audit_data(budget)
    audit_record(
        actor=actor,
        action="budget.update",
        target=budget,
        lab=budget.lab,
        data={k: {"from": before[k], "to": after[k]} for k in after if before[k] != after[k]},
    )
    return budget


@transaction.atomic
def budget_delete(*, actor: User, budget: Budget) -> None:
    _check_lab_admin(actor, budget.lab_id)
    lab = budget.lab
    _lab_lock(lab)
    audit_record(
        actor=actor, action="budget.delete", target=budget, lab=lab, data=_audit_data(budget)
    )
    budget.delete()
    _lab_flag(lab)


def budget_alerts_record(*, lab: Lab, due: list[tuple[BudgetPeriod, int]]) -> None:
    """Record each threshold reached (and those below it) once and tell the lab's admins after
    the booking commits: in the app, by e-mail and on chat. Called under the budget lock."""
    for period, percent in due:
        reached = [t for t in THRESHOLDS if t <= percent and t not in period.alerted]
        BudgetAlert.objects.bulk_create(
            [
                BudgetAlert(budget=period.budget, period_start=period.begin, percent=t)
                for t in reached
            ],
            ignore_conflicts=True,
        )
        period.alerted.update(reached)
        transaction.on_commit(
            lambda period=period, percent=percent: _tell(lab=lab, period=period, percent=percent)
        )


def _tell(*, lab: Lab, period: BudgetPeriod, percent: int) -> None:
    admins = [
        m.user
        for m in Membership.objects.filter(lab=lab, role=Membership.Role.LAB_ADMIN).select_related(
            "user"
        )
    ]
    budget = period.budget
    notifications.budget_threshold(
        lab=lab,
        scope=budget.cost_centre.code if budget.cost_centre else lab.name,
        percent=percent,
        amount=budget.amount,
        currency=budget.currency,
        period_start=period.begin,
        period_end=period.end,
        recipients=admins,
    )
