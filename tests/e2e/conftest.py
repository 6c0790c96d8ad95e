"""The e2e cluster: one per test session (bringing it up costs a few seconds: two Python processes start and
the certificate bootstrap runs), shared by every e2e module. Tests use their own object names, so they do
not depend on each other; test_rbac.py drives its own tour, so its coverage does not depend on order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import Cluster, running_cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("e2e")) as running:
        yield running
