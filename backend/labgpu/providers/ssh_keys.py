"""OpenSSH public keys as they go onto a node: exactly one key, as one `authorized_keys` line.

A key a person pastes becomes a line of `~/.ssh/authorized_keys` on every node they book, so the
text must be one key and nothing else (issue 22 item 8): no line break (an embedded newline added
a second, arbitrary line), no `authorized_keys` options (`command=`, `from=`, `environment=` …:
those are for the node's owner to write, not a web form), and a body a real parser accepts
(`cryptography`'s `load_ssh_public_key`, which checks the body against its declared type). The
line written out is rebuilt from the parsed parts, never copied from the input. Used where keys
are accepted (labgpu.accounts) and again where they are written (labgpu.providers.cloudinit).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import unicodedata
from dataclasses import dataclass

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    }
)
MAX_COMMENT = 200


class InvalidSshKey(ValueError):
    """Why a text is not one OpenSSH public key (for logs); `code` names the rule it broke, and
    labgpu.accounts says it to people in their language."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class SshPublicKey:
    key_type: str
    body: str  # the base64 blob, re-encoded from the parsed bytes
    comment: str
    fingerprint: str  # SHA256:… as `ssh-keygen -lf` prints it

    @property
    def line(self) -> str:
        """The `authorized_keys` line: type, body and (if any) comment, nothing else."""
        return " ".join(part for part in (self.key_type, self.body, self.comment) if part)


def _is_line_break_or_control(char: str) -> bool:
    # Cc: NUL, CR, LF, tab…; Zl/Zp: U+2028/U+2029, which some readers treat as line ends.
    return unicodedata.category(char) in {"Cc", "Zl", "Zp"}


def parse_ssh_public_key(text: str) -> SshPublicKey:
    """Parse `text` (surrounding whitespace allowed) as one OpenSSH public key; InvalidSshKey
    names the rule it broke."""
    text = text.strip()
    if any(_is_line_break_or_control(char) for char in text):
        raise InvalidSshKey("a line break or control character", code="ssh_key_not_one_line")
    parts = text.split(" ", 2)
    if len(parts) < 2 or not parts[0]:
        raise InvalidSshKey("no key type and body", code="invalid_ssh_key")
    if parts[0] not in KEY_TYPES:
        if any(word in KEY_TYPES for word in text.split(" ")):
            raise InvalidSshKey("authorized_keys options before the key", code="ssh_key_options")
        raise InvalidSshKey(f"unsupported key type {parts[0][:40]!r}", code="invalid_ssh_key")
    key_type, body = parts[0], parts[1]
    comment = parts[2].strip() if len(parts) == 3 else ""
    if len(comment) > MAX_COMMENT:
        raise InvalidSshKey(f"a comment over {MAX_COMMENT} characters", code="invalid_ssh_key")
    try:
        blob = base64.b64decode(body, validate=True)
        serialization.load_ssh_public_key(f"{key_type} {body}".encode())
    except (binascii.Error, ValueError, UnsupportedAlgorithm):
        raise InvalidSshKey(
            "a body that is damaged or not of its type", code="invalid_ssh_key"
        ) from None
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return SshPublicKey(
        key_type=key_type,
        body=base64.b64encode(blob).decode(),
        comment=comment,
        fingerprint=f"SHA256:{digest}",
    )
