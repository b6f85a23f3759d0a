"""Figures without pyplot, for the experiments and the command line.

``matplotlib.figure.Figure`` objects are not registered with pyplot, so
making and saving one neither selects nor switches a backend (a running
notebook keeps its inline backend) and leaves no figure open.
"""

from __future__ import annotations


def subplots(*args, figsize: tuple[float, float], **kwargs):
    """``(figure, axes)`` as ``pyplot.subplots`` returns them, without pyplot."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=figsize)
    return figure, figure.subplots(*args, **kwargs)
