"""Refusing, before it starts, an allocation the machine cannot hold.

A fit that needs more memory than there is does not raise on Linux: the kernel's
out-of-memory killer ends the process (and the notebook's kernel with it) once the
pages are touched.  Models whose memory grows as a square call `check_memory` with
their estimate first, so a user gets a `MemoryError` naming what to change instead.
"""

from __future__ import annotations

import os


def available_bytes() -> int | None:
    """Memory the process can take without swapping: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else the free physical pages; ``None`` where neither
    is known (no check is made then)."""
    try:
        with open("/proc/meminfo") as lines:
            for line in lines:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_memory(needed: float, what: str, advice: str) -> None:
    """Raise `MemoryError` when ``needed`` bytes exceed `available_bytes`.

    ``what`` says what needs them (``"the covariance of 26,730 items"``), ``advice``
    what to do instead; both go into the message with the two sizes in GiB.
    """
    available = available_bytes()
    if available is not None and needed > available:
        raise MemoryError(f"{what} needs about {needed / 2**30:.1f} GiB and "
                          f"{available / 2**30:.1f} GiB are available: {advice}")
