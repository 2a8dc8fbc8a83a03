"""The zh-Hans catalogue covers every text the code marks for translation, and the committed .mo
is the compiled .po (issue 24 acceptance 2).

Django's own `makemessages` extracts the msgids from a copy of the code (so the committed .po is
not touched) and merges them into a copy of the committed .po: a msgid the code marks that the .po
lacks comes out untranslated, one whose English changed comes out fuzzy. Either fails here.
"""

import gettext
import os
import shutil
import subprocess
import sys
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[3]
PO = BACKEND / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")


def _unquote(line: str) -> str:
    return (
        line[line.index('"') + 1 : line.rindex('"')]
        .encode()
        .decode("unicode_escape")
        .encode("latin-1")
        .decode()
    )


def parse_po(text: str) -> list[dict]:
    """The entries of a .po file: {"msgid", "msgstr" (list), "fuzzy", "obsolete", "where"}."""
    entries: list[dict] = []
    entry: dict = {}
    key = None

    def close() -> None:
        nonlocal entry, key
        if "msgid" in entry:
            entries.append(entry)
        entry, key = {}, None

    for raw in [*text.splitlines(), ""]:
        line = raw.strip()
        obsolete = line.startswith("#~")
        if obsolete:
            line = line[2:].strip()
        if not line:
            close()
            continue
        if line.startswith("#,"):
            if "msgid" in entry:
                close()
            entry["fuzzy"] = "fuzzy" in line
        elif line.startswith("#:"):
            if "msgid" in entry:
                close()
            entry["where"] = entry.get("where", "") + line[2:]
        elif line.startswith("#"):
            continue
        elif line.startswith(("msgctxt", "msgid ", "msgid_plural", "msgstr")):
            if line.startswith(("msgctxt", "msgid ")) and "msgstr" in entry:
                close()
            key = line.split(" ", 1)[0]
            entry["obsolete"] = obsolete
            if key.startswith("msgstr"):
                entry.setdefault("msgstr", []).append(_unquote(line))
            else:
                entry[key] = _unquote(line)
        elif line.startswith('"') and key:
            if key.startswith("msgstr"):
                entry["msgstr"][-1] += _unquote(line)
            else:
                entry[key] += _unquote(line)
    return entries


def test_the_parser_reads_a_multiline_entry():
    entries = parse_po('#, python-format\nmsgid ""\n"a %(x)s\\n"\n"b"\nmsgstr "甲\\n乙"\n')
    assert entries == [
        {"fuzzy": False, "msgid": "a %(x)s\nb", "obsolete": False, "msgstr": ["甲\n乙"]}
    ]


def test_every_marked_text_in_the_code_has_a_zh_hans_translation(tmp_path):
    for part in ("manage.py", "config", "labgpu", "locale"):
        source = BACKEND / part
        if source.is_dir():
            shutil.copytree(source, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, tmp_path / part)
    subprocess.run(
        [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "--no-obsolete",
         "--ignore", "*/tests/*", "--ignore", "*/migrations/*"],
        cwd=tmp_path, env=os.environ, check=True, capture_output=True,
    )  # fmt: skip
    merged = parse_po((tmp_path / PO.relative_to(BACKEND)).read_text())
    code_ids = [e for e in merged if e["msgid"] and not e["obsolete"]]
    assert len(code_ids) > 300  # the walk found the code's texts

    missing = [f"{e.get('where', '')}: {e['msgid']!r}" for e in code_ids if not any(e["msgstr"])]
    changed = [f"{e.get('where', '')}: {e['msgid']!r}" for e in code_ids if e.get("fuzzy")]
    assert not missing, "no msgstr in django.po:\n" + "\n".join(missing)
    assert not changed, "English changed since it was translated (fuzzy):\n" + "\n".join(changed)


def test_the_committed_mo_is_the_compiled_po():
    with MO.open("rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)._catalog  # type: ignore[attr-defined]
    written: dict[object, str] = {}
    for e in parse_po(PO.read_text()):
        if e["msgid"] and not e["obsolete"] and not e.get("fuzzy") and any(e["msgstr"]):
            if "msgid_plural" in e:  # the .mo keys each plural form by (msgid, n)
                written.update({(e["msgid"], n): text for n, text in enumerate(e["msgstr"])})
            else:
                written[e["msgid"]] = e["msgstr"][0]
    in_mo = {k: v for k, v in catalogue.items() if k}
    stale = sorted(str(k) for k in written if in_mo.get(k) != written[k])
    assert not stale, "run `cd backend && python manage.py compilemessages -l zh_Hans`:\n" + (
        "\n".join(stale)
    )
    assert not set(in_mo) - set(written), "the .mo holds texts the .po no longer has"
