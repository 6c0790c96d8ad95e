"""The kind the CRD check reads: CustomResourceDefinitions, through the process's one CRD watch
(reconciler/runtime/discovery.py), which declares it. The check's Events are about such objects."""

from __future__ import annotations

from reconciler.runtime.discovery import CRD

__all__ = ["CRD"]
