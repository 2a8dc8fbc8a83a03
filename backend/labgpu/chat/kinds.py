"""What each chat platform accepts: the webhook address it hands out, the JSON it takes, and how
a request is signed. Checked against the platforms' documentation (docs/chat.md cites each):

- Slack incoming webhook: POST `{"text": …}` (`&`, `<`, `>` escaped) to
  https://hooks.slack.com/services/…; answers 200 "ok".
- Feishu / Lark custom bot: POST `{"timestamp": "<unix seconds>", "sign": …, "msg_type": "post",
  "content": {"post": {"zh_cn": {"title": …, "content": [[{"tag": "text", …}]]}}}}` to
  https://open.feishu.cn (or open.larksuite.com)/open-apis/bot/v2/hook/<token>. `sign` =
  base64(HMAC-SHA256 keyed with "<timestamp>\\n<secret>" over an empty message).
  Answers 200 with `{"code": 0}`, a non-zero code on refusal.
- DingTalk robot: POST `{"msgtype": "text", "text": {"content": …}}` to
  https://oapi.dingtalk.com/robot/send?access_token=…&timestamp=<unix ms>&sign=<…>, `sign` =
  URL-encoded base64(HMAC-SHA256 keyed with the secret over "<timestamp>\\n<secret>").
  Answers `{"errcode": 0}`.
- WeCom group bot: POST `{"msgtype": "text", "text": {"content": …}}` (at most 2048 bytes) to
  https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=<key>; the key is the secret. Answers
  `{"errcode": 0}`.
- Generic webhook (ours): POST our JSON with `X-LabGPU-Signature: t=<unix seconds>,v1=<hex
  HMAC-SHA256(secret, "<t>.<body>")>` (Stripe's scheme).
"""

import base64
import hashlib
import hmac
import ipaddress
import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from labgpu import egress
from labgpu.core.errors import ApplicationError

SIGNATURE_HEADER = "X-LabGPU-Signature"
MAX_URL = 2000
MAX_SECRET = 200
WECOM_MAX_BYTES = 2048

# kind: (hosts, path prefix, the query parameter that carries the token, or "")
PLATFORMS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "slack": (("hooks.slack.com",), "/services/", ""),
    "feishu": (("open.feishu.cn", "open.larksuite.com"), "/open-apis/bot/v2/hook/", ""),
    "dingtalk": (("oapi.dingtalk.com",), "/robot/send", "access_token"),
    "wecom": (("qyapi.weixin.qq.com",), "/cgi-bin/webhook/send", "key"),
}


def _bad_url(message: str) -> ApplicationError:
    return ApplicationError(message, code="invalid_webhook_url", field="url")


def exemptions() -> egress.Exemptions:
    """What the egress policy lets chat reach beyond public addresses: loopback, with
    LABGPU_CHAT_ALLOW_LOOPBACK (tests, `make run`'s chat sink)."""
    return egress.Exemptions(loopback=settings.LABGPU_CHAT_ALLOW_LOOPBACK)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def validate_url(kind: str, url: str) -> None:
    """Raise ApplicationError(field="url") unless `url` is a webhook address of `kind`.

    With LABGPU_CHAT_ALLOW_LOOPBACK (tests, `make run`), any http(s) URL on a loopback host is
    taken for any kind, so local receivers can stand in for the platforms."""
    if len(url) > MAX_URL:
        raise _bad_url(f"The URL is longer than {MAX_URL} characters.")
    try:
        parts = urllib.parse.urlsplit(url)
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as error:
        raise _bad_url(f"Not a URL: {error}.") from error
    if parts.username or parts.password:
        raise _bad_url("The URL must not carry a user name or password.")
    if settings.LABGPU_CHAT_ALLOW_LOOPBACK and _is_loopback(host):
        if parts.scheme not in ("http", "https"):
            raise _bad_url("The URL must start with http:// or https://.")
        return
    if parts.scheme != "https":
        raise _bad_url("The URL must start with https://.")
    if kind == "webhook":
        try:
            egress.POLICY.check(url, exemptions())
        except egress.EgressRefused as refused:
            raise _bad_url("The host must resolve to public addresses only.") from refused
        return
    hosts, prefix, token = PLATFORMS[kind]
    if host not in hosts or parts.port not in (None, 443):
        raise _bad_url(f"A {kind} webhook lives on {' or '.join(hosts)}.")
    if not parts.path.startswith(prefix) or (len(parts.path) <= len(prefix) and not token):
        raise _bad_url(f"A {kind} webhook's path starts with {prefix}.")
    if token and not urllib.parse.parse_qs(parts.query).get(token):
        raise _bad_url(f"A {kind} webhook URL carries its {token}.")


