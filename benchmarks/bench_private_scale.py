"""Private models at scale: one 80/20 fold from the MovieLens-1M to the 25M shape.

Each (model, shape) runs in its own process.  The process generates the shape's
ratings as arrays (``_common.movielens_like``: no file, no Surprise ``Dataset``, no
tuple per rating), builds an ``ArrayDataset`` from them, splits it with
``array_train_test_split(data, test_size=0.2, random_state=0)``, then fits the
model on the trainset and answers the whole testset with ``model.test(testset)``
and its RMSE.  Reported per run:

- ``fit_s``: ``model.fit(trainset)``;
- ``test_s``: ``model.test(testset)`` and ``surprise.accuracy.rmse`` (the whole 20 %
  fold), of which ``tuples_s`` is spent making Surprise's ``Prediction`` tuples
  (and their ``details`` dicts: dprec's ``predictions`` helper, timed by a wrapper);
- ``total_s``: fit + test (data generation and split excluded: ``data_s``);
- ``peak_mb``: the process's peak resident memory (data included), ``data_mb`` the
  peak before the fit (the arrays, the split);
- ``rmse`` on the test fold; ``items``, the items the model lists (the private
  models' partition selection may drop the rarely rated ones) or, for ``PrivateKNN``,
  the trainset's; ``factors``, whether a model on factors released them.

Shapes: ``ml-1m`` (6040 × 3706, 1,000,209 ratings, whole stars 1-5), ``ml-10m``
(69,878 × 10,677, 10,000,054), ``ml-25m`` (162,541 × 59,047, 25,000,000), the last
two in half stars 0.5-5 as the MovieLens releases.  ``--quick``: a small shape
(1,000 × 800, 50,000 ratings) for the test suite.  Models (ε = 1, random_state = 0,
defaults otherwise): ``DPBaseline``, ``DPALS``, ``DPItemKNN(similarity="factors")``,
``PrivateKNN`` item-based with blocked storage and k = 40; and ``DPALS`` and
``DPItemKNN(similarity="factors")`` with ``baseline_share=0.3`` (``-forced``): their
defaults release the factors only where (users / items) · √ρ ≥ 1
(at ε = 1 the 10M shape, not the 1M or 25M ones), so the defaults' times mix two
computations; the forced ones run the factors at every shape.  The ``factors``
column says whether a run released factors.  On request, ``-catalogue``: ``DPALS`` and
``DPItemKNN(similarity="factors")`` with every item of the data as a public catalogue
(``items=``), so that no partition selection drops the rarely rated ones (at ε = 1 the
selection lists about 3,200 of the 25M shape's 59,047 items), and ``baseline_share=0.3``
(with every item listed the size rule would release no factors).

Aims (issue 55): each model fits and answers the 25M shape's test fold in under
15 minutes with a peak under 12 GB on 2 cores, the growth linear in ratings.  The
results are merged into ``<out>/private_scale.csv`` (a rerun replaces its own rows),
plotted to ``<out>/private_scale.png`` (time and memory against ratings, log-log),
and the growth exponents between consecutive shapes are printed.
Run: ``python benchmarks/bench_private_scale.py [--shapes ml-1m ml-10m] [--models ...]``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: users, items, ratings, rating scale
SHAPES = {"quick": (1_000, 800, 50_000, (1.0, 5.0)),
          "ml-1m": (6_040, 3_706, 1_000_209, (1.0, 5.0)),
          "ml-10m": (69_878, 10_677, 10_000_054, (0.5, 5.0)),
          "ml-25m": (162_541, 59_047, 25_000_000, (0.5, 5.0))}
MODELS = ("DPBaseline", "DPALS", "DPItemKNN-factors", "PrivateKNN-item-blocked",
          "DPALS-forced", "DPItemKNN-factors-forced", "DPALS-catalogue",
          "DPItemKNN-factors-catalogue")
#: what runs by default (the "-catalogue" forms on request)
DEFAULT_MODELS = MODELS[:6]
AIM_SECONDS, AIM_MB = 15 * 60, 12 * 1024
FIELDS = ("model", "shape", "ratings", "train", "test", "data_s", "fit_s", "test_s",
          "tuples_s", "total_s", "data_mb", "peak_mb", "rmse", "factors", "items")
#: the columns that are not numbers
TEXT = ("model", "shape", "factors")


def make_model(name: str, catalogue: list | None = None):
    """The model ``name``; the "-catalogue" forms list every item of ``catalogue`` (a
    public catalogue: no partition selection) and release factors (as "-forced")."""
    from dprec import DPALS, DPBaseline, DPItemKNN, PrivateKNN

    if name.endswith("catalogue"):
        model = DPALS if name.startswith("DPALS") else DPItemKNN
        options = {} if model is DPALS else {"similarity": "factors"}
        return model(epsilon=1.0, random_state=0, items=catalogue, baseline_share=0.3,
                     **options)

    if name == "DPBaseline":
        return DPBaseline(epsilon=1.0, random_state=0)
    # "-forced": the factors released at every shape, with the split of ρ the size rule
    # gives them where it releases them (DPALS's FACTOR_SHARE = 0.7; below its threshold
    # the defaults release the effects alone)
    if name in ("DPALS", "DPALS-forced"):
        return DPALS(epsilon=1.0, random_state=0,
                     baseline_share=0.3 if name.endswith("forced") else None)
    if name in ("DPItemKNN-factors", "DPItemKNN-factors-forced"):
        return DPItemKNN(epsilon=1.0, similarity="factors", random_state=0,
                         baseline_share=0.3 if name.endswith("forced") else None)
    return PrivateKNN(k=40, sim_options={"user_based": False}, storage="blocked",
                      random_state=0, verbose=False)


def array_data(shape: str):
    """The shape's ratings as an ``ArrayDataset`` (raw ids the numbers as ``str``)."""
    import numpy as np
    from _common import STARS, movielens_like

    from dprec.datasets import ArrayDataset

    n_users, n_items, n_ratings, scale = SHAPES[shape]
    users, items, stars = movielens_like(n_ratings, n_users, n_items,
                                         max_item_id=max(n_items, 209_171 * n_items // 59_047))
    item_ids, item_codes = np.unique(items, return_inverse=True)
    ratings = STARS[stars] if scale[0] == 0.5 else np.ceil(STARS[stars])   # whole stars
    del items, stars
    return ArrayDataset((users - 1).astype(np.int32), item_codes.astype(np.int32), ratings,
                        np.arange(1, n_users + 1).astype(str).astype(object),
                        item_ids.astype(str).astype(object), scale)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(name: str, shape: str) -> dict:
    """Generate, split, fit and test one model at one shape in this process."""
    from surprise import accuracy

    import dprec.endtoend.rating_space as rating_space
    import dprec.knn.predictions as knn_predictions
    from dprec.datasets import array_train_test_split

    start = time.perf_counter()
    data = array_data(shape)
    trainset, testset = array_train_test_split(data, test_size=0.2, random_state=0)
    catalogue = data.item_ids.tolist()
    del data
    data_s, data_mb = time.perf_counter() - start, peak_mb()
    tuples = [0.0]

    def timed(make):             # the Prediction tuples (and details dicts), timed apart
        def wrapper(*args, **kwargs):
            begin = time.perf_counter()
            result = make(*args, **kwargs)
            tuples[0] += time.perf_counter() - begin
            return result
        return wrapper

    for module in (rating_space, knn_predictions):
        module.predictions = timed(module.predictions)
    model = make_model(name, catalogue)
    start = time.perf_counter()
    model.fit(trainset)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    rmse = accuracy.rmse(model.test(testset), verbose=False)
    test_s = time.perf_counter() - start
    return {"model": name, "shape": shape, "ratings": SHAPES[shape][2],
            "train": trainset.n_ratings, "test": len(testset), "data_s": data_s,
            "fit_s": fit_s, "test_s": test_s, "tuples_s": tuples[0], "total_s": fit_s + test_s,
            "data_mb": data_mb, "peak_mb": peak_mb(), "rmse": rmse,
            "factors": factors_released(model),
            "items": len(getattr(model, "item_list_", ())) or trainset.n_items}


def factors_released(model) -> str:
    """``yes`` / ``no``: whether a model on factors released them (its size rule may give
    the whole budget to the effects), ``-`` for the others."""
    from dprec import DPALS, DPItemKNN

    als = getattr(model, "factors_", None) if isinstance(model, DPItemKNN) else model
    if not isinstance(als, DPALS):
        return "-"
    return "yes" if als.noise_sd_ > 0 else "no"


def run_child(name: str, shape: str, timeout: float, memory_gb: float) -> dict | str:
    """One run in a child process, its address space capped at ``memory_gb`` (a
    ``MemoryError`` there, not the machine's out-of-memory killer): its figures, or why
    it failed."""
    try:
        child = subprocess.run([sys.executable, __file__, "--one", name, shape,
                                "--memory-limit", str(memory_gb)],
                               capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s"
    if child.returncode != 0:
        lines = child.stderr.strip().splitlines() or [f"exit code {child.returncode}"]
        return lines[-1]
    return json.loads(child.stdout.strip().splitlines()[-1])


def merge(file: Path, results: list[dict]) -> list[dict]:
    """The rows of ``file`` with ``results`` in place of the same (model, shape)."""
    rows = {}
    if file.is_file():
        with file.open() as stream:
            for row in csv.DictReader(stream):
                rows[row["model"], row["shape"]] = {
                    key: value if key in TEXT or not _number(value) else float(value)
                    for key, value in row.items()}
    rows.update({(r["model"], r["shape"]): r for r in results})
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("w", newline="") as stream:
        writer = csv.DictWriter(stream, FIELDS)
        writer.writeheader()
        for row in rows.values():
            writer.writerow({key: row.get(key, "?") for key in FIELDS})
    return list(rows.values())


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def growth_exponents(results: list[dict]) -> list[tuple[str, str, float, float, float]]:
    """``(model, "a → b", fit, total time, peak memory exponents)``: the slopes of their
    logs against log(ratings) between consecutive shapes."""
    rows = []
    for model in dict.fromkeys(r["model"] for r in results):
        runs = sorted((r for r in results if r["model"] == model), key=lambda r: r["ratings"])
        for a, b in itertools.pairwise(runs):
            scale = math.log(b["ratings"] / a["ratings"])
            rows.append((model, f"{a['shape']} → {b['shape']}",
                         *(math.log(b[key] / a[key]) / scale
                           for key in ("fit_s", "total_s", "peak_mb"))))
    return rows


def plot(results: list[dict], file: Path) -> None:
    """Total time and peak memory against ratings, log-log, a line per model, the aims
    drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for axis, key, aim, label in ((axes[0], "total_s", AIM_SECONDS, "15 min aim"),
                                  (axes[1], "peak_mb", AIM_MB, "12 GB aim")):
        for model in dict.fromkeys(r["model"] for r in results):
            runs = sorted((r for r in results if r["model"] == model),
                          key=lambda r: r["ratings"])
            axis.plot([r["ratings"] for r in runs], [r[key] for r in runs], marker="o",
                      label=model)
        axis.axhline(aim, color="red", linestyle="--", linewidth=1)
        axis.annotate(label, (0.02, aim), xycoords=("axes fraction", "data"), color="red",
                      va="bottom")
        axis.set(xscale="log", yscale="log", xlabel="ratings",
                 ylabel="fit + test of one 80/20 fold (s)" if key == "total_s"
                 else "peak resident memory (MB)")
        axis.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    figure.suptitle("Private models, one 20 % test fold, time and memory against ratings")
    figure.tight_layout()
    figure.savefig(file, dpi=120)
    plt.close(figure)


def print_table(results: list[dict]) -> None:
    print(f"{'model':<24} {'shape':<7} {'fit s':>8} {'test s':>8} {'tuples s':>8} "
          f"{'total s':>8} {'data MB':>8} {'peak MB':>8} {'RMSE':>7} factors")
    for r in results:
        print(f"{r['model']:<24} {r['shape']:<7} {r['fit_s']:>8.1f} {r['test_s']:>8.1f} "
              f"{r['tuples_s']:>8.1f} {r['total_s']:>8.1f} {r['data_mb']:>8,.0f} "
              f"{r['peak_mb']:>8,.0f} {r['rmse']:>7.4f} {r['factors']}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=[s for s in SHAPES if s != "quick"],
                        default=["ml-1m", "ml-10m"],
                        help="shapes to run, smallest first (default: ml-1m ml-10m)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(DEFAULT_MODELS),
                        help="models to run (default: all but the '-catalogue' forms; "
                             "'-forced': factors at every shape, baseline_share=0.3; "
                             "'-catalogue': every item listed, items= the data's ids)")
    parser.add_argument("--quick", action="store_true",
                        help="a small shape (1,000 x 800, 50,000 ratings) only")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "private_scale",
                        help="folder of private_scale.csv and .png")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds before a run is stopped (default 3600)")
    parser.add_argument("--memory-limit", type=float, default=20.0,
                        help="GB of address space a run may take (default 20)")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        limit = int(args.memory_limit * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        print(json.dumps(run_one(*args.one)))
        return
    shapes = ["quick"] if args.quick else args.shapes
    results = []
    for shape, name in itertools.product(shapes, args.models):
        users, items, n_ratings, _ = SHAPES[shape]
        print(f"{name} at {shape} ({users:,} x {items:,}, {n_ratings:,} ratings) ...",
              flush=True)
        result = run_child(name, shape, args.timeout, args.memory_limit)
        if isinstance(result, str):
            print(f"  failed: {result}", flush=True)
            continue
        print(f"  fit {result['fit_s']:.1f} s, test {result['test_s']:.1f} s (tuples "
              f"{result['tuples_s']:.1f} s), peak {result['peak_mb']:,.0f} MB, RMSE "
              f"{result['rmse']:.4f}", flush=True)
        results.append(result)
    if not results:
        raise SystemExit("no run succeeded")
    merged = merge(args.out / "private_scale.csv", results)
    print("\nthis run (seconds of one 80/20 fold; peak resident MB of its process)")
    print_table(results)
    merged.sort(key=lambda r: (MODELS.index(r["model"]) if r["model"] in MODELS else 99,
                               r["ratings"]))
    exponents = growth_exponents(merged)
    if exponents:
        print("\ngrowth exponents against the number of ratings (all rows of the CSV)")
        for model, between, fit, total, memory in exponents:
            print(f"{model:<24} {between:<18} fit {fit:5.2f}   fit + test {total:5.2f}   "
                  f"peak memory {memory:5.2f}")
    plot(merged, args.out / "private_scale.png")
    print(f"\nwrote {args.out / 'private_scale.csv'} and {args.out / 'private_scale.png'}")


if __name__ == "__main__":
    main()
