r"""The frontier's figure: accuracy against the β-kNN attack's largest gain, one point per
configuration, readable where the documentation and the notebook show it.

The figure is shown about `SHOWN_WIDTH` pixels wide. Its two panels (RMSE, precision@10)
are stacked, so each has the figure's whole width; its legend is below them, off the
data. The configurations without neighbours, which are not attacked (`DPBaseline`,
`DPALS`, the global mean, `BaselineOnly`), are dashed lines named in the right margin,
their names moved apart where their values are close (`DPBaseline` and `DPALS` differ by
0.001 RMSE at each ε on MovieLens 100k) and joined to their line by a leader. No two
texts of the figure overlap at that width (tested).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..utils._plotting import save, smallest_points, subplots
from .privacy_labels import LABELS

#: the colour of each guarantee label
COLOURS = dict(zip(LABELS, ["tab:green", "tab:olive", "tab:blue", "tab:orange", "0.35"]))
#: marker and legend text per neighbourhood (the end-to-end models and references have none)
GROUPS = {"item": ("o", "item nbhd"), "user": ("s", "user nbhd"),
          "-": ("D", "end-to-end / reference")}
#: the figure's width (inches): text 10 pixels high at `SHOWN_WIDTH` is 7.7 pt there; it takes
#: 9 pt (12 pixels; 10 where a notebook shows it 590 pixels wide)
WIDTH = 7.5
#: the colour of the references that are not attacked, and their names
REFERENCE = "tab:red"
#: the space between two reference names, in lines of their text
SPACING = 1.4


def reference_name(config: str) -> str:
    """A configuration's name as the figure writes it: ``"DPALS/eps=0.5"`` is
    ``"DPALS, ε = 0.5"``."""
    return re.sub(r"/eps=([^/]+)$", r", ε = \1", config)


def spread(positions: np.ndarray, gap: float, low: float, high: float) -> np.ndarray:
    """Positions as close as possible to ``positions`` (in any order), sorted the same way,
    at least ``gap`` apart and within ``[low, high]`` where there is room (else from
    ``low`` up): each is pushed up off the one below, then the whole run down off
    ``high``."""
    positions = np.asarray(positions, dtype=float)
    order = np.argsort(positions, kind="stable")
    placed = np.clip(positions[order], low, high)
    for index in range(1, len(placed)):
        placed[index] = max(placed[index], placed[index - 1] + gap)
    for index in range(len(placed) - 1, -1, -1):
        ceiling = high if index == len(placed) - 1 else placed[index + 1] - gap
        placed[index] = max(min(placed[index], ceiling), low + index * gap)
    out = np.empty_like(placed)
    out[order] = placed
    return out


def _name_references(axes, references: pd.DataFrame, measure: str, fontsize: float) -> None:
    """Dashed lines at the references' values, each named in the right margin, names at
    least `SPACING` lines apart, a leader from each name to its line."""
    if references.empty:
        return
    for value in references[measure]:
        axes.axhline(value, ls="--", lw=0.8, color=REFERENCE, zorder=1)
    low, high = axes.get_ylim()
    fraction = (references[measure].to_numpy(dtype=float) - low) / (high - low)
    figure = axes.get_figure()
    figure.draw_without_rendering()          # the axes' height as laid out
    height = axes.get_window_extent().height
    gap = SPACING * fontsize * figure.dpi / 72 / height
    placed = spread(fraction, gap, gap / 2, 1 - gap / 2)
    for name, value, y in zip(references.config, references[measure], placed):
        axes.annotate(reference_name(name), xy=(1, value), xycoords=axes.get_yaxis_transform(),
                      xytext=(1.04, y), textcoords="axes fraction", fontsize=fontsize,
                      color=REFERENCE, va="center", ha="left", annotation_clip=False,
                      arrowprops={"arrowstyle": "-", "color": REFERENCE, "lw": 0.6,
                                  "shrinkA": 0, "shrinkB": 1})


def plot_frontier(frontier: pd.DataFrame, path: Path) -> None:
    """RMSE and precision@10 against the largest pooled-recovery gain, stacked; colour: the
    guarantee, marker: the neighbourhood (diamond: end-to-end), black edge: Pareto-optimal,
    the frontier drawn as a step line; dashed, named in the margin: the configurations
    that are not attacked (no neighbours); the legend below the panels."""
    figure, axes = subplots(2, 1, figsize=(WIDTH, 9.0), squeeze=False)
    fontsize = max(9.0, smallest_points(figure))
    panels = [("rmse", "pareto_rmse", "lower"), ("precision@10", "pareto_precision", "higher")]
    handles: dict = {}
    for ax, (measure, flag, better) in zip(axes[:, 0], panels):
        points = frontier.dropna(subset=["max_gain", measure])
        for (label, neighbourhood), group in points.groupby(
                [points.guarantee, points.neighbourhood.fillna("-")], dropna=False):
            marker, text = GROUPS[neighbourhood]
            handles[f"{label}, {text}"] = ax.scatter(
                group.max_gain, group[measure], s=18, alpha=0.75,
                color=COLOURS.get(label, "0.35"), marker=marker)
        front = points[points[flag]].sort_values("max_gain")
        handles["Pareto-optimal"] = ax.scatter(front.max_gain, front[measure], s=50,
                                               facecolors="none", edgecolors="black", lw=1.1)
        ax.step(front.max_gain, front[measure], where="post", color="black", lw=0.8)
        ax.set(xlabel="largest gain over the crowd (max over β)",
               ylabel=f"{measure} ({better} is better)")
        ax.tick_params(labelsize=fontsize)
        ax.grid(alpha=0.3)
    ordered = sorted(handles, key=lambda name: (name == "Pareto-optimal", name))
    if frontier.max_gain.isna().any():
        from matplotlib.lines import Line2D

        handles["not attacked (no neighbours)"] = Line2D([], [], ls="--", lw=0.8,
                                                         color=REFERENCE)
        ordered.append("not attacked (no neighbours)")
    figure.legend([handles[name] for name in ordered], ordered, loc="outside lower center",
                  ncols=2, fontsize=fontsize, frameon=False)
    figure.suptitle("Accuracy against the β-kNN attack: each point a configuration "
                    "(colour: privacy guarantee)", fontsize=fontsize + 1)
    for ax, (measure, _, _) in zip(axes[:, 0], panels):   # placed in the final layout
        unattacked = frontier[frontier.max_gain.isna() & frontier[measure].notna()]
        _name_references(ax, unattacked.sort_values(measure), measure, fontsize)
    save(figure, path)
