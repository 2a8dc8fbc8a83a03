"""Validate HTTP exchanges against DigitalOcean's own OpenAPI description.

The spec is read in place — never copied into this repository — from, in this order:
1. `$LABGPU_DO_OPENAPI`: a file, e.g. the bundle GitHub CI builds from
   github.com/digitalocean/openapi at a pinned commit. Named but absent is an error, never a
   skip: whoever set it expects validation;
2. `$LABGPU_SHARED_DIR/contracts/digitalocean-droplets.openapi.yaml`;
3. `<repo>/../shared/contracts/digitalocean-droplets.openapi.yaml` (DigitalOcean's spec, cut down).
Needs `openapi-core` (a test extra), imported lazily. Tests that need the referee call
`require_contract()`, which skips them — with the reason, never silently — when there is none.

    recorder = ExchangeRecorder()
    driver = DigitalOceanDriver(..., event_hooks=recorder.hooks)
    ...
    recorder.assert_valid()   # every request and response the driver saw matches the spec
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

SPEC_NAME = "digitalocean-droplets.openapi.yaml"
SPEC_ENV = "LABGPU_DO_OPENAPI"
#: the spec's `servers` entry; requests are validated as if sent there
SPEC_ORIGIN = "https://api.digitalocean.com"


def shared_dir() -> Path:
    override = os.environ.get("LABGPU_SHARED_DIR")
    if override:
        return Path(override)
    repo_root = Path(__file__).resolve().parents[2]  # backend/emulator/contract.py -> repo
    return repo_root.parent / "shared"


class ContractMissing(RuntimeError):
    """`$LABGPU_DO_OPENAPI` names a spec that is not there (a broken CI fetch, a typo)."""


def spec_path() -> Path:
    explicit = os.environ.get(SPEC_ENV)
    if explicit:
        return Path(explicit)
    return shared_dir() / "contracts" / SPEC_NAME


def unavailable_reason() -> str | None:
    """Why the contract cannot be checked here, or None when it can."""
    path = spec_path()
    if not path.is_file():
        if os.environ.get(SPEC_ENV):
            raise ContractMissing(f"${SPEC_ENV} is set to {path}, which is not a file")
        return (
            f"DigitalOcean's OpenAPI description not found at {path}: the DigitalOcean contract is "
            f"NOT validated. Set ${SPEC_ENV} to a bundled spec (CI fetches one) or "
            "LABGPU_SHARED_DIR to the shared/ dir"
        )
    try:
        import openapi_core  # noqa: F401
    except ImportError:
        return (
            "openapi-core (the test extra) is not installed: "
            "the DigitalOcean contract is NOT validated"
        )
    return None


#: a test's user_properties entry: it ran its HTTP exchanges with no spec to check them against
UNVALIDATED = ("digitalocean_contract", "not validated")


def validation_on(node: Any) -> bool:
    """For behaviour tests (retries, 429s, volumes…), which need no spec to run: whether the spec
    is here to validate their exchanges. Without it the test runs unvalidated and is marked so;
    the run then ends with one red line counting them (backend/conftest.py). Contract tests call
    `require_contract()` instead and skip."""
    if unavailable_reason() is None:
        return True
    node.user_properties.append(UNVALIDATED)
    return False


def require_contract() -> Any:
    """For tests: the parsed spec, or a skip that says why (and that nothing was validated)."""
    import pytest

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return load_openapi()


#: Region slugs that DigitalOcean serves GPU droplets in but its `region_slug` enum (used by
#: `image.regions` and the action requests) predates. DigitalOcean's own description names atl1
#: beside nyc2 and tor1 (digitalocean/openapi@7c1300c4, specification/resources/
#: dedicated_inferences/models/dedicated_inference_spec.yml: `enum: [atl1, nyc2, tor1]`), and the
#: sizes list GPU droplets there. The one correction made to the spec as read; nothing else.
REGIONS_MISSING_FROM_ENUM = ("atl1",)


@functools.cache
def _load(path: str) -> Any:
    import yaml
    from openapi_core import OpenAPI

    spec = yaml.safe_load(Path(path).read_text())
    region_slug = spec.get("components", {}).get("schemas", {}).get("region_slug", {})
    if "enum" in region_slug:
        region_slug["enum"] += [
            r for r in REGIONS_MISSING_FROM_ENUM if r not in region_slug["enum"]
        ]
    return OpenAPI.from_dict(spec, base_uri=Path(path).resolve().as_uri())


def load_openapi() -> Any:
    """The parsed spec as an `openapi_core.OpenAPI`; FileNotFoundError when it is absent."""
    path = spec_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"DigitalOcean contract not found at {path} (set {SPEC_ENV} to a bundled spec or "
            "LABGPU_SHARED_DIR to the shared/ dir)"
        )
    return _load(str(path))


def _mock_request(method: str, url: str, headers: Any, body: bytes | None) -> Any:
    from openapi_core.testing import MockRequest

    parts = urlsplit(url)
    return MockRequest(
        host_url=SPEC_ORIGIN,
        method=method,
        path=parts.path,
        args=parse_qsl(parts.query, keep_blank_values=True),  # type: ignore[arg-type]
        headers={k.lower(): v for k, v in dict(headers).items()},
        data=body or b"",
        content_type=(
            dict(headers).get("content-type")
            or dict(headers).get("Content-Type")
            or "application/json"
        ).split(";")[0],
    )


def _mock_response(status: int, headers: Any, body: bytes) -> Any:
    from openapi_core.testing import MockResponse

    header_map = {k.lower(): v for k, v in dict(headers).items()}
    return MockResponse(
        data=body,
        status_code=status,
        headers=header_map,
        content_type=(header_map.get("content-type") or "application/json").split(";")[0],
    )


def validate_request(method: str, url: str, headers: Any, body: bytes | None) -> None:
    """Raise openapi-core's validation error when the request breaks the spec."""
    load_openapi().validate_request(_mock_request(method, url, headers, body))


