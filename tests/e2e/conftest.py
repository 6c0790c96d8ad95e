"""The e2e cluster: one per test session (bringing it up costs a few seconds: two Python processes start and
the certificate bootstrap runs), shared by every e2e module. Tests use their own object names, so they do
not depend on each other; test_rbac.py drives its own tour, so its coverage does not depend on order.

At the end of the session the processes are stopped with SIGTERM (the way the kubelet stops a pod) and must
exit 0, and every request the reconciler made in the whole session, watches included (they are logged when
they end), must have been allowed by the chart's RBAC.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import Cluster, running_cluster
from tests.e2e.rbac_check import denied


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("e2e")) as running:
        yield running
    problems = [] if set(running.exit_codes) == {"webhook", "reconciler"} else ["the processes were not stopped"]
    for name, code in running.exit_codes.items():
        if code != 0:
            problems.append(f"{name} exited with {code} on SIGTERM")
    problems += [
        f"reconciler request not allowed by the chart RBAC: {request}" for request in denied(running, "reconciler")
    ]
    if problems:
        pytest.fail("\n".join(problems) + "\n" + running.logs())
