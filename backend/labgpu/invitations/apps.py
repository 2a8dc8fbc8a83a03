from django.apps import AppConfig


class InvitationsConfig(AppConfig):
    """Lab admins invite by e-mail; the invitee joins after signing in (issue 16 item 4)."""

    name = "labgpu.invitations"
    label = "invitations"
