import hashlib
import secrets
from datetime import datetime

from django.db import IntegrityError, transaction
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _

from labgpu.accounts.models import ApiToken, Lab, Membership, SshKey, User
from labgpu.audit.services import audit_record
from labgpu.core.errors import ApplicationError, Conflict, NotPermitted
from labgpu.core.rows import JoinedRows
from labgpu.core.timeutils import now
from labgpu.providers.ssh_keys import InvalidSshKey, parse_ssh_public_key

TOKEN_PREFIX = "lgp_"


def hash_token(raw: str) -> str:
    # The secret has 256 bits of entropy, so a fast hash is enough (as GitHub does for its tokens).
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(
    *, user: User, name: str, scopes: list[str], expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """Create a personal API token; returns it with the raw secret, which is never stored."""
    unknown = set(scopes) - set(ApiToken.Scope.values)
    if not scopes or unknown:
        raise ApplicationError(
            _("Pick scopes from %(scopes)s.") % {"scopes": ", ".join(ApiToken.Scope.values)},
            code="invalid_scopes",
            field="scopes",
        )
    if expires_at is not None and expires_at <= now():
        raise ApplicationError(
            _("The expiry must be in the future."), code="expiry_in_past", field="expires_at"
        )
    prefix = secrets.token_hex(4)
    raw = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=prefix,
        secret_hash=hash_token(raw),
        scopes=sorted(set(scopes)),
        expires_at=expires_at,
    )
    return token, raw


def token_revoke(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now())


# `select_related("user")` of a live token by its hash, written out once: every API call
# authenticates, and compiling the join on each one cost more CPU than the query.
_LIVE_TOKEN_WITH_USER = JoinedRows(
    [(ApiToken, "t"), (User, "u")],
    f'FROM "{ApiToken._meta.db_table}" t JOIN "{User._meta.db_table}" u ON u.id = t.user_id '
    "WHERE t.secret_hash = %s AND t.revoked_at IS NULL",
    prepared=True,
)


def _live_token_with_user(secret_hash: str) -> ApiToken | None:
    for token, user in _LIVE_TOKEN_WITH_USER.fetch([secret_hash]):
        token.user = user
        return token
    return None


def token_authenticate(raw: str) -> ApiToken | None:
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = _live_token_with_user(hash_token(raw))
    if token is None or (token.expires_at and token.expires_at <= now()):
        return None
    if not token.user.is_active:
        return None
    # Touch at most once a minute: a busy script should not turn every read into a write.
    moment = now()
    if token.last_used_at is None or (moment - token.last_used_at).total_seconds() > 60:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=moment)
    return token


# What a person reads when their key is refused, by the parser's rule (labgpu.providers.ssh_keys).
SSH_KEY_ERRORS = {
    "ssh_key_not_one_line": _(
        "Paste one key on one line: line breaks and control characters are not allowed (add "
        "each key as its own entry)."
    ),
    "ssh_key_options": _(
        "authorized_keys options (command=, from=, …) are not accepted: paste only the key, "
        "starting with its type."
    ),
    "invalid_ssh_key": _(
        "Not an OpenSSH public key, or its body is damaged (expected e.g. 'ssh-ed25519 AAAA… "
        "comment')."
    ),
}


def ssh_key_add(*, user: User, name: str, public_key: str) -> SshKey:
    """Add one public key; it is stored as the line rebuilt from the parsed key (type, body,
    comment), which is what goes into `authorized_keys` on the user's nodes."""
    try:
        key = parse_ssh_public_key(public_key)
    except InvalidSshKey as error:
        raise ApplicationError(
            SSH_KEY_ERRORS[error.code], code=error.code, field="public_key"
        ) from None
    try:
        with transaction.atomic():
            return SshKey.objects.create(
                user=user, name=name, public_key=key.line, fingerprint=key.fingerprint
            )
    except IntegrityError:
        raise Conflict(
            _("You already added this key."), code="duplicate_ssh_key", field="public_key"
        ) from None


def require_lab_admin(*, actor: User, lab: Lab) -> None:
    if actor.is_site_admin:
        return
    if not Membership.objects.filter(user=actor, lab=lab, role=Membership.Role.LAB_ADMIN).exists():
        raise NotPermitted(_("Only this lab's admins can do that."), code="not_lab_admin")


def require_site_admin(*, actor: User) -> None:
    if not actor.is_site_admin:
        raise NotPermitted(_("Only site admins can do that."), code="not_site_admin")


def require_site_admin_to_add(*, actor: User) -> None:
    """Adding someone to a lab shares their bookings and usage with it without their say, so only
    site admins add directly; lab admins invite by e-mail (labgpu.invitations: the person joins
    by accepting) and manage the members they have (roles, limits, removal)."""
    if not actor.is_site_admin:
        raise NotPermitted(
            _("Only site admins add members to a lab directly; invite people by e-mail instead."),
            code="not_site_admin",
        )


