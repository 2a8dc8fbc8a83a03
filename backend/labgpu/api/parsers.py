"""JSON bodies are read only after a linear pre-scan (docs/security.md, "Input limits").

Python's `json` recurses once per nesting level, so 50,000 `[` raise RecursionError (a 500) on
any endpoint, anonymous login included; and `1e400` parses to infinity, which later overflows an
`int()` or breaks the JSON renderer. `SafeJSONParser` refuses both with a 400 before anything
recursive runs.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# Deeper than any LabGPU body needs (an agent report is 6 levels), far below Python's recursion
# limit, so json.loads never recurses deeply.
MAX_JSON_DEPTH = 32
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class BodyRefused(ValueError):
    """The body is not JSON LabGPU reads; `code` says why (stable, docs/api.md)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays/objects in `text`, without recursion (strings ignored)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise BodyRefused(
            _("The number %(number)s is out of range.") % {"number": token[:40]},
            "number_out_of_range",
        )
    return value


def _refuse_constant(token: str) -> None:
    raise BodyRefused(
        _("%(token)s is not a JSON number.") % {"token": token}, "number_out_of_range"
    )


def loads_bounded(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """json.loads, after refusing deep nesting; non-finite numbers (1e400, NaN) are refused too."""
    if nesting_depth(text) > max_depth:
        raise BodyRefused(
            _("JSON nested deeper than %(depth)s levels is not accepted.") % {"depth": max_depth},
            "too_deeply_nested",
        )
    try:
        return json.loads(text, parse_float=_finite_float, parse_constant=_refuse_constant)
    except BodyRefused:
        raise
    except (ValueError, RecursionError) as error:  # RecursionError cannot happen; belt and braces
        # Where, not Python's English description of what it expected.
        where = {"line": getattr(error, "lineno", "?"), "column": getattr(error, "colno", "?")}
        raise BodyRefused(
            _("The body is not valid JSON (line %(line)s, column %(column)s).") % where,
            "parse_error",
        ) from None


class SafeJSONParser(JSONParser):
    """DRF's JSON parser with a depth limit, finite numbers only and an optional size limit."""

    max_depth = MAX_JSON_DEPTH
    max_bytes: int | None = None  # None: Django's DATA_UPLOAD_MAX_MEMORY_SIZE alone

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        limit = self.max_bytes
        raw = stream.read(limit + 1) if limit is not None else stream.read()
        if limit is not None and len(raw) > limit:
            raise ParseError(
                _("The request body is larger than %(limit)s bytes.") % {"limit": limit},
                code="request_too_large",
            )
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            raise ParseError(_("The body is not valid UTF-8 JSON."), code="parse_error") from None
        try:
            return loads_bounded(text, max_depth=self.max_depth)
        except BodyRefused as refused:
            raise ParseError(str(refused), code=refused.code) from None
