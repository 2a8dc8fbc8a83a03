"""A small client for the LabGPU REST API: one error type, retries for transient failures."""

import time
from collections.abc import Iterator
from typing import Any

import httpx

from labgpu_cli import __version__

# Exit codes (documented in README.md).
EXIT_OK = 0
EXIT_USAGE = 1
EXIT_API = 2
EXIT_AUTH = 3
EXIT_SERVER = 4
EXIT_WAIT = 5

TRANSIENT_STATUSES = {429, 502, 503, 504}


class CliError(Exception):
    """Something that ends the command with `exit_code` after printing `message`."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class ApiError(CliError):
    """The API answered with its error shape {message, code, extra}."""

    def __init__(self, status: int, code: str, message: str, extra: dict[str, Any]) -> None:
        if status == 401:
            exit_code = EXIT_AUTH
        elif 400 <= status < 500:
            exit_code = EXIT_API
        else:
            exit_code = EXIT_SERVER
        super().__init__(message, exit_code)
        self.status = status
        self.code = code
        self.extra = extra
        self.body: Any = None


def _api_error(response: httpx.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "code" in body:
        error = ApiError(
            response.status_code,
            str(body.get("code")),
            str(body.get("message", "")),
            body.get("extra") or {},
        )
    else:
        error = ApiError(
            response.status_code,
            "server_error" if response.status_code >= 500 else "http_error",
            f"HTTP {response.status_code} from {response.request.url}",
            {},
        )
    error.body = body
    return error


class Client:
    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        backoff_s: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        self.http = httpx.Client(
            base_url=self.url,
            timeout=timeout,
            transport=transport,
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json",
                "User-Agent": f"labgpu-cli/{__version__}",
            },
        )

    def close(self) -> None:
        self.http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        headers: dict[str, str] | None = None,
        retry_unsafe: bool = False,
    ) -> httpx.Response:
        """Send one request; retry transient failures with backoff.

        Reads are always retried. A write is retried after a failure that may have reached the
        server only when `retry_unsafe` says a replay is harmless (booking creates carry an
        Idempotency-Key, so the retry returns the first booking instead of making a second);
        otherwise only when the connection was never made.
        """
        safe = method.upper() in ("GET", "HEAD", "OPTIONS") or retry_unsafe
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self.http.request(
                    method, path, params=params, json=json, headers=headers
                )
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if attempt > self.retries:
                    raise CliError(f"cannot reach {self.url}: {exc}", EXIT_SERVER) from None
                self._sleep(attempt)
                continue
            except httpx.TransportError as exc:
                if not safe or attempt > self.retries:
                    raise CliError(f"request to {self.url} failed: {exc}", EXIT_SERVER) from None
                self._sleep(attempt)
                continue
            transient = response.status_code in TRANSIENT_STATUSES or (
                response.status_code >= 500 and safe
            )
            if transient and attempt <= self.retries and (safe or response.status_code == 429):
                self._sleep(attempt, response)
                continue
            if response.status_code >= 400:
                raise _api_error(response)
            return response

    def _sleep(self, attempt: int, response: httpx.Response | None = None) -> None:
        delay = self.backoff_s * 2 ** (attempt - 1)
        if response is not None:
            hint = response.headers.get("Retry-After")
            if hint and hint.isdigit():
                delay = max(delay, min(float(hint), 60.0))
        time.sleep(delay)

    def get(self, path: str, **params: Any) -> Any:
        clean = {key: value for key, value in params.items() if value is not None}
        return self.request("GET", path, params=clean).json()

    def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.request("POST", path, json=body if body is not None else {}, **kwargs).json()

    def paginate(self, path: str, *, limit: int | None = None, **params: Any) -> Iterator[Any]:
        """Every result of a paginated list ({count, next, previous, results}), page by page."""
        page = 1
        seen = 0
        while True:
            body = self.get(path, page=page, page_size=100, **params)
            if isinstance(body, list):  # an unpaginated list
                yield from body
                return
            for item in body["results"]:
                yield item
                seen += 1
                if limit is not None and seen >= limit:
                    return
            if not body.get("next"):
                return
            page += 1
