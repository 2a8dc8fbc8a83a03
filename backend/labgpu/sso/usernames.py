"""Usernames an identity provider proposes (OIDC `preferred_username`, an LDAP uid): made safe and
free before an account is created with one (issue 22 item 2).

A proposed name is NFKC-normalised, accents are dropped (NFKD without combining marks), then only
lowercase ASCII letters, digits and `.`, `_`, `-` remain, starting and ending with a letter or a
digit: no HTML, newline, spreadsheet formula or script mixing can reach a username. A name that
is taken — case-insensitively — or that *looks like* one that is (its skeleton is equal) gets the
first free variant `name-2`, `name-3`, …; a name with nothing left becomes `user`.

The skeleton follows Unicode's confusables (UTS #39, confusables.txt) for what can remain in the
safe set: `rn`→`m`, `vv`→`w`, `0`→`o`, `1`/`i`/`|`→`l`, `5`→`s`, separators ignored. Characters
outside ASCII never reach a username, so the cross-script look-alikes (Cyrillic `с` for Latin
`c`) that confusables.txt mostly lists are refused by the character set itself rather than by
the skeleton.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

MAX_BASE = 40  # leaves room for a "-N" suffix within the column's 150
FALLBACK = "user"
_UNSAFE = re.compile(r"[^a-z0-9._-]+")
_EDGES = re.compile(r"^[._-]+|[._-]+$")
_SKELETON_PAIRS = (("rn", "m"), ("vv", "w"))
_SKELETON_CHARS = str.maketrans({"0": "o", "1": "l", "i": "l", "5": "s", ".": "", "_": "", "-": ""})


def safe_username(proposed: str) -> str:
    """`proposed` reduced to the safe set (may be FALLBACK when nothing safe is left)."""
    text = unicodedata.normalize("NFKC", proposed.replace("\x00", ""))
    text = "".join(
        char
        for char in unicodedata.normalize("NFKD", text)
        if not unicodedata.combining(char) and char.isascii()
    )
    text = _UNSAFE.sub("-", text.casefold())
    text = _EDGES.sub("", text[:MAX_BASE])
    return text or FALLBACK


def skeleton(username: str) -> str:
    """What `username` looks like: two names with one skeleton are confusable."""
    text = username.casefold()
    for pair, single in _SKELETON_PAIRS:
        text = text.replace(pair, single)
    return text.translate(_SKELETON_CHARS)


def free_username(proposed: str, existing: Iterable[str]) -> str:
    """The first of safe_username(proposed), …-2, …-3 that no existing username equals
    case-insensitively or looks like."""
    taken = {skeleton(name) for name in existing}
    base = safe_username(proposed)
    candidate, number = base, 1
    while skeleton(candidate) in taken:
        number += 1
        candidate = f"{base}-{number}"
    return candidate
