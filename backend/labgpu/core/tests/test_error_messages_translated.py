"""Every error the API can answer reads in Chinese for a zh-Hans reader (issue 24 item 5).

The messages are collected from the code itself: each raise of an ApplicationError (or a
subclass) and each error body the exception handler writes. Its message must be a literal marked
for translation (`_("…")`, perhaps `% {…}` with named placeholders), and the compiled zh-Hans
catalogue must give a text that differs from the English and contains Chinese characters.
"""

import ast
import re
from pathlib import Path

import pytest
from django.utils import translation

LABGPU = Path(__file__).resolve().parents[2]
GETTEXT = {"_", "gettext", "gettext_lazy", "pgettext", "ngettext"}
CJK = re.compile(r"[\u4e00-\u9fff]")

# Messages translated by another catalogue: DRF's own errors, Django's validators, a table of
# gettext_lazy texts (accounts.services.SSH_KEY_ERRORS, checked by its own walk below).
TRANSLATED_ELSEWHERE = {
    "str(detail) or str(exc)",
    "' '.join(error.messages)",
    "SSH_KEY_ERRORS[error.code]",
    "str(refused)",  # a BodyRefused: its message is checked where it is raised
    "str(message)",  # api.exceptions._json_error: its callers pass gettext_lazy texts
    "exc.message_dict if hasattr(exc, 'error_dict') else exc.messages",  # Django's, made marked
    "self.error_messages['invalid']",  # Django's own (translated by Django's catalogue)
}


# The exceptions of DRF and Django whose message reaches the person (DRF's own defaults are
# translated by DRF's catalogue; a message we pass them must be ours).
FRAMEWORK_ERRORS = {
    "ValidationError",
    "ParseError",
    "AuthenticationFailed",
    "NotAuthenticated",
    "PermissionDenied",
    "NotFound",
    "Throttled",
    "BodyRefused",
}
# Exceptions of that name that no person reads: the LDAP library's refusal inside a sign-in
# (its argument is a log line; the person is told "Wrong username or password.").
NOT_READ = {"ldap_user"}


def _error_classes(trees: dict[Path, ast.Module]) -> set[str]:
    names = {"ApplicationError", "error_body", *FRAMEWORK_ERRORS}
    grew = True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names:
                    bases = {getattr(b, "id", getattr(b, "attr", None)) for b in node.bases}
                    if bases & names:
                        names.add(node.name)
                        grew = True
    return names


def _msgids(node: ast.expr) -> list[str | None]:
    """The literals marked for translation (None for a message that is not marked)."""
    if isinstance(node, ast.BoolOp):  # `message or _("default")`
        return [m for value in node.values for m in _msgids(value)]
    if isinstance(node, ast.Dict):  # `{"field": [message]}`
        return [m for value in node.values for m in _msgids(value)]
    if isinstance(node, ast.DictComp):
        return _msgids(node.value)
    if isinstance(node, ast.List | ast.Tuple):
        return [m for value in node.elts for m in _msgids(value)]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "ErrorDetail":
        return _msgids(node.args[0]) if node.args else [None]
    if isinstance(node, ast.Name | ast.Attribute):
        return []  # passes on a message made (and checked) where it was written
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        node = node.left
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in GETTEXT and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return [first.value]
    return [None]


def _raised_messages() -> list[tuple[str, str | None, str]]:
    """(where, msgid or None, source of the message) for each error the code builds."""
    trees = {
        path: ast.parse(path.read_text())
        for path in LABGPU.rglob("*.py")
        if "tests" not in path.parts and "migrations" not in path.parts
    }
    classes = _error_classes(trees)
    writes_own_message = {
        cls.name
        for tree in trees.values()
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef) and cls.name in classes
        for init in cls.body
        if isinstance(init, ast.FunctionDef)
        and init.name == "__init__"
        and [a.arg for a in init.args.args[1:2]] != ["message"]
    }
    found = []
    for path, tree in trees.items():
        # An error class's own message: `super().__init__(…)` inside it.
        builders = {
            id(call)
            for cls in ast.walk(tree)
            if isinstance(cls, ast.ClassDef) and cls.name in classes
            for call in ast.walk(cls)
            if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "__init__"
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if getattr(node.func, "id", None) in writes_own_message:
                continue  # its arguments are facts (a wait); its message is checked inside it
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name not in classes and id(node) not in builders:
                continue
            if getattr(getattr(node.func, "value", None), "id", None) in NOT_READ:
                continue
            message = node.args[0] if node.args else None
            for keyword in node.keywords:
                if keyword.arg == "message":
                    message = keyword.value
            if message is None:
                continue
            where = f"{path.relative_to(LABGPU.parent)}:{node.lineno}"
            source = ast.unparse(message)
            if source not in TRANSLATED_ELSEWHERE:
                found.extend((where, msgid, source) for msgid in _msgids(message))
    return found


MESSAGES = _raised_messages()


def test_the_walk_finds_the_booking_rules():
    ids = {msgid for _, msgid, _ in MESSAGES}
    assert "The start is in the past." in ids
    assert "Wrong username or password." in ids  # an error class's own message
    assert len(MESSAGES) > 100


def test_every_error_message_is_marked_for_translation():
    unmarked = [f"{where}: {source}" for where, msgid, source in MESSAGES if msgid is None]
    assert not unmarked, "\n".join(unmarked)


@pytest.mark.parametrize("msgid", sorted({m for _, m, _ in MESSAGES if m}))
def test_every_error_message_reads_in_chinese(msgid):
    with translation.override("zh-hans"):
        chinese = translation.gettext(msgid)
    assert chinese != msgid, "no zh-Hans msgstr"
    assert CJK.search(chinese), chinese
    assert set(re.findall(r"%\(\w+\)s", chinese)) == set(re.findall(r"%\(\w+\)s", msgid))


def test_the_ssh_key_refusals_read_in_chinese():
    from labgpu.accounts.services import SSH_KEY_ERRORS

    with translation.override("zh-hans"):
        for message in SSH_KEY_ERRORS.values():
            assert CJK.search(str(message)), message
