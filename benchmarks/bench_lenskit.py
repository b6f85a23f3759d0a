"""dprec's kNN against LensKit's and Cornac's: RMSE, MAE, time and peak memory on the same folds.

Configurations, each item- and user-based with k = 40 (``--k``):

- ``dprec``: ``PrivateKNNWithMeans`` with LensKit's rule and similarity
  (``sim_options={"name": "centered_cosine"}``, ``min_sim=1e-6``,
  ``fallback="baseline"`` with LensKit's bias model, ``bsl_options={"method":
  "als", "n_epochs": 1, "reg_u": 0, "reg_i": 0}``);
- ``dprec-cosine``: ``PrivateKNNWithMeans`` with co-rated cosine (Surprise's
  ``KNNWithMeans``, bit for bit);
- ``lenskit``: LensKit's ``ItemKNNScorer`` / ``UserKNNScorer`` (explicit,
  ``max_nbrs=k``, its other defaults) in ``predict_pipeline`` (its bias
  fallback), predicted with ``lenskit.batch.predict(n_jobs=1)``;
- ``cornac`` / ``cornac-centered``: Cornac's ``ItemKNN`` / ``UserKNN``
  (cosine, ``k``, its other defaults; and ``mean_centered=True``), each test
  pair answered by ``model.rate`` as Cornac's own rating evaluation does.

LensKit and Cornac run where they are installed (``pip install
'dprec[compare]'``); a line says which are missing and their rows are skipped.

Splits (``--splits``): MovieLens 100k's ``u1.base``/``u1.test``; 5 folds of
MovieLens 100k (synthetic data of its shape when it is absent); 5 folds of
synthetic data of the MovieLens-1M shape (``dprec.datasets.synthetic``, 6040
users, 3706 items, 1,000,209 ratings), the first fold only unless
``--fold-limit`` says otherwise.  Every configuration sees the same folds.

Protocol.  Each timed run is its own process, which reads the folds, converts
them to its library's own input (a Surprise trainset for dprec, a LensKit
``Dataset``, a Cornac ``Dataset``; not timed), warms up (one fit and predict on
a tiny synthetic dataset: dprec's compiled kernels load there; not timed),
then times fit + prediction of every test pair, summed over the folds.  The runs
are interleaved (every configuration once, then again, ``--repeat`` times) and
the fastest is reported.  Peak memory is the peak resident set size of that
process during the timed part (Linux's ``VmHWM``, reset when the clock starts;
elsewhere ``ru_maxrss``, the whole process), with its increase over the
resident size when the clock started.  Predictions are clipped to the rating
scale (LensKit does not clip: its scores are clipped here); RMSE and MAE are
the folds' means.  ``× dprec`` is a row's time over the ``dprec`` row's, in
the same run.  Parity: the largest and mean ``|Δ|`` between the ``dprec`` and
``lenskit`` rows' predictions, and how many differ by more than float32
precision, ``1e-6 · max(1, |score|)``.

Run: ``python benchmarks/bench_lenskit.py`` (``--help`` for the options; ``--quick``:
a smoke run on small synthetic data, 2 folds, one run each).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: LensKit's bias model as Surprise's baselines (docs/prediction_rules.md)
LENSKIT_BIAS = {"method": "als", "n_epochs": 1, "reg_u": 0.0, "reg_i": 0.0}
#: configuration -> (library, what it is)
CONFIGURATIONS = {
    "dprec": ("dprec", "PrivateKNNWithMeans, centered_cosine, LensKit's rule"),
    "dprec-cosine": ("dprec", "PrivateKNNWithMeans, co-rated cosine"),
    "lenskit": ("LensKit", "ItemKNNScorer / UserKNNScorer, bias fallback"),
    "cornac": ("Cornac", "ItemKNN / UserKNN, cosine"),
    "cornac-centered": ("Cornac", "ItemKNN / UserKNN, cosine, mean_centered"),
}
#: split -> (label, the number of folds by default)
SPLITS = {"u1": ("MovieLens 100k u1 split", 1), "ml-100k": ("MovieLens 100k", 5),
          "ml-1m": ("synthetic, MovieLens-1M shape", 5),
          "quick": ("synthetic (300 users, 400 items, 12000 ratings)", 2)}
ML1M_SHAPE = (6040, 3706, 1_000_209)
#: the folds run by default (LensKit and Cornac take minutes per ML-1M fold)
DEFAULT_FOLD_LIMIT = {"ml-1m": 1}
#: the modules whose import says a library is usable
PROBES = {"LensKit": ("lenskit.knn", "lenskit.batch"), "Cornac": ("cornac.models",)}


def missing_libraries() -> dict[str, str]:
    """The comparison libraries that cannot be imported here, with the reason."""
    missing = {}
    for library, modules in PROBES.items():
        try:
            for module in modules:
                __import__(module)
        except Exception as error:   # any failure to import skips the library's rows
            missing[library] = f"{type(error).__name__}: {error}".splitlines()[0]
    return missing


# --- one timed run (a child process) ------------------------------------------------------

def load_splits(split: str, n_folds: int, fold_limit: int | None, data_file: str | None):
    """The (trainset, testset) pairs of a split, the first `fold_limit` folds only."""
    import itertools

    from _common import u1_split
    from surprise.model_selection import KFold

    from dprec import datasets

    if split == "u1":
        return u1_split()
    if split == "quick":
        data = datasets.synthetic(300, 400, 12_000, random_state=0)
    elif data_file is not None:
        with open(data_file, "rb") as stream:
            data = pickle.load(stream)
    else:
        data, _ = datasets.load_or_synthetic("auto")
    return list(itertools.islice(KFold(n_splits=n_folds, random_state=0).split(data),
                                 fold_limit))


def raw_triples(trainset) -> list[tuple]:
    """A trainset's ratings as (raw user id, raw item id, rating)."""
    return [(trainset.to_raw_uid(u), trainset.to_raw_iid(i), r)
            for u, i, r in trainset.all_ratings()]


