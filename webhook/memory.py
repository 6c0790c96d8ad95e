"""Handing memory back to the system after a burst of large request bodies (glibc's allocator, when present).

Freed memory does not leave the process by itself: glibc raises its mmap threshold to the size of the
largest block freed (up to 32 MiB), so after one 3 MiB body every later one is carved out of the heap,
and a heap fragmented by a burst stays resident (measured: 640 MB after 150 stalled 3 MB bodies had
gone). Two remedies, both measured by bench/webhook_abuse.py:
- the threshold is pinned, so every block of `MMAP_THRESHOLD` or more (large request bodies, their text)
  is its own mapping and is unmapped when freed. It sits above the 256 KiB that the TLS transports
  (uvloop's and asyncio's) ask for on every read before shrinking the block to what arrived: pinned at
  256 KiB, each request paid an mmap, an mremap and a munmap, and the page faults between them, which
  more than doubled the webhook's system time per request (bench/webhook_bench.py);
- once `TRIM_AFTER_BYTES` of bodies have been released, `malloc_trim` gives the free pages of the
  heap back (a few milliseconds for a heap of tens of MB).
Other C libraries (musl) keep their own behaviour: both steps are skipped.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Final

log = logging.getLogger(__name__)

MMAP_THRESHOLD: Final = 512 * 1024
TRIM_AFTER_BYTES: Final = 8 * 1024 * 1024
_M_MMAP_THRESHOLD: Final = -3  # from glibc's malloc.h


class Allocator:
    """glibc's malloc tuning calls."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._mallopt = libc.mallopt
        self._mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        self._mallopt.restype = ctypes.c_int
        self._malloc_trim = libc.malloc_trim
        self._malloc_trim.argtypes = [ctypes.c_size_t]
        self._malloc_trim.restype = ctypes.c_int

    @classmethod
    def load(cls) -> Allocator | None:
        """The process's allocator when it is glibc's, else None."""
        try:
            return cls(ctypes.CDLL(None))
        except (OSError, AttributeError):
            return None

    def pin_mmap_threshold(self, size: int = MMAP_THRESHOLD) -> bool:
        return bool(self._mallopt(_M_MMAP_THRESHOLD, size))

    def trim(self) -> bool:
        """Return free heap pages to the system; True when some were."""
        return bool(self._malloc_trim(0))


class Trimmer:
    """Trims once enough body bytes have been released since the last trim."""

    def __init__(self, allocator: Allocator | None, *, after_bytes: int = TRIM_AFTER_BYTES) -> None:
        self._allocator = allocator
        self._after_bytes = after_bytes
        self._pending = 0
        self._due = False
        self.trims = 0

    def released(self, size: int) -> bool:
        """Note `size` bytes freed; True (once, until `trim` runs) when a trim has become due."""
        self._pending += size
        if self._allocator is None or self._due or self._pending < self._after_bytes:
            return False
        self._due = True
        return True

    def trim(self) -> None:
        if self._allocator is None:
            return
        self._pending = 0
        self._due = False
        self.trims += 1
        self._allocator.trim()
