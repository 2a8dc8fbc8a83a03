"""Shared test helpers: where the recorded tool outputs live, and how to read them in place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

AGENT_DIR = Path(__file__).resolve().parents[1]
LOCAL_FIXTURES = AGENT_DIR / "tests" / "fixtures"


def shared_fixtures_dir() -> Path:
    """../shared/fixtures beside the checkout, or $LABGPU_SHARED_DIR/fixtures."""
    override = os.environ.get("LABGPU_SHARED_DIR")
    base = Path(override) if override else Path(__file__).resolve().parents[2] / ".." / "shared"
    return (base / "fixtures").resolve()


@pytest.fixture
def shared_fixture():
    """Read a file of ../shared/fixtures in place; skip (with the reason) where it is absent."""
    root = shared_fixtures_dir()

    def read(relative: str) -> str:
        path = root / relative
        if not path.is_file():
            pytest.skip(
                f"{path} not found: the recorded tool outputs live in ../shared/fixtures beside "
                "the checkout (or set LABGPU_SHARED_DIR); a fresh clone has none"
            )
        return path.read_text(encoding="utf-8")

    return read
