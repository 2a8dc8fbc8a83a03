"""Why a node failed or a booking ended, stored in English and shown in the reader's language.

A reason is written by a worker (no reader, no language) and read later by people in theirs: the
site admin's page, the booking owner's e-mail, a lab's chat. So it is stored as the English of one
of these templates and translated where it is shown, by matching it back to its template; its
parameters (a username, the provider's own error) stay as they were written. A reason no template
matches (an older row, a lab admin's own words) is shown as stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.utils.translation import gettext, gettext_noop

FAILED_CHECKS = gettext_noop("The node failed its health checks (%(ids)s): %(summary)s")

# More specific first: the first template whose pattern matches the whole text answers.
REASONS = (
    FAILED_CHECKS,  # ids: the failing findings' ids, so a reader's language can say what they mean
    gettext_noop("The node failed its health checks: %(summary)s"),  # older rows: no ids
    gettext_noop("The provider refused to create the node: %(error)s"),
    gettext_noop("The droplet disappeared while booting."),
    gettext_noop("The droplet did not become active in time."),
    gettext_noop("The node agent never reported; the node was replaced."),
    gettext_noop("The droplet vanished at the provider."),
    gettext_noop("The booking ended before a node could be provisioned."),
    gettext_noop("Destroyed by site admin %(username)s: %(reason)s"),
    gettext_noop("Destroyed by site admin %(username)s."),
    gettext_noop("Ended early: the GPUs were idle with no SSH session for %(minutes)s minutes."),
)


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"%\((\w+)\)s", template)
    regex = "".join(
        re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)" for i, part in enumerate(parts)
    )
    return re.compile(regex, re.DOTALL)


_PATTERNS = tuple((template, _pattern(template)) for template in REASONS)

# template -> what rewrites its parameters for the active language (registered by the app that
# knows them: health puts the failing findings' summaries in place of the agent's English).
_LOCALIZERS: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {}


def register_localizer(template: str, localize: Callable[[dict[str, str]], dict[str, str]]) -> None:
    assert template in REASONS, template
    _LOCALIZERS[template] = localize


def reason(template: str, **params: object) -> str:
    """The stored (English) text of `template`, one of REASONS."""
    assert template in REASONS, template
    return template % params


def reason_in_language(stored: str) -> str:
    """`stored` in the active language, or as stored when no template matches it."""
    for template, pattern in _PATTERNS:
        found = pattern.fullmatch(stored)
        if found:
            params = found.groupdict()
            if template in _LOCALIZERS:
                params = _LOCALIZERS[template](params)
            return gettext(template) % params
    return stored
