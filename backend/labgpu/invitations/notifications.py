"""The invitation e-mail, in the invitee's language when LabGPU knows them, else in the inviter's
language followed by the other one (en, zh-hans); and the word to the inviter when someone else
accepted it."""

import logging
import zoneinfo

from django.core.mail import send_mail
from django.utils import translation
from django.utils.translation import gettext as _

from labgpu.accounts.emails import users_with_verified_email, verified_email
from labgpu.accounts.models import Membership, User
from labgpu.bookings.notifications import notify_person
from labgpu.invitations.models import Invitation

logger = logging.getLogger(__name__)

TEXTS = {
    "en": {
        "subject": "{inviter} invites you to {lab} on LabGPU",
        "body": (
            "{inviter} invites you to join {lab} on LabGPU as {role}.\n\n"
            "Open this link, sign in (or create an account if you have none), and accept:\n"
            "{link}\n\n"
            "The link works once and expires on {expires}. If you did not expect it, ignore "
            "this e-mail."
        ),
        "roles": {"member": "a member", "lab_admin": "a lab admin"},
    },
    "zh-hans": {
        "subject": "{inviter} 邀请您加入 LabGPU 上的 {lab}",
        "body": (
            "{inviter} 邀请您以{role}身份加入 LabGPU 上的 {lab}。\n\n"
            "请打开以下链接，登录（若尚无账号可新建），然后接受邀请：\n"
            "{link}\n\n"
            "此链接仅可使用一次，将于 {expires} 失效。如非您本人预期的邮件，请忽略。"
        ),
        "roles": {"member": "成员", "lab_admin": "课题组管理员"},
    },
}


def _render(language: str, invitation: Invitation, link: str, tz: str) -> tuple[str, str]:
    texts = TEXTS[language]
    inviter = invitation.invited_by
    values = {
        "inviter": (inviter.get_full_name() or inviter.username) if inviter else "LabGPU",
        "lab": invitation.lab.name,
        "role": texts["roles"].get(invitation.role, invitation.role),
        "link": link,
        "expires": invitation.expires_at.astimezone(zoneinfo.ZoneInfo(tz)).strftime(
            "%Y-%m-%d %H:%M %Z"
        ),
    }
    return texts["subject"].format(**values), texts["body"].format(**values)


def invitation_sent(*, invitation: Invitation, link: str) -> None:
    known = users_with_verified_email(invitation.email).filter(is_active=True).first()
    inviter = invitation.invited_by
    if known is not None and known.language in TEXTS:
        languages, tz = [known.language], known.timezone
    else:
        first = inviter.language if inviter and inviter.language in TEXTS else "en"
        languages = [first, *(code for code in TEXTS if code != first)]
        tz = inviter.timezone if inviter else "UTC"
    rendered = [_render(language, invitation, link, tz or "UTC") for language in languages]
    subject = " / ".join(subject for subject, _ in rendered)
    body = "\n\n----------\n\n".join(body for _, body in rendered)
    try:
        send_mail(subject, body, None, [invitation.email])
    except Exception:  # a mail outage must not fail the request; the inviter saw the link once
        logger.exception("could not send the invitation to %s", invitation.email)


def _inviters(invitation: Invitation) -> list[User]:
    """Who sent it, while still one of the lab's admins (or a site admin); else its lab admins."""
    inviter = invitation.invited_by
    admins = User.objects.filter(
        is_active=True,
        memberships__lab=invitation.lab,
        memberships__role=Membership.Role.LAB_ADMIN,
    )
    if (
        inviter is not None
        and inviter.is_active
        and (inviter.is_site_admin or admins.filter(pk=inviter.pk).exists())
    ):
        return [inviter]
    return list(admins)


def invitation_accepted_from_other_address(*, invitation: Invitation, user: User) -> None:
    """Someone whose verified address is not the invited one confirmed and joined: the inviter
    should know, since a forwarded or leaked link lets a stranger into the lab."""
    for person in _inviters(invitation):
        with translation.override(person.language):
            subject = _("%(user)s joined %(lab)s with an invitation sent to %(email)s") % {
                "user": user.username,
                "lab": invitation.lab.name,
                "email": invitation.email,
            }
            body = _(
                "The invitation you sent to %(email)s was accepted by the account %(user)s, "
                "whose verified address is %(address)s. If that is not the person you invited, "
                "remove them from %(lab)s on its members page."
            ) % {
                "email": invitation.email,
                "user": user.username,
                "address": verified_email(user) or _("(none)"),
                "lab": invitation.lab.name,
            }
        notify_person(person, subject, body)
