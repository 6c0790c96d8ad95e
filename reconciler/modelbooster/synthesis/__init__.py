"""Synthesis: a defaulted ModelBooster plus controller settings -> the child objects it wants.

Pure and deterministic (no I/O), so `modelbooster render` prints exactly what the reconciler would apply.
"""

from reconciler.modelbooster.synthesis.autoscaling import (
    autoscaled_backends,
    is_autoscaled,
    role_scaled_backends,
)
from reconciler.modelbooster.synthesis.errors import SynthesisError
from reconciler.modelbooster.synthesis.labels import revision_digest
from reconciler.modelbooster.synthesis.owner import UNOWNED_PREFIX, unowned_uid
from reconciler.modelbooster.synthesis.settings import (
    DEFAULT_DOWNLOADER_IMAGE,
    DEFAULT_RUNTIME_IMAGE,
    DEFAULT_SGLANG_IMAGE,
    SynthesisSettings,
)
from reconciler.modelbooster.synthesis.synthesize import synthesize

__all__ = [
    "DEFAULT_DOWNLOADER_IMAGE",
    "DEFAULT_RUNTIME_IMAGE",
    "DEFAULT_SGLANG_IMAGE",
    "UNOWNED_PREFIX",
    "SynthesisError",
    "SynthesisSettings",
    "autoscaled_backends",
    "is_autoscaled",
    "revision_digest",
    "role_scaled_backends",
    "synthesize",
    "unowned_uid",
]
