"""Password sign-in for local accounts, which a site turns off once single sign-on is in use."""

from typing import Any

from django.conf import settings
from django.contrib.auth import get_backends
from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest


class LocalPasswordBackend(ModelBackend):
    """Django's ModelBackend, refusing every password while LABGPU_LOCAL_LOGIN_ENABLED is off.
    Sessions it made still resolve (get_user), so turning it off never strands a site admin who
    is signed in; they sign in through SSO the next time."""

    @property
    def accepts_passwords(self) -> bool:
        return settings.LABGPU_LOCAL_LOGIN_ENABLED

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if not self.accepts_passwords:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def password_login_enabled() -> bool:
    """Whether any backend takes a username and password: local accounts, or a directory
    (LDAP) backend. Backends that never do say so with `accepts_passwords = False`."""
    return any(getattr(backend, "accepts_passwords", True) for backend in get_backends())
