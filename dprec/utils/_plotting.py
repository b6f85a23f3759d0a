"""Figures without pyplot, for the experiments and the command line, saved readable.

``matplotlib.figure.Figure`` objects are not registered with pyplot, so
making and saving one neither selects nor switches a backend (a running
notebook keeps its inline backend) and leaves no figure open.

The figures are read in the documentation and the notebooks, about
`SHOWN_WIDTH` pixels wide whatever their size in inches. There, a text of
$s$ points in a figure $w$ inches wide is $700 s / (72 w)$ pixels high,
whatever the resolution: `save` enlarges every text below `SMALLEST_TEXT`
pixels at that width, and saves at `DPI`, sharp at that width and above.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

#: the resolution every figure is saved at (dots per inch)
DPI = 150
#: the width (pixels) the figures are shown at in the documentation and the notebooks
SHOWN_WIDTH = 700
#: the smallest text (pixels high) of a figure shown `SHOWN_WIDTH` pixels wide
SMALLEST_TEXT = 10


def subplots(*args, figsize: tuple[float, float], **kwargs) -> tuple[Figure, object]:
    """``(figure, axes)`` as ``pyplot.subplots`` returns them, without pyplot; the figure
    is laid out by matplotlib's constrained layout (legends, colour bars and titles
    included) when drawn."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize, layout="constrained")
    return figure, figure.subplots(*args, **kwargs)


def smallest_points(figure: Figure) -> float:
    """The font size (points) of `SMALLEST_TEXT` pixels in `figure` shown `SHOWN_WIDTH`
    pixels wide."""
    return SMALLEST_TEXT * 72 * figure.get_figwidth() / SHOWN_WIDTH


def save(figure: Figure, path: str | os.PathLike) -> None:
    """Write `figure` to `path` (PNG) at `DPI` dots per inch, every text at least
    `smallest_points` (tick labels, legends and annotations included), and each title and
    axis label wrapped onto more lines where it has become longer than its axes."""
    from matplotlib.text import Text

    figure.draw_without_rendering()         # every tick label exists, with its size
    smallest = smallest_points(figure)
    for axes in figure.axes:
        labels = axes.xaxis.get_ticklabels() + axes.yaxis.get_ticklabels()
        if any(label.get_fontsize() < smallest for label in labels):
            axes.tick_params(which="both", labelsize=smallest)
    for text in figure.findobj(Text):
        if text.get_fontsize() < smallest:
            text.set_fontsize(smallest)
    figure.draw_without_rendering()         # laid out again, with the sizes as saved
    for axes in figure.axes:
        box = axes.get_window_extent()
        for text, room in ((axes.title, box.width), (axes.xaxis.label, box.width),
                           (axes.yaxis.label, box.height)):
            _wrap(text, room)
    figure.savefig(path, dpi=DPI)


def _wrap(text: Text, room: float) -> None:
    """Break `text` onto lines no longer than `room` pixels (as drawn); mathematics
    (`$…$`) is left whole."""
    import textwrap

    length = text.get_window_extent().width if text.get_rotation() == 0 else \
        text.get_window_extent().height
    if text.get_text() and length > room and "$" not in text.get_text():
        characters = max(8, int(len(text.get_text()) * room / length))
        text.set_text(textwrap.fill(text.get_text(), characters))


#: the colours of `line_styles`: matplotlib's tab10, its grey replaced by indigo (grey is
#: the references', `reference_styles`)
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#393b79", "#bcbd22", "#17becf")
#: the markers of `line_styles`: 7, prime to the 10 colours, so (colour, marker) repeats
#: only after 70 lines
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
#: the line styles of `line_styles`, one per round of the 10 colours
LINESTYLES = ("-", "--", "-.", ":")
#: the line styles of `reference_styles` (grey, no marker: the references of a figure)
REFERENCE_LINESTYLES = ("--", ":", "-.")
#: the greys of `reference_styles`
REFERENCE_GREYS = ("#000000", "#5a5a5a", "#9a9a9a")


def line_styles(n: int) -> list[dict]:
    r"""``n`` distinct styles (``color``, ``marker``, ``linestyle`` keywords of ``plot``):
    line $i$ takes colour $i \bmod 10$, marker $i \bmod 7$ and line style
    $\lfloor i / 10 \rfloor \bmod 4$, so no two of the first 70 lines share colour and
    marker."""
    return [{"color": COLOURS[i % len(COLOURS)], "marker": MARKERS[i % len(MARKERS)],
             "linestyle": LINESTYLES[i // len(COLOURS) % len(LINESTYLES)]} for i in range(n)]


def reference_styles(n: int) -> list[dict]:
    r"""``n`` distinct styles of reference lines (a horizontal line per model without ε):
    no marker, reference $i$ in grey $i \bmod 3$ (black to light grey) and line style
    $\lfloor i / 3 \rfloor \bmod 3$ (dashed, dotted, dash-dotted), so no two of the first
    9 share both."""
    return [{"color": REFERENCE_GREYS[i % len(REFERENCE_GREYS)],
             "linestyle": REFERENCE_LINESTYLES[i // len(REFERENCE_GREYS)
                                               % len(REFERENCE_LINESTYLES)],
             "linewidth": 1.2} for i in range(n)]


def plain_epsilon_ticks(axes, values=None) -> None:
    """Label a logarithmic x axis (ε) with plain numbers (``0.1``, ``1``, ``10``), not
    matplotlib's $10^0$: at ``values`` (the ε run) when given, else at the powers of ten;
    the minor ticks unlabelled."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    if values is not None:
        axes.xaxis.set_major_locator(FixedLocator(sorted({float(v) for v in values})))
        axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())


def legend_outside(axes, **kwargs):
    """The axes' legend to their right, outside the data (constrained layout makes room);
    returns it."""
    return axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                       **kwargs)
