"""Where the CLI keeps its URL and token: $XDG_CONFIG_HOME/labgpu/config.toml, mode 0600.

LABGPU_URL and LABGPU_TOKEN override the file (CI jobs, notebooks)."""

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Config:
    url: str
    token: str


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "labgpu" / "config.toml"


def load() -> Config | None:
    """The stored config with environment overrides, or None when neither gives a URL and token."""
    stored: dict[str, object] = {}
    path = config_path()
    if path.exists():
        with path.open("rb") as handle:
            stored = tomllib.load(handle)
    url = os.environ.get("LABGPU_URL") or str(stored.get("url") or "")
    token = os.environ.get("LABGPU_TOKEN") or str(stored.get("token") or "")
    if not url or not token:
        return None
    return Config(url=url.rstrip("/"), token=token)


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def save(config: Config) -> Path:
    """Write the file with mode 0600 from the start, so the token is never world-readable."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = f"url = {_toml_string(config.url)}\ntoken = {_toml_string(config.token)}\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(body)
    os.chmod(path, 0o600)  # an existing file keeps its old mode through os.open
    return path