def dprec_runner(config: str, based: str, k: int):
    """(prepare, run, estimates) of a dprec configuration."""
    from dprec import PrivateKNNWithMeans

    user_based = based == "user"

    def run(prepared):
        trainset, testset = prepared
        if config == "dprec":
            algo = PrivateKNNWithMeans(
                k=k, min_sim=1e-6, fallback="baseline", bsl_options=LENSKIT_BIAS,
                sim_options={"name": "centered_cosine", "user_based": user_based},
                verbose=False)
        else:
            algo = PrivateKNNWithMeans(k=k, sim_options={"name": "cosine",
                                                         "user_based": user_based},
                                       verbose=False)
        return algo.fit(trainset).test(testset)

    return (lambda trainset, testset: (trainset, testset), run,
            lambda prepared, output: np.array([p.est for p in output]))


def lenskit_runner(config: str, based: str, k: int):
    """(prepare, run, estimates) of LensKit's explicit kNN in its prediction pipeline."""
    import pandas as pd
    from lenskit.batch import predict
    from lenskit.data import ItemListCollection, from_interactions_df
    from lenskit.knn import ItemKNNScorer, UserKNNScorer
    from lenskit.pipeline import predict_pipeline

    def prepare(trainset, testset):
        train = pd.DataFrame(raw_triples(trainset), columns=["user_id", "item_id", "rating"])
        test = pd.DataFrame(testset, columns=["user_id", "item_id", "rating"])
        return from_interactions_df(train), test, ItemListCollection.from_df(test, "user_id")

    def run(prepared):
        dataset, _, queries = prepared
        pipeline = predict_pipeline((ItemKNNScorer if based == "item" else UserKNNScorer)(
            max_nbrs=k))
        pipeline.train(dataset)
        # n_jobs=1: LensKit 2025.8's process pool fails on this pipeline's outputs
        # ("incompatible item lists: field nbr_counts type double != int32")
        return predict(pipeline, queries, n_jobs=1)

    def estimates(prepared, output):
        _, test, _ = prepared
        scores = output.to_df()[["user_id", "item_id", "score"]]
        return test.merge(scores, on=["user_id", "item_id"], how="left")["score"].to_numpy(
            np.float64)

    return prepare, run, estimates


