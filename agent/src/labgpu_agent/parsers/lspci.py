"""`lspci -vvv` (or its `grep -e DevSta -e LnkSta` excerpt): PCIe link status per device.

pciutils >= 3.11 annotates `Speed 32GT/s (ok), Width x16 (ok)` and `(downgraded)`; older
versions print the bare values. Reading `LnkSta` needs root; without it lspci prints
`Capabilities: <access denied>` and no link is reported.
"""

from __future__ import annotations

import re

from labgpu_agent.facts import Facts, PcieLink, normalise_bdf
from labgpu_agent.parsers._text import UnknownLines, is_elision, numbered_lines

_HEADER = re.compile(
    r"^(?P<bdf>(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)\s+(?P<desc>.+)$"
)
_LINK = re.compile(
    r"Speed\s+(?P<speed>[\d.]+)GT/s(?P<sa>\s*\([^)]*\))?,\s*Width\s+x(?P<width>\d+)(?P<wa>\s*\([^)]*\))?"
)
# Lines of a `grep` excerpt (`DevSta: …`) and pcilib's warnings (`pcilib: …`) start unindented.
_TOP_KEY = re.compile(r"^[A-Za-z][\w ]*:")
_SPEED_TO_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def parse_lspci(text: str) -> Facts:
    links: list[PcieLink] = []
    current: PcieLink | None = None
    unknown = UnknownLines()
    for number, raw in numbered_lines(text):
        line = raw.strip()
        top_level = raw[:1] not in (" ", "\t") and line and not is_elision(line)
        if top_level and not _HEADER.match(raw) and not _TOP_KEY.match(raw):
            unknown.add(number, raw)
            continue
        if (header := _HEADER.match(raw)) is not None:
            current = PcieLink(
                bdf=normalise_bdf(header.group("bdf")), description=header.group("desc")
            )
            links.append(current)
            continue
        repeated = (
            line.startswith("LnkSta:") and current is not None and current.speed_gts is not None
        ) or (
            line.startswith("DevSta:") and current is not None and current.fatal_error is not None
        )
        if current is None or repeated:
            # An excerpt without device headers (`lspci -vvv | grep …`): a status line seen a
            # second time starts the next device.
            current = PcieLink()
            links.append(current)
        if line.startswith("LnkSta:") and (match := _LINK.search(line)):
            current.speed_gts = float(match.group("speed"))
            current.gen = _SPEED_TO_GEN.get(current.speed_gts)
            current.width = int(match.group("width"))
            current.downgraded = "downgraded" in line
        elif line.startswith("LnkCap:") and (match := _LINK.search(line)):
            current.max_speed_gts = float(match.group("speed"))
            current.max_width = int(match.group("width"))
        elif line.startswith("DevSta:"):
            current.fatal_error = "FatalErr+" in line
        elif line.startswith("Kernel driver in use:"):
            current.kernel_driver = line.split(":", 1)[1].split("#")[0].strip()
    facts = Facts(parse_problems=unknown.problems())
    # Devices with neither a link nor a status line (plain `lspci` listing) still say which
    # driver is bound, so keep them; drop only empty anonymous blocks.
    facts.pcie_links = [
        link for link in links if link.bdf or link.speed_gts is not None or link.fatal_error
    ]
    return facts
