"""The one exception type services raise; the API maps it to the one JSON error shape."""

from typing import Any

from django.utils.translation import gettext_lazy


class ApplicationError(Exception):
    """A rule was broken. `code` is stable (docs/api.md); `message` is for people."""

    status_code = 400
    default_code = "invalid"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.extra = dict(extra or {})
        if field:
            self.extra.setdefault("fields", {})[field] = [message]
        if status_code is not None:
            self.status_code = status_code


class NotPermitted(ApplicationError):
    status_code = 403
    default_code = "permission_denied"


class NotFound(ApplicationError):
    status_code = 404
    default_code = "not_found"


class Conflict(ApplicationError):
    status_code = 409
    default_code = "conflict"


# One sentence for a failed CSRF check on DRF's views and Django's (api.exceptions.csrf_failure):
# Django's own reason ("CSRF cookie not set.") is English and for developers.
CSRF_FAILED = gettext_lazy(
    "The security check of this request failed (CSRF). Reload the page and try again."
)
