"""Shared fixtures for the certificate tests: a fixed clock and a ready-made CA."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from certs.authority import KeyPair, create_ca


@pytest.fixture
def now() -> datetime:
    return datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def ca(now: datetime) -> KeyPair:
    return create_ca(now=now)
