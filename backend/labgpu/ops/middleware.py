"""X-Request-ID: accept a well-formed one from the proxy, else mint one; echo it on the response
and put it on every log line written while the request is handled."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from labgpu.ops.context import request_id_var

HEADER = "X-Request-ID"
# Only short, printable ids are trusted: a client must not be able to forge log structure.
_VALID = re.compile(r"^[A-Za-z0-9._:-]{8,128}$")


def request_id_from(request: HttpRequest) -> str:
    incoming = request.headers.get(HEADER, "")
    return incoming if _VALID.match(incoming) else uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from(request)
        request.request_id = request_id  # type: ignore[attr-defined]
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[HEADER] = request_id
        return response