def cornac_runner(config: str, based: str, k: int):
    """(prepare, run, estimates) of Cornac's ItemKNN / UserKNN, rated pair by pair."""
    from cornac.data import Dataset
    from cornac.models import ItemKNN, UserKNN

    def prepare(trainset, testset):
        train = Dataset.from_uir(raw_triples(trainset), seed=0)
        # an unknown user or item: an index past the known ones, which Cornac answers with
        # its default score (the global mean)
        users = [train.uid_map.get(u, train.num_users) for u, _, _ in testset]
        items = [train.iid_map.get(i, train.num_items) for _, i, _ in testset]
        return train, users, items

    def run(prepared):
        train, users, items = prepared
        model = (ItemKNN if based == "item" else UserKNN)(
            k=k, similarity="cosine", mean_centered=config == "cornac-centered",
            verbose=False)
        model.fit(train)
        return np.fromiter((model.rate(u, i).item() for u, i in zip(users, items)),
                           dtype=np.float64, count=len(users))

    return prepare, run, lambda prepared, output: output


RUNNERS = {"dprec": dprec_runner, "LensKit": lenskit_runner, "Cornac": cornac_runner}


def resident_mb() -> tuple[float, float] | None:
    """(current, peak) resident set size of this process in MB, from Linux's
    /proc/self/status (None elsewhere)."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text()
                      .splitlines() if ":" in line)
        return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024
    except (OSError, KeyError, ValueError):
        return None


def reset_peak() -> bool:
    """Reset this process's peak resident set size (Linux >= 4.0); whether it could."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def run_one(config: str, based: str, split: str, n_folds: int, fold_limit: int | None,
            k: int, data_file: str | None, save: str | None) -> dict:
    """Time one configuration on a split in this process; returns its figures."""
    from dprec import datasets

    prepare, run, estimates = RUNNERS[CONFIGURATIONS[config][0]](config, based, k)
    start = time.perf_counter()   # the warm-up: a fit and a prediction on tiny data
    tiny = datasets.synthetic(60, 50, 900, random_state=1).build_full_trainset()
    run(prepare(tiny, tiny.build_testset()[:50]))
    warm_up = time.perf_counter() - start
    splits = load_splits(split, n_folds, fold_limit, data_file)
    prepared = [prepare(trainset, testset) for trainset, testset in splits]
    resident = resident_mb()
    peak_reset = resident is not None and reset_peak()
    seconds, outputs = 0.0, []
    for each in prepared:
        start = time.perf_counter()
        outputs.append(run(each))
        seconds += time.perf_counter() - start
    if peak_reset:
        start_mb, peak_mb = resident[0], resident_mb()[1]
    else:
        start_mb = None if resident is None else resident[0]
        scale = 1 if sys.platform == "darwin" else 1024     # bytes on macOS, else KiB
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20
    rmse, mae, missing, kept = [], [], 0, []
    for (trainset, testset), each, output in zip(splits, prepared, outputs):
        est = estimates(each, output)
        missing += int(np.isnan(est).sum())
        est = np.clip(np.where(np.isnan(est), trainset.global_mean, est),
                      *trainset.rating_scale)
        error = est - np.array([r for _, _, r in testset])
        rmse.append(float(np.sqrt(np.mean(error ** 2))))
        mae.append(float(np.mean(np.abs(error))))
        kept.append(est)
    if save:
        np.save(save, np.concatenate(kept))
    return {"seconds": seconds, "folds_run": len(splits), "rmse": float(np.mean(rmse)),
            "mae": float(np.mean(mae)), "missing": missing, "peak_mb": peak_mb,
            "start_mb": start_mb, "peak_reset": peak_reset, "warm_up_s": warm_up}


# --- the comparison (the parent process) --------------------------------------------------