def validate_response(
    method: str,
    url: str,
    request_headers: Any,
    request_body: bytes | None,
    status: int,
    headers: Any,
    body: bytes,
) -> None:
    """Raise openapi-core's validation error when the response breaks the spec."""
    load_openapi().validate_response(
        _mock_request(method, url, request_headers, request_body),
        _mock_response(status, headers, body),
    )


@dataclass
class Exchange:
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    def __str__(self) -> str:
        return f"{self.method} {self.url} -> {self.status}"


class ExchangeRecorder:
    """httpx event hooks that keep every request/response pair for later validation."""

    def __init__(self) -> None:
        self.exchanges: list[Exchange] = []

    @property
    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self._on_request], "response": [self._on_response]}

    def _on_request(self, request: httpx.Request) -> None:
        self.exchanges.append(
            Exchange(
                method=request.method,
                url=str(request.url),
                request_headers=dict(request.headers),
                request_body=request.content,
            )
        )

    def _on_response(self, response: httpx.Response) -> None:
        response.read()
        for exchange in reversed(self.exchanges):
            if exchange.status is None and exchange.url == str(response.request.url):
                exchange.status = response.status_code
                exchange.response_headers = dict(response.headers)
                exchange.response_body = response.content
                return

    def errors(self, *, requests: bool = True, responses: bool = True) -> list[str]:
        problems: list[str] = []
        for ex in self.exchanges:
            if requests:
                try:
                    validate_request(ex.method, ex.url, ex.request_headers, ex.request_body)
                except Exception as exc:  # collect all, report together
                    problems.append(f"request {ex}: {_describe(exc)}")
            if responses and ex.status is not None:
                try:
                    validate_response(
                        ex.method,
                        ex.url,
                        ex.request_headers,
                        ex.request_body,
                        ex.status,
                        ex.response_headers,
                        ex.response_body,
                    )
                except Exception as exc:
                    problems.append(f"response {ex}: {_describe(exc)}")
        return problems

    def assert_valid(self, *, requests: bool = True, responses: bool = True) -> None:
        problems = self.errors(requests=requests, responses=responses)
        assert not problems, "contract violations:\n" + "\n".join(problems)


def _describe(exc: BaseException) -> str:
    """openapi-core nests the schema errors in __cause__; show the innermost useful ones."""
    parts = [f"{type(exc).__name__}: {exc}"]
    cause = exc.__cause__
    while cause is not None:
        detail = getattr(cause, "schema_errors", None)
        if detail:
            parts += [f"  - {getattr(e, 'message', e)}" for e in detail]
        else:
            parts.append(f"  caused by {type(cause).__name__}: {cause}")
        cause = cause.__cause__
    return "\n".join(parts)
