"""The environment-variable prefix of the reconciler process's flags.

Every controller in the process (ModelBooster, certificate duty, Inferno) adds its flags with this prefix, so
one Deployment's env configures all of them alike: `--workers` is `MODELBOOSTER_RECONCILER_WORKERS`.
"""

from __future__ import annotations

from typing import Final

ENV_PREFIX: Final = "MODELBOOSTER_RECONCILER_"