def child(config: str, based: str, split: str, n_folds: int, fold_limit: int | None, args,
          data_file: str | None, save: Path | None) -> dict | str:
    """One timed run in a fresh process: its figures, or the last line of its error."""
    command = [sys.executable, __file__, "--one", config, "--based", based, "--splits", split,
               "--folds", str(n_folds), "--k", str(args.k)]
    if fold_limit is not None:
        command += ["--fold-limit", str(fold_limit)]
    if data_file is not None:
        command += ["--data-file", data_file]
    if save is not None:
        command += ["--save", str(save)]
    done = subprocess.run(command, capture_output=True, text=True)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return (done.stderr.strip().splitlines() or ["no output"])[-1]
    return json.loads(lines[-1])


def parity(ours: np.ndarray, theirs: np.ndarray) -> dict:
    """Per pair: the largest and mean |Δ|, and how many differ beyond float32 precision."""
    gap = np.abs(ours - theirs)
    return {"parity_max": float(gap.max()), "parity_mean": float(gap.mean()),
            "parity_beyond_float32": int((gap > 1e-6 * np.maximum(1.0, np.abs(theirs))).sum()),
            "parity_pairs": len(gap)}


def compare(split: str, configs: list[str], args, data_file: str | None,
            scratch: Path) -> list[dict]:
    """Every configuration on one split, interleaved, best of `repeat`: prints the table,
    returns the CSV rows."""
    label, default_folds = SPLITS[split]
    if split == "ml-100k":
        from dprec.datasets import DatasetUnavailable, load

        try:
            load("ml-100k")
        except DatasetUnavailable:     # the runs fall back as load_or_synthetic does
            label = "synthetic, MovieLens 100k shape (MovieLens 100k is not available here)"
    n_folds = default_folds if split == "u1" else args.folds or default_folds
    fold_limit = None if split == "u1" else \
        args.fold_limit if args.fold_limit is not None else DEFAULT_FOLD_LIMIT.get(split)
    folds_note = "" if fold_limit is None else f", the first {fold_limit} of them"
    load_start = os.getloadavg()[0]
    print(f"\n{label}: {n_folds} fold(s){folds_note}, k={args.k}, fit + predict summed over "
          f"the folds, best of {args.repeat} interleaved runs, one process each "
          f"(load average {load_start:.1f} at the start)", flush=True)
    best, failed = {}, {}
    for repeat in range(args.repeat):
        for based in args.based:
            for config in configs:
                save = (scratch / f"{split}-{config}-{based}.npy"
                        if repeat == 0 and config in ("dprec", "lenskit") else None)
                load = os.getloadavg()[0]
                print(f"  run {repeat + 1}/{args.repeat}: {config}, {based}-based", end="\r",
                      file=sys.stderr, flush=True)
                result = child(config, based, split, n_folds, fold_limit, args, data_file,
                               save)
                if isinstance(result, str):
                    failed[config, based] = result
                    continue
                result["load"] = load
                if (config, based) not in best or \
                        result["seconds"] < best[config, based]["seconds"]:
                    best[config, based] = result
    print(" " * 60, end="\r", file=sys.stderr, flush=True)
    print(f"{'configuration':<16} {'based':<5} {'RMSE':>7} {'MAE':>7} {'seconds':>8} "
          f"{'× dprec':>8} {'peak MB':>8} {'Δ MB':>7} {'load':>5}")
    rows = []
    for based in args.based:
        reference = best.get(("dprec", based))
        for config in configs:
            if (config, based) in failed:
                print(f"{config:<16} {based:<5} failed: {failed[config, based]}")
                continue
            result = best.get((config, based))
            if result is None:
                continue
            ratio = result["seconds"] / reference["seconds"] if reference else float("nan")
            delta = (result["peak_mb"] - result["start_mb"]
                     if result["start_mb"] is not None else float("nan"))
            print(f"{config:<16} {based:<5} {result['rmse']:>7.4f} {result['mae']:>7.4f} "
                  f"{result['seconds']:>8.2f} {ratio:>7.1f}x {result['peak_mb']:>8.0f} "
                  f"{delta:>7.0f} {result['load']:>5.1f}", flush=True)
            library, description = CONFIGURATIONS[config]
            rows.append({"split": split, "data": label, "based": based, "configuration": config,
                         "library": library, "description": description, "k": args.k,
                         "folds": n_folds, **result, "seconds_per_fold":
                         result["seconds"] / result["folds_run"], "x_dprec": ratio,
                         "delta_mb": delta, "memory": "VmHWM of the timed part"
                         if result["peak_reset"] else "ru_maxrss of the process"})
    for row in rows:
        if row["configuration"] == "lenskit":
            ours = scratch / f"{split}-dprec-{row['based']}.npy"
            theirs = scratch / f"{split}-lenskit-{row['based']}.npy"
            if ours.is_file() and theirs.is_file():
                row.update(parity(np.load(ours), np.load(theirs)))
                print(f"parity, {row['based']}-based, dprec against LensKit per pair: largest "
                      f"|Δ| {row['parity_max']:.1e}, mean {row['parity_mean']:.1e}; "
                      f"{row['parity_beyond_float32']} of {row['parity_pairs']} beyond float32 "
                      "precision (1e-6 · max(1, |score|))")
    if any(row["missing"] for row in rows):
        print("pairs without a score (answered with the global mean): " + ", ".join(
            f"{row['configuration']} {row['based']} {row['missing']}" for row in rows
            if row["missing"]))
    print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=["u1", "ml-100k", "ml-1m"],
                        choices=list(SPLITS), help="default: u1 ml-100k ml-1m")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGURATIONS),
                        choices=list(CONFIGURATIONS))
    parser.add_argument("--based", nargs="+", default=["item", "user"],
                        choices=["item", "user"])
    parser.add_argument("--k", type=int, default=40)
    parser.add_argument("--folds", type=int, default=None,
                        help="folds of the k-fold splits (default 5; --quick 2)")
    parser.add_argument("--fold-limit", type=int, default=None,
                        help="run only the first folds of the k-fold splits (default: all, "
                             "the first at the ML-1M shape)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="interleaved runs of every configuration; the fastest is reported")
    parser.add_argument("--csv", default="results/bench_lenskit.csv",
                        help="where the table is written (default results/bench_lenskit.csv)")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: small synthetic data, 2 folds, one run each")
    parser.add_argument("--one", choices=list(CONFIGURATIONS), help=argparse.SUPPRESS)
    parser.add_argument("--data-file", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one, args.based[0], args.splits[0],
                                 args.folds or SPLITS[args.splits[0]][1], args.fold_limit,
                                 args.k, args.data_file, args.save)))
        return
    if args.quick:
        args.splits, args.repeat = ["quick"], 1
    missing = missing_libraries()
    configs = [c for c in args.configs if CONFIGURATIONS[c][0] not in missing]
    for library, reason in missing.items():
        print(f"{library} is not installed here ({reason}): its rows are skipped "
              "(pip install 'dprec[compare]' installs LensKit and Cornac)")
    print("comparing: " + ", ".join(dict.fromkeys(CONFIGURATIONS[c][0] for c in configs)),
          flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        for split in args.splits:
            if split == "u1":
                from _common import u1_split

                if u1_split() is None:
                    print("\nu1 split: MovieLens 100k's u1.base/u1.test are not available; "
                          "skipped")
                    continue
            data_file = None
            if split == "ml-1m":
                from dprec import datasets

                data_file = str(scratch / "ml-1m.pickle")
                with open(data_file, "wb") as stream:
                    pickle.dump(datasets.synthetic(*ML1M_SHAPE, random_state=0), stream)
            rows += compare(split, configs, args, data_file, scratch)
    if rows:
        out = Path(args.csv)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as stream:
            writer = csv.DictWriter(stream, fieldnames=list(dict.fromkeys(
                key for row in rows for key in row)))
            writer.writeheader()
            writer.writerows(rows)
        print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
