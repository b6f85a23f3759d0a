"""Progress bars that leave the terminal clean when the work stops on an error.

A tqdm bar over a generator is closed only when it is garbage-collected: an
exception raised inside the loop left the bar's line open, and the command line's
one-line error was printed at its end (``cross-validating: 0%| ... dprec demo: error:
...``). `progress_bar` closes the bar first, clearing its line, so the error starts a
line of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(iterable: Iterable, show: bool = True, **options) -> Iterator[Iterable]:
    """``iterable`` under a tqdm bar (``options``: tqdm's keywords) when ``show``, else
    as it is; on an exception the bar is closed and its line cleared before the exception
    propagates."""
    if not show:
        yield iterable
        return
    from tqdm import tqdm

    bar = tqdm(iterable, **options)
    try:
        yield bar
    except BaseException:
        bar.leave = False              # cleared, not left: the error follows on its line
        bar.close()
        raise
    bar.close()
