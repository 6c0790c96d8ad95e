"""What build of modelbooster this is: the version every process reports (docs/design/upgrades.md §1).

The distribution's version (pyproject.toml) is the one source: the image is tagged with it, the chart's
`appVersion` equals it (a test holds them together), and `modelbooster --version` and the
`modelbooster_build_info` metric read it from the installed package metadata here.
"""

from __future__ import annotations

import platform
from importlib import metadata
from typing import Final

from prometheus_client import CollectorRegistry, Gauge

DISTRIBUTION: Final = "modelbooster"
# Sources run without installing the distribution (never the image, which installs it) have no metadata.
UNKNOWN_VERSION: Final = "0+unknown"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNKNOWN_VERSION


def register_build_info(registry: CollectorRegistry, *, component: str) -> Gauge:
    """`modelbooster_build_info{version, python_version, component} 1`, the conventional build-info gauge.

    It has a series from the process's start, before any request or reconcile, so dashboards can select a
    process's job by it on a quiet cluster.
    """
    gauge = Gauge(
        "modelbooster_build_info",
        "Always 1; the labels say which build of modelbooster runs.",
        ["version", "python_version", "component"],
        registry=registry,
    )
    gauge.labels(version=version(), python_version=platform.python_version(), component=component).set(1)
    return gauge
