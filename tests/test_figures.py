"""The experiments' figures are readable where they are shown: about 700 pixels wide in
the documentation and the notebooks (a wider PNG is scaled down to that width)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

from dprec.experiments import end_to_end, users_scaling

#: the width (pixels) a figure is shown at, and the smallest text readable there
SHOWN, READABLE = 700, 10


@pytest.fixture
def saved_figures(monkeypatch) -> list[Figure]:
    """The figures saved while the test runs (saved as well)."""
    figures, savefig = [], Figure.savefig

    def record(figure, *args, **kwargs):
        figures.append(figure)
        return savefig(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return figures


def scaling_results() -> pd.DataFrame:
    """`users_scaling`'s table at four ε (a figure four panels wide)."""
    rows = [{"users": users, "model": model, "epsilon": epsilon, "rmse": 1 + 1 / users}
            for users in (200, 400, 800) for epsilon in (0.5, 1.0, 2.0, 5.0)
            for model in ("DPBaseline", "DPItemKNN", "DPALS")]
    rows += [{"users": users, "model": "BaselineOnly", "epsilon": np.nan, "rmse": 0.95}
             for users in (200, 400, 800)]
    return pd.DataFrame(rows)


def end_to_end_table() -> pd.DataFrame:
    """`end_to_end`'s table: two private models against ε and a reference."""
    rows = [{"model": model, "epsilon": epsilon, "fold": fold, "rmse": 1 + 1 / epsilon,
             "mae": 0.8, "precision@10": 0.5, "ndcg@10": 0.8}
            for model in ("DPBaseline", "DPItemKNN") for epsilon in (0.5, 1.0, 5.0)
            for fold in (0, 1)]
    rows += [{"model": "BaselineOnly", "epsilon": np.nan, "fold": fold, "rmse": 0.95,
              "mae": 0.75, "precision@10": 0.6, "ndcg@10": 0.85} for fold in (0, 1)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("plot, table", [(users_scaling.plot, scaling_results),
                                         (end_to_end.plot, end_to_end_table)],
                         ids=["users_scaling", "end_to_end"])
def test_every_text_of_a_saved_figure_is_readable_where_it_is_shown(plot, table, tmp_path,
                                                                     saved_figures):
    """Tick labels, legends and annotations included: at least 10 pixels high when the
    PNG is shown 700 pixels wide (in the figures 12 to 17 inches wide, saved at 110 or
    120 dpi, they were 4 to 7), and the PNG at 150 dpi."""
    path = tmp_path / "figure.png"
    plot(table(), path)
    [figure] = saved_figures
    image = Image.open(path)
    dpi = image.info["dpi"][0]
    shown = min(1.0, SHOWN / image.width)          # a narrower PNG is shown as it is
    sizes = {text.get_text(): text.get_fontsize() * dpi / 72 * shown
             for text in figure.findobj(Text) if text.get_visible() and text.get_text()}
    small = {text: round(size, 1) for text, size in sizes.items() if size < READABLE - 1e-6}
    assert not small, f"text below {READABLE} pixels at {SHOWN} wide: {small}"
    assert dpi == pytest.approx(150, abs=0.5)       # sharp there, on a high-density screen
    assert image.width == round(figure.get_figwidth() * dpi)   # nothing cut or added


def test_the_committed_docs_figures_are_saved_as_the_experiments_save_them():
    """The figures in `docs/` come from full runs saved by `dprec.utils._plotting.save` (150
    dpi); one left from an older rendering (110 or 120 dpi, text 4 to 9 pixels high at
    700 wide) fails here.  Figures re-encoded without a dpi record are not checked."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(["git", "ls-files", "docs/*.png"], cwd=root, capture_output=True,
                            text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    recorded = {name: Image.open(root / name).info["dpi"][0]
                for name in listed.stdout.split() if "dpi" in Image.open(root / name).info}
    assert recorded, "no committed figure records its dpi"
    assert {name: dpi for name, dpi in recorded.items() if abs(dpi - 150) > 0.5} == {}


def test_every_model_of_the_scaling_figure_keeps_one_style_of_its_own(tmp_path,
                                                                       saved_figures):
    """Past ten models the colours come round again: a model differs from every other in
    colour, marker or line style, and looks the same in every panel."""
    models = [f"model {n}" for n in range(12)]
    rows = [{"users": users, "model": model, "epsilon": epsilon, "rmse": 1 + n / users}
            for users in (200, 400) for epsilon in (1.0, 5.0)
            for n, model in enumerate(models)]
    rows += [{"users": users, "model": name, "epsilon": np.nan, "rmse": 0.95}
             for users in (200, 400) for name in ("BaselineOnly", "SVD")]
    users_scaling.plot(pd.DataFrame(rows), tmp_path / "figure.png")
    [figure] = saved_figures
    panels = [{line.get_label(): (to_hex(line.get_color()), line.get_marker(),
                                  line.get_linestyle()) for line in ax.get_lines()}
              for ax in figure.axes]
    assert panels[0] == panels[1]
    assert set(panels[0]) == {*models, "BaselineOnly", "SVD"}
    assert len(set(panels[0].values())) == len(panels[0])
