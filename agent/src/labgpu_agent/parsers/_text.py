"""Small helpers shared by the parsers: tolerant number reading and comment stripping.

Tool output is full of `N/A`, units glued to numbers and `[Not Supported]`; every helper here
returns None for "not reported" rather than raising, because a missing reading is a fact too.
"""

from __future__ import annotations

import re
from typing import Any

from labgpu_agent.facts import ParseProblem

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
_SECTION = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d$")
_MISSING = {"", "n/a", "na", "none", "[n/a]", "not supported", "[not supported]", "unknown"}


# SGR escapes as a terminal prints them, and as they look once pasted into an issue (`^[[3m`).
_ANSI = re.compile(r"(?:\x1b\[|\^\[\[?)[0-9;]*m")
_MAX_LINE_SHOWN = 200


def split_lines(text: str) -> list[str]:
    """Lines as the tool ended them (`\\n`, `\\r\\n`, `\\r`); unlike `str.splitlines` a form feed
    or other control character inside a line does not split it."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


# The command itself echoed into a capture: `$ amd-smi`, `~$ amd-smi static`, `❯ amd-smi`, or the
# bare `rocminfo` a publisher wrote above its output.
_COMMAND_ECHO = re.compile(
    r"^(?:\S*[$%❯>]\s*)?(?:sudo\s+)?(?:\S*/)?"
    r"(?:amd-smi|rocm-smi|rocminfo|nvidia-smi|lspci|rvs|dcgmi)(?:\s.*)?$"
)


def is_annotation(line: str) -> bool:
    return line.startswith(("#", "$ ")) or _COMMAND_ECHO.match(line.strip()) is not None


def clean_line(line: str) -> str:
    """One output line without colour escapes, trailing blanks or a stray carriage return."""
    return _ANSI.sub("", line).rstrip()


def strip_annotations(text: str) -> str:
    """Drop the `# SOURCE:` / `# ...` comment lines and `$ command` lines of a saved capture.

    Also normalises what copying output around adds: CRLF line ends, colour escapes, trailing
    blanks.
    """
    return "\n".join(clean_line(line) for line in split_lines(text) if not is_annotation(line))


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """(line number, cleaned line) for every line that is output, not a capture annotation.

    Numbers count the lines as they were printed, so a problem can point at the right one.
    """
    return [
        (number, clean_line(line))
        for number, line in enumerate(split_lines(text), start=1)
        if not is_annotation(line)
    ]


def json_text(text: str) -> str:
    """The JSON a tool printed, annotations blanked (not removed) so error line numbers hold.

    Anything printed before the first `[` or `{` line (amd-smi's watch banner "'CTRL' + 'C' to
    stop watching output:") is blanked too.
    """
    lines = ["" if is_annotation(line) else clean_line(line) for line in split_lines(text)]
    for index, line in enumerate(lines):
        if line.lstrip().startswith(("[", "{")):
            return "\n" * index + "\n".join(lines[index:])
    return "\n".join(lines)


def shown(line: str) -> str:
    """A line as it may appear in a finding: printable, bounded."""
    head = line.strip()[:_MAX_LINE_SHOWN]
    return "".join(ch if ch.isprintable() else "\ufffd" for ch in head)


class UnknownLines:
    """Collects the lines a parser did not recognise; the first one goes into the problem."""

    def __init__(self, reason: str = "lines in a shape the parser does not know") -> None:
        self.reason = reason
        self.first: tuple[int, str] | None = None
        self.count = 0

    def add(self, number: int, line: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = (number, shown(line))

    def problems(self) -> list[ParseProblem]:
        if self.first is None:
            return []
        number, line = self.first
        return [
            ParseProblem(
                tool="", reason=self.reason, line=line, line_number=number, unknown_lines=self.count
            )
        ]


def is_elision(line: str) -> bool:
    """`...`, `[...]`, `... (8 entries expected)`: a publisher's or tool's own elision mark."""
    stripped = line.strip()
    return stripped.startswith("...") or stripped in ("[...]", "…")


def is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        low = value.strip().lower()
        return (
            low in _MISSING or low.startswith("[requested functionality") or "not_supported" in low
        )
    return False


def to_float(value: Any) -> float | None:
    """`"159.0"`, `"129.84 W"`, `{"value": 45, "unit": "C"}`, `45` → float; `N/A` → None."""
    if isinstance(value, dict):
        return to_float(value.get("value"))
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if is_missing(value):
        return None
    match = _NUMBER.search(str(value))
    return float(match.group()) if match else None


def to_int(value: Any) -> int | None:
    number = to_float(value)
    return int(number) if number is not None else None


def to_str(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("value")
    if is_missing(value):
        return None
    return str(value).strip()


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """`"7.2.4"` → (7, 2, 4); `"6.8.0-49-generic"` → (6, 8, 0); None when no digits lead."""
    if not text:
        return None
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not match:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def indented_tree(text: str) -> dict[str, Any]:
    """Parse the `KEY: value` tree that amd-smi's text output and `nvidia-smi -q` print.

    Nesting follows indentation; a line with no value opens a block. Device headers carry a value
    and open a block too: `GPU: 0` and `GPU: 1` become separate `"GPU: 0"`/`"GPU: 1"` keys.
    """
    root: dict[str, Any] = {}
    stack: list[tuple[int, dict[str, Any]]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip() or raw.strip() == "...":
            continue
        indent = len(raw.expandtabs(4)) - len(raw.expandtabs(4).lstrip())
        line = raw.strip()
        if _SECTION.match(line) or ":" not in line:
            # `GPU 00000000:00:09.0` and `PCI`, `GPU Link Info` in `nvidia-smi -q` open sections.
            key, value = line, ""
        else:
            # `nvidia-smi -q` separates with " : " and its values hold colons (bus ids, times).
            key, _, value = line.partition(" : ") if " : " in line else line.partition(":")
            key, value = key.strip(), value.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value and not (key in ("GPU", "CPU") and value.isdigit()):
            parent[key] = value
            continue
        # A device header (`GPU: 0`) opens a block; the same header met again (amd-smi list, then
        # static, then metric in one capture) reopens the same block so the facts merge.
        node_key = f"{key}: {value}" if value else key
        existing = parent.get(node_key)
        child: dict[str, Any] = existing if isinstance(existing, dict) else {}
        parent[node_key] = child
        stack.append((indent, child))
    return root
