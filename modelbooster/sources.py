"""What `-f` names: files, `-` for stdin, and directories, expanded into the inputs to read, as kubectl does.

`-f` may be given many times; every input is read, in the order given. A directory contributes its
`*.yaml`, `*.yml` and `*.json` files in name order (with `-R`, those of its subdirectories too, depth-first
in name order); other files in it are passed over, since a directory usually holds a README or a
kustomization beside the manifests. Symbolic links to directories are not followed when recursing, so a link
back up the tree cannot loop.

Bounded before anything is read: at most `SourceLimits.max_files` inputs, and a whole run reads at most
`SourceLimits.max_total_bytes` (each input also at most `ReadLimits.max_bytes`, `modelbooster.manifests`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

STDIN = "-"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class SourceLimits:
    max_files: int = 1_000
    max_total_bytes: int = 64 * 1024 * 1024  # four inputs at the per-input bound


DEFAULT_SOURCE_LIMITS = SourceLimits()


class SourceError(Exception):
    """A one-line reason why the `-f` arguments cannot be read."""


def expand_sources(
    arguments: Sequence[str], *, recursive: bool = False, limits: SourceLimits = DEFAULT_SOURCE_LIMITS
) -> list[str]:
    """The inputs named by the `-f` arguments: files as given, directories expanded, `-` kept (at most once)."""
    inputs: list[str] = []
    for argument in arguments:
        if argument == STDIN:
            if STDIN in inputs:
                raise SourceError("-f -: stdin can be read only once")
            inputs.append(argument)
        elif Path(argument).is_dir():
            found = list(_manifest_files(Path(argument), recursive=recursive, budget=limits.max_files - len(inputs)))
            if not found:
                wanted = "/".join(f"*{suffix}" for suffix in MANIFEST_SUFFIXES)
                where = " or its subdirectories" if recursive else " (-R reads subdirectories too)"
                raise SourceError(f"{argument}: is a directory with no {wanted} files in it{where}")
            inputs.extend(found)
        else:
            inputs.append(argument)
        if len(inputs) > limits.max_files:
            raise SourceError(f"-f names more than {limits.max_files:,} files, the most read in one run")
    return inputs


def _manifest_files(directory: Path, *, recursive: bool, budget: int) -> Iterator[str]:
    """Manifest files under `directory` in name order; stops one past `budget` so the caller can refuse."""
    yielded = 0
    for root, subdirectories, files in os.walk(directory, onerror=_raise, followlinks=False):
        subdirectories.sort()
        if not recursive:
            subdirectories.clear()
        for name in sorted(files):
            path = Path(root, name)
            if path.suffix.lower() in MANIFEST_SUFFIXES and path.is_file():
                yield str(path)
                yielded += 1
                if yielded > budget:
                    return


def _raise(error: OSError) -> None:
    reason = "permission denied" if isinstance(error, PermissionError) else (error.strerror or str(error))
    raise SourceError(f"{error.filename}: cannot list: {reason}")


class ByteBudget:
    """The bytes a run may still read across all its inputs."""

    def __init__(self, limits: SourceLimits = DEFAULT_SOURCE_LIMITS) -> None:
        self.total = limits.max_total_bytes
        self.left = limits.max_total_bytes

    def take(self, count: int, *, name: str) -> None:
        self.left -= count
        if self.left < 0:
            raise SourceError(
                f"{name}: the inputs together are larger than {_size(self.total)}, the most read in one run"
            )


def _size(count: int) -> str:
    mebibyte = 1024 * 1024
    return f"{count // mebibyte} MiB" if count % mebibyte == 0 else f"{count:,} bytes"
