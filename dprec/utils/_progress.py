"""Progress bars that leave the terminal clean when the work stops on an error.

A tqdm bar iterated directly closes itself when its iterable raises, and leaves its
line (``leave=True``): the command line's one-line error then followed a bar frozen
at, say, 50 % (``dprec cv``), two lines on stderr. `progress_bar` counts the items
itself and, on any exception, clears the bar's line before the exception propagates:
the error is the one line left.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(iterable: Iterable, show: bool = True, **options) -> Iterator[Iterable]:
    """``iterable`` counted by a tqdm bar (``options``: tqdm's keywords; ``total``
    defaults to ``len(iterable)``) when ``show``, else as it is. On an exception, in
    the iterable or in the body of the ``with``, the bar's line is cleared before the
    exception propagates; otherwise the bar is closed as tqdm's ``leave`` says."""
    if not show:
        yield iterable
        return
    from tqdm import tqdm

    if "total" not in options and hasattr(iterable, "__len__"):
        options["total"] = len(iterable)
    bar = tqdm(**options)

    def counted() -> Iterator:
        for item in iterable:
            yield item
            bar.update()

    try:
        yield counted()
    except BaseException:
        bar.leave = False              # cleared, not left: the error is the line left
        bar.close()
        raise
    bar.close()
