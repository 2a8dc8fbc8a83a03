"""Real OpenSSH public keys (fixtures/ssh_public_keys.txt, made by ssh-keygen; its first line says
how) and the fingerprints ssh-keygen printed for them, the record ours must match."""

from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "ssh_public_keys.txt"


def _lines() -> list[str]:
    return FIXTURE.read_text().splitlines()


def real_keys() -> dict[str, str]:
    """Key type → the line ssh-keygen wrote."""
    keys = [line for line in _lines() if line and not line.startswith("#")]
    return {line.split(" ", 1)[0]: line for line in keys}


def ssh_keygen_fingerprints() -> dict[str, str]:
    """Comment → `SHA256:…` as `ssh-keygen -lf` printed it."""
    prints = [line.split()[3:5] for line in _lines() if line.startswith("# fingerprint:")]
    return {comment: fingerprint for fingerprint, comment in prints}


ED25519 = real_keys()["ssh-ed25519"]
RSA = real_keys()["ssh-rsa"]
ECDSA = real_keys()["ecdsa-sha2-nistp256"]
