"""gunicorn hooks, loaded by backend/gunicorn.conf.py (gunicorn reads ./gunicorn.conf.py from its
working directory: backend/ under `make run`, /app in the image and in docker-compose.yml).

- RedactingLogger: secrets in URLs (calendar feed secrets, `lgf_…`, OIDC `code`/`state`, chat
  webhook tokens) and credentials never reach the access log, whatever `access_log_format` says:
  every atom is redacted before formatting (labgpu.ops.redaction).
- JSON error pages: the errors gunicorn answers itself, before Django sees the request (a request
  line over `limit_request_line` → 414, bad header characters → 400, headers too large → 431),
  use the API's one error shape `{"message", "code", "extra"}` instead of gunicorn's HTML page.

Nothing here imports Django: the master process loads it before the application.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import glogging, util

from labgpu.ops.redaction import RedactingFilter, redact


class RedactingLogger(glogging.Logger):
    """Access lines redacted atom by atom (labgpu.ops.redaction), error-log lines by its filter."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.addFilter(RedactingFilter())

    def atoms(self, resp: Any, req: Any, environ: dict, request_time: Any) -> dict:
        atoms = super().atoms(resp, req, environ, request_time)
        return {
            key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()
        }


# gunicorn's status → the API's error code (docs/api.md).
ERROR_CODES = {
    400: "bad_request",
    403: "permission_denied",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "headers_too_large",
    500: "server_error",
    501: "not_implemented",
}


def write_json_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """Drop-in for gunicorn.util.write_error (same arguments), writing the JSON error shape."""
    if status_int >= 500:
        message = "Something went wrong on our side. It has been logged."
    else:
        message = f"{reason}: {redact(mesg)}" if mesg else reason
    body = json.dumps(
        {"message": message, "code": ERROR_CODES.get(status_int, "bad_request"), "extra": {}}
    ).encode()
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body)


def install_json_error_pages() -> None:
    # gunicorn's workers call util.write_error through the module, so replacing the attribute in
    # the master (before workers fork) covers every worker class. test_gunicorn.py checks it on a
    # real gunicorn, so an upgrade that moves the function fails CI rather than serving HTML.
    util.write_error = write_json_error