@transaction.atomic
def membership_add(
    *,
    actor: User,
    lab: Lab,
    user: User,
    role: str = Membership.Role.MEMBER,
    max_hours_per_week: int | None = None,
    max_concurrent_bookings: int | None = None,
) -> Membership:
    require_site_admin_to_add(actor=actor)
    membership, created = Membership.objects.get_or_create(
        user=user,
        lab=lab,
        defaults={
            "role": role,
            "max_hours_per_week": max_hours_per_week,
            "max_concurrent_bookings": max_concurrent_bookings,
        },
    )
    if not created:
        raise Conflict(
            _("%(username)s is already in %(lab)s.") % {"username": user.username, "lab": lab.name},
            code="already_member",
        )
    audit_record(
        actor=actor,
        action="membership.add",
        target=membership,
        lab=lab,
        data={"user": user.username, "role": role},
    )
    return membership


@transaction.atomic
def membership_update(*, actor: User, membership: Membership, **changes: object) -> Membership:
    require_lab_admin(actor=actor, lab=membership.lab)
    allowed = {"role", "max_hours_per_week", "max_concurrent_bookings"}
    fields = [name for name in changes if name in allowed]
    if (
        changes.get("role") == Membership.Role.MEMBER
        and membership.role == Membership.Role.LAB_ADMIN
    ):
        _ensure_another_admin(membership)
    for name in fields:
        setattr(membership, name, changes[name])
    membership.save(update_fields=[*fields, "updated_at"])
    audit_record(
        actor=actor,
        action="membership.update",
        target=membership,
        lab=membership.lab,
        data={name: changes[name] for name in fields},
    )
    return membership


@transaction.atomic
def membership_remove(*, actor: User, membership: Membership) -> None:
    require_lab_admin(actor=actor, lab=membership.lab)
    if membership.role == Membership.Role.LAB_ADMIN:
        _ensure_another_admin(membership)
    audit_record(
        actor=actor,
        action="membership.remove",
        target=membership,
        lab=membership.lab,
        data={"user": membership.user.username},
    )
    membership.delete()


def _ensure_another_admin(membership: Membership) -> None:
    others = Membership.objects.filter(lab=membership.lab, role=Membership.Role.LAB_ADMIN).exclude(
        pk=membership.pk
    )
    if not others.exists():
        raise Conflict(_("A lab needs at least one lab admin."), code="last_lab_admin")


@transaction.atomic
def lab_create(*, actor: User, name: str, slug: str = "") -> Lab:
    """A new lab (site admins). Its slug comes from the name unless given."""
    require_site_admin(actor=actor)
    lab = Lab(name=name.strip(), slug=slug or _free_slug(name))
    _lab_unique(lab)
    lab.save()
    audit_record(actor=actor, action="lab.create", target=lab, lab=lab, data={"name": lab.name})
    return lab


@transaction.atomic
def lab_update(
    *, actor: User, lab: Lab, name: str | None = None, is_active: bool | None = None
) -> Lab:
    """Rename a lab, or archive it (`is_active=False`: it keeps its history, books nothing new)
    and bring it back. Site admins only."""
    require_site_admin(actor=actor)
    changes: dict[str, object] = {}
    if name is not None and name.strip() != lab.name:
        changes["name"] = {"from": lab.name, "to": name.strip()}
        lab.name = name.strip()
    if is_active is not None and is_active != lab.is_active:
        changes["is_active"] = {"from": lab.is_active, "to": is_active}
        lab.is_active = is_active
    if not changes:
        return lab
    _lab_unique(lab)
    lab.save(update_fields=[*changes, "updated_at"])
    action = "lab.update"
    if list(changes) == ["is_active"]:
        action = "lab.restore" if is_active else "lab.archive"
    audit_record(actor=actor, action=action, target=lab, lab=lab, data={"changes": changes})
    return lab


def _free_slug(name: str) -> str:
    """A short name made from `name`: ASCII (URLs, LDAP groups), so a name in Chinese gets
    `lab-<n>`; a clash with another lab's gets a number."""
    base = slugify(name)[:50] or "lab"
    taken = set(Lab.objects.filter(slug__startswith=base).values_list("slug", flat=True))
    if base not in taken and base != "lab":
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def _lab_unique(lab: Lab) -> None:
    others = Lab.objects.exclude(pk=lab.pk)
    if others.filter(name__iexact=lab.name).exists():
        raise ApplicationError(
            _("A lab with this name exists."), code="duplicate_lab", field="name"
        )
    if others.filter(slug=lab.slug).exists():
        raise ApplicationError(
            _("A lab with this short name exists."), code="duplicate_lab", field="slug"
        )