def hint(url: str) -> str:
    """What the API shows of a webhook URL: scheme, host and the last four characters."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…{url[-4:]}"


@dataclass(frozen=True)
class Request:
    url: str
    body: bytes
    headers: dict[str, str]


def feishu_sign(timestamp: str, secret: str) -> str:
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def dingtalk_sign(timestamp: str, secret: str) -> str:
    string_to_sign = f"{timestamp}\n{secret}".encode()
    digest = hmac.new(secret.encode(), string_to_sign, hashlib.sha256).digest()
    return urllib.parse.quote_plus(base64.b64encode(digest).decode())


def webhook_signature(timestamp: str, body: bytes, secret: str) -> str:
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


# User text (a member's name, a reason, a pool's name) is in every message; each platform gets it
# as text, never as its markup (docs/chat.md, "Markup"; chat/tests/test_chat_markup.py).


def slack_escape(text: str) -> str:
    """Slack's three control characters as entities, so `<!channel>` or `<url|label>` in user
    text neither pings nor links; nothing else is encoded.
    https://api.slack.com/reference/surfaces/formatting#escaping"""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def feishu_post(title: str, text: str) -> dict[str, Any]:
    """A Feishu/Lark rich-text (`post`) body of `text` elements only: a text message would read
    `<at user_id="all"></at>` in user text as a mention of everyone, a `text` element shows its
    text as it is (`un_escape` false). Each line is a paragraph.
    https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot"""
    paragraphs = [[{"tag": "text", "text": line}] for line in text.split("\n")] if text else []
    return {"title": title, "content": paragraphs}


def _clip_utf8(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode(errors="ignore") + "..."


def build_request(
    *, kind: str, url: str, secret: str, event: str, title: str, text: str, data: dict[str, Any]
) -> Request:
    """The HTTP request that posts one message to a channel of `kind`."""
    message = f"{title}\n\n{text}" if text else title
    headers = {"Content-Type": "application/json; charset=utf-8"}
    payload: dict[str, Any]
    if kind == "slack":
        payload = {"text": slack_escape(message)}
    elif kind == "feishu":
        payload = {"msg_type": "post", "content": {"post": {"zh_cn": feishu_post(title, text)}}}
        if secret:
            timestamp = str(int(time.time()))
            payload = {"timestamp": timestamp, "sign": feishu_sign(timestamp, secret), **payload}
    elif kind == "dingtalk":
        # A text message (not markdown) mentions only whom an `at` field names: none is sent.
        payload = {"msgtype": "text", "text": {"content": message}}
        if secret:
            timestamp = str(int(time.time() * 1000))
            # The sign is already URL-encoded, as DingTalk's own example appends it.
            joiner = "&" if "?" in url else "?"
            url = f"{url}{joiner}timestamp={timestamp}&sign={dingtalk_sign(timestamp, secret)}"
    elif kind == "wecom":
        # Likewise: text, not markdown; no `mentioned_list`.
        payload = {"msgtype": "text", "text": {"content": _clip_utf8(message, WECOM_MAX_BYTES)}}
    else:
        payload = {"event": event, "title": title, "text": text, "data": data}
    body = json.dumps(payload, ensure_ascii=False, default=str).encode()
    if kind == "webhook":
        headers[SIGNATURE_HEADER] = webhook_signature(str(int(time.time())), body, secret)
    return Request(url=url, body=body, headers=headers)


def platform_error(kind: str, body: bytes) -> str:
    """The refusal a platform reports inside a 200 answer ("" when it took the message)."""
    if kind not in ("feishu", "dingtalk", "wecom"):
        return ""
    try:
        answer = json.loads(body or b"{}")
    except ValueError:
        return ""
    if not isinstance(answer, dict):
        return ""
    code = answer.get("code", answer.get("errcode", answer.get("StatusCode", 0)))
    if code in (0, None):
        return ""
    return f"{code}: {answer.get('msg') or answer.get('errmsg') or ''}"[:300]
