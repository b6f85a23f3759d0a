"""The frontier's figure (dprec.experiments.frontier_figure) is readable where it is shown:
about 700 pixels wide on docs/frontier.md and in the notebook."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from dprec.experiments import frontier
from dprec.experiments.frontier_figure import plot_frontier, reference_name, spread

#: the width (pixels) the figure is shown at
SHOWN = 700

#: RMSE and precision@10 of the models that are not attacked, as on MovieLens 100k
#: (docs/frontier.md): DPBaseline and DPALS within 0.002 RMSE of each other at each ε
UNATTACKED = {"global mean": (1.126, 0.581), "BaselineOnly": (0.948, 0.728),
              "DPBaseline (user)/eps=0.5": (1.035, 0.606),
              "DPBaseline (user)/eps=1": (1.025, 0.645),
              "DPBaseline (user)/eps=2": (1.005, 0.672),
              "DPBaseline (user)/eps=5": (0.984, 0.680),
              "DPALS/eps=0.5": (1.036, 0.597), "DPALS/eps=1": (1.023, 0.654),
              "DPALS/eps=2": (1.004, 0.672), "DPALS/eps=5": (0.983, 0.676)}


def frontier_table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """A frontier.csv of the full run's shape: attacked configurations of every label and
    neighbourhood, and the unattacked references and end-to-end models."""
    rng = np.random.default_rng(seed)
    labels = ["none", "as published", "in part", "holds"]
    rows = [{"config": f"knn/{index}", "family": "knn",
             "neighbourhood": rng.choice(["item", "user"]), "guarantee": rng.choice(labels),
             "rmse": rng.uniform(0.935, 1.06), "precision@10": rng.uniform(0.60, 0.745),
             "max_gain": rng.uniform(-0.05, 0.17)} for index in range(n)]
    rows += [{"config": name, "family": "end-to-end" if "/" in name else "reference",
              "neighbourhood": None, "guarantee": "holds" if "/" in name else "none",
              "rmse": rmse, "precision@10": precision, "max_gain": np.nan}
             for name, (rmse, precision) in UNATTACKED.items()]
    table = pd.DataFrame(rows)
    table["pareto_rmse"] = frontier.pareto(table.rmse, table.max_gain)
    table["pareto_precision"] = frontier.pareto(-table["precision@10"], table.max_gain)
    return table


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> tuple[Figure, list[tuple[Text, Bbox]]]:
    """The figure `plot_frontier` saves, drawn again `SHOWN` pixels wide, and each text
    drawn there with its own box (an annotation's without its leader line; the tick
    labels outside the axes' limits are not drawn)."""
    figures, savefig, draw = [], Figure.savefig, Text.draw
    drawn_texts: list = []

    def record(figure, *args, **kwargs):
        figures.append(figure)
        return savefig(figure, *args, **kwargs)

    def draw_and_record(text, renderer):
        draw(text, renderer)
        if text.get_visible() and text.get_text().strip():
            drawn_texts.append((text, Text.get_window_extent(text, renderer)))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", record)
        plot_frontier(frontier_table(), tmp_path_factory.mktemp("frontier") / "frontier.png")
        [figure] = figures
        figure.set_dpi(SHOWN / figure.get_figwidth())
        patch.setattr(Text, "draw", draw_and_record)
        FigureCanvasAgg(figure).draw()
    return figure, drawn_texts


def test_no_two_texts_of_the_frontier_overlap_at_the_width_shown(drawn):
    """Every text's box (tick labels, axis labels, the title, the legend, the names of the
    configurations that are not attacked) is apart from every other's at 700 pixels wide:
    DPBaseline's and DPALS's names, 0.001 RMSE apart, overprinted each other."""
    figure, texts = drawn
    boxes = [(text.get_text(), box) for text, box in texts]
    assert len(boxes) > 20
    overlapping = [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
                   if box_a.overlaps(box_b)]
    assert not overlapping, overlapping[:5]
    inside = figure.bbox
    outside = [text for text, box in boxes if not (box.x0 >= inside.x0 - 0.5
               and box.x1 <= inside.x1 + 0.5 and box.y0 >= inside.y0 - 0.5
               and box.y1 <= inside.y1 + 0.5)]
    assert not outside, f"cut at the figure's edge: {outside}"


def test_every_text_of_the_frontier_is_readable_at_the_width_shown(drawn):
    """At least 10 pixels high at 700 pixels wide (the names are drawn at that size, not
    enlarged afterwards by `save`, so their spacing holds), and every unattacked model
    named once per panel."""
    figure, texts = drawn
    sizes = {text.get_text(): text.get_fontsize() * figure.dpi / 72 for text, _ in texts}
    assert min(sizes.values()) >= 10 - 1e-6, {t: s for t, s in sizes.items() if s < 10}
    names = [text.get_text() for text, _ in texts]
    for name in UNATTACKED:
        assert names.count(reference_name(name)) == 2, name


def test_spread_keeps_the_order_and_the_gap():
    placed = spread(np.array([0.5, 0.50, 0.51, 0.2, 0.99]), gap=0.05, low=0.0, high=1.0)
    assert np.all(np.diff(np.sort(placed)) >= 0.05 - 1e-12)
    assert list(np.argsort(placed, kind="stable")) == [3, 0, 1, 2, 4]
    assert placed.max() <= 1.0 and placed.min() >= 0.0
    np.testing.assert_allclose(spread(np.array([0.1, 0.9]), 0.05, 0, 1), [0.1, 0.9])
    assert reference_name("DPALS/eps=0.5") == "DPALS, ε = 0.5"
    assert reference_name("BaselineOnly") == "BaselineOnly"
