"""What never reaches a log line, in one place: the logging filter in settings.LOGGING (every
handler, and the httpx/httpcore loggers), gunicorn's access and error logs (labgpu.ops.gunicorn)
and JSON error pages use `redact`. No Django here: gunicorn's master loads it before the app.

- LabGPU's own secrets by their shape: calendar feed secrets (`lgf_…`), API tokens (`lgp_…`),
  invitation links (`lgi_…`), e-mail verification links (`lgv_…`); each keeps its public
  prefix, so a line still says which one.
- Credentials in headers: `Authorization: <scheme> <value>`, `Bearer <value>` anywhere.
- Query parameters that carry a credential: chat webhooks' WeCom `key`, DingTalk `access_token`
  and `sign`, OpenID Connect's `code`, `state`, `id_token_hint` and friends.
- Path tokens of chat webhooks: Slack's `/services/T…/B…/<token>`, Feishu/Lark's
  `/open-apis/bot/v2/hook/<token>`; any other URL path segment shaped like a token.
- The values of the environment's secrets (provider tokens `LABGPU_PROVIDER_TOKEN_*`, the OIDC
  client secret, the LDAP bind password, …), wherever they appear.
"""

from __future__ import annotations

import logging
import os
import re

REDACTED = "[redacted]"

_PREFIXED = re.compile(r"\b(lg[fpiv]_[0-9a-f]{1,16})_[A-Za-z0-9_\-]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",]+")
# `Authorization: Basic …` in a header dump, `'authorization': '…'` in a dict's repr.
_AUTH_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authorization\b['\"]?+\s*+[:=]\s*+['\"]?+)(?!bearer\s)[^'\"\r\n]+"
)
_SECRET_PARAMS = (
    "key|access_token|sign|code|state|token|id_token|id_token_hint|refresh_token|client_secret|"
    "secret|password|session_state|code_verifier|signature"
)
_QUERY = re.compile(rf"(?i)([?&;](?:{_SECRET_PARAMS})=)[^&#\s'\"]+")
_CHAT_PATH = re.compile(r"(/services/|/open-apis/bot/v2/hook/)[^?#\s'\"]+")
# A path segment of 20+ URL-safe characters with letters and digits (a generic webhook's token).
_TOKEN_SEGMENT = re.compile(
    r"(?<=/)(?=[A-Za-z_\-]*\d)(?=[\d_\-]*[A-Za-z])[A-Za-z0-9_\-]{20,}(?=[/?#\s'\"]|$)"
)
# Environment variables whose values are secrets.
_SECRET_ENV = re.compile(
    r"^(LABGPU_PROVIDER_TOKEN_.+|DJANGO_SECRET_KEY|OIDC_RP_CLIENT_SECRET|LABGPU_OIDC_CLIENT_SECRET|"
    r"LABGPU_LDAP_BIND_PASSWORD|LABGPU_METRICS_TOKEN|LABGPU_CHANNEL_KEY|.*_PASSWORD|.*_SECRET)$"
)
_MIN_SECRET = 8  # shorter values would redact ordinary words


def _environment_secrets() -> list[str]:
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_ENV.match(k) and len(v) >= _MIN_SECRET),
        key=len,
        reverse=True,
    )


def redact(text: str) -> str:
    for secret in _environment_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _PREFIXED.sub(rf"\1_{REDACTED}", text)
    text = _BEARER.sub(rf"\1{REDACTED}", text)
    text = _AUTH_HEADER.sub(rf"\1{REDACTED}", text)
    text = _QUERY.sub(rf"\1{REDACTED}", text)
    text = _CHAT_PATH.sub(rf"\1{REDACTED}", text)
    return _TOKEN_SEGMENT.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """Rewrites a record's message (its arguments merged in), string extras and traceback
    through `redact`. Installed on every handler in settings.LOGGING and on the httpx/httpcore
    loggers, which log each request's URL at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        for key, value in vars(record).items():
            if key not in ("msg", "message") and isinstance(value, str) and key not in _PLAIN:
                setattr(record, key, redact(value))
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


# LogRecord attributes that are ours to trust (names, paths), not worth rewriting.
_PLAIN = {
    "name",
    "levelname",
    "pathname",
    "filename",
    "module",
    "funcName",
    "threadName",
    "processName",
    "taskName",
    "asctime",
}
