"""One JSON error shape for every error: {"message", "code", "extra"} (STYLE.md)."""

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import ProtectedError, RestrictedError
from django.http import Http404, JsonResponse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from labgpu.core.errors import CSRF_FAILED, ApplicationError
from labgpu.core.language import shown_language

logger = logging.getLogger(__name__)


def error_body(message: str, code: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"message": message, "code": code, "extra": extra or {}}


def _first_code(detail: Any) -> str | None:
    if isinstance(detail, dict):
        for value in detail.values():
            found = _first_code(value)
            if found:
                return found
    if isinstance(detail, list):
        for value in detail:
            found = _first_code(value)
            if found:
                return found
    return getattr(detail, "code", None)


def _validation_response(error: exceptions.ValidationError) -> Response:
    detail = error.detail
    if isinstance(detail, dict):
        fields = {
            key: value if isinstance(value, list) else [value] for key, value in detail.items()
        }
        errors = fields.pop("non_field_errors", None)
        if errors:
            message = str(errors[0])
        elif fields:
            message = _("Invalid input in %(fields)s.") % {"fields": ", ".join(fields)}
        else:
            message = _("Invalid input in the request.")
        code = _first_code(detail) or "invalid"
        if code in {"invalid", "required", "null", "blank"} and len(fields) != 1:
            code = "invalid"
        extra: dict[str, Any] = {"fields": fields}
        if errors:
            extra["non_field_errors"] = errors
    else:
        items = detail if isinstance(detail, list) else [detail]
        message, code, extra = str(items[0]), _first_code(items) or "invalid", {}
    return Response(error_body(message, code, extra), status=status.HTTP_400_BAD_REQUEST)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        response = Response(error_body(exc.message, exc.code, exc.extra), status=exc.status_code)
        if exc.status_code == 429 and "retry_after_s" in exc.extra:
            response["Retry-After"] = str(exc.extra["retry_after_s"])
        return response
    if isinstance(exc, ProtectedError | RestrictedError):
        # Deleting a catalog entry that bookings, nodes or pools still refer to.
        users = sorted({obj._meta.verbose_name_plural for obj in exc.args[1]})
        return Response(
            error_body(
                _("Still in use by %(tables)s; deactivate it instead.")
                % {"tables": ", ".join(map(str, users))},
                "in_use",
                {"referenced_by": [str(u) for u in users]},
            ),
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, RequestDataTooBig):
        # Raised while DRF reads the body; a client's mistake, not ours.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            error_body(
                _("The request body is larger than %(limit)s bytes.") % {"limit": limit},
                "request_too_large",
                {"limit_bytes": limit},
            ),
            status=status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    if isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.ValidationError):
        return _validation_response(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("Unhandled error in %s", context.get("view"))
        return Response(
            error_body(_("Something went wrong on our side. It has been logged."), "server_error"),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    detail = response.data.get("detail", "") if isinstance(response.data, dict) else ""
    code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
    extra = {}
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        extra["retry_after_s"] = int(exc.wait)
    response.data = error_body(str(detail) or str(exc), code, extra)
    return response


def _json_error(request, status_code: int, message: Any, code: str, extra=None) -> JsonResponse:  # type: ignore[no-untyped-def]
    """An error body written outside DRF, in the reader's language: a signed-in person's
    profile language (DRF's authentication never ran), else what LocaleMiddleware chose from
    Accept-Language. `message` is lazy, so it is translated here."""
    user = getattr(request, "user", None)
    language = getattr(user, "language", "") if getattr(user, "is_authenticated", False) else ""
    language = shown_language(request) or language
    with translation.override(language or translation.get_language()):
        body = error_body(str(message), code, extra)
        response = JsonResponse(body, status=status_code)
        response["Content-Language"] = translation.get_language()
    return response


# Django-level handlers, for errors raised outside DRF views (unknown /api/ URLs, crashes).
def handler404(request, exception=None):  # type: ignore[no-untyped-def]
    return _json_error(request, 404, gettext_lazy("Not found."), "not_found")


def handler500(request):  # type: ignore[no-untyped-def]
    message = gettext_lazy("Something went wrong on our side. It has been logged.")
    return _json_error(request, 500, message, "server_error")


def handler403(request, exception=None):  # type: ignore[no-untyped-def]
    message = gettext_lazy("You do not have permission to do that.")
    return _json_error(request, 403, message, "permission_denied")


def handler400(request, exception=None):  # type: ignore[no-untyped-def]
    return _json_error(request, 400, gettext_lazy("Bad request."), "bad_request")


def csrf_failure(request, reason=""):  # type: ignore[no-untyped-def]
    # Django's reason ("CSRF cookie not set.") is English and for developers: kept in extra.
    return _json_error(request, 403, CSRF_FAILED, "csrf_failed", {"reason": reason})
