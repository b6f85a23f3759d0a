"""Loaders: time and peak memory of ``dprec.datasets.load`` on a MovieLens-25M-sized file.

Writes a generated file of 25,000,000 ratings (162,541 users, 59,047 items: the
MovieLens 25M shape) in the ``ml-25m`` ``ratings.csv`` format (header
``userId,movieId,rating,timestamp``, half-star ratings 0.5-5, MovieLens 25M's rating
histogram, the users in order), and with ``--formats csv dat`` also in the ``::``
format of ``ml-10M100K/ratings.dat``, to a temporary folder that is deleted at the
end.  Then, each in its own process (so the writer's memory does not count):

- ``stages``: ``dprec.datasets.files.read_dataset_files`` (find the file, parse it,
  the ids made strings: the ``read`` stage) then Surprise's
  ``Dataset.load_from_df`` (``to Dataset``: Surprise's list of rating tuples),
  the peak resident memory after each;
- ``load``: ``load(name, path=...)`` end to end, and its peak resident memory;
- ``arrays``: ``load(name, path=..., as_arrays=True)``, then
  ``array_train_test_split(data, test_size=0.2, random_state=0)`` (Surprise's split,
  as an array-backed trainset and testset), then the trainset's arrays as dprec's
  models read them: the time and peak resident memory to a trainset ready to fit.

Targets: the ``ml-25m`` load under 2 minutes on 2 cores; loaded, split 80/20 and
ready as arrays under 2 minutes and 4 GB.
Run: ``python benchmarks/bench_loaders.py [--ratings 25000000] [--formats csv dat]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import ML25M_ITEMS as ITEMS
from _common import ML25M_USERS as USERS
from _common import STARS, movielens_like

#: the dataset each format is read as, and where its file goes
FORMATS = {"csv": ("ml-25m", "ml-25m/ratings.csv"), "dat": ("ml-10m", "ml-10M100K/ratings.dat")}
CHUNK = 2_000_000


def generate(n_ratings: int, seed: int = 0) -> pd.DataFrame:
    """``n_ratings`` distinct (user, movie) pairs of the 25M shape
    (``_common.movielens_like``), with half-star ratings and timestamps; the users in
    order."""
    users, items, stars = movielens_like(n_ratings, seed=seed)
    rng = np.random.default_rng([seed, 1])
    timestamps = rng.integers(789_652_009, 1_574_327_703, n_ratings)
    return pd.DataFrame({"userId": users, "movieId": items, "star": stars.astype(np.int8),
                         "timestamp": timestamps})


def write(table: pd.DataFrame, file: Path, form: str) -> None:
    """The ratings as MovieLens writes them, by chunks of rows (pandas' C writer); the
    ratings as text from a table of the ten half stars."""
    text = np.array([f"{s:.1f}" for s in STARS], dtype=object)
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("w") as stream:
        if form == "csv":
            stream.write("userId,movieId,rating,timestamp\n")
        for start in range(0, len(table), CHUNK):
            part = table.iloc[start:start + CHUNK]
            columns = {"u": part["userId"], "m": part["movieId"],
                       "r": pd.Series(text[part["star"].to_numpy()], dtype=object,
                                      index=part.index),
                       "t": part["timestamp"]}
            if form == "dat":         # '::' as ':' with empty fields between
                blank = pd.Series("", index=part.index, dtype=object)
                columns = {"u": columns["u"], "a": blank, "m": columns["m"], "b": blank,
                           "r": columns["r"], "c": blank, "t": columns["t"]}
            pd.DataFrame(columns).to_csv(stream, sep="," if form == "csv" else ":",
                                         header=False, index=False)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, name: str, folder: str) -> dict:
    """One measurement in this process (``stages`` or ``load``)."""
    from surprise import Dataset, Reader

    from dprec.datasets import load
    from dprec.datasets.files import RATING_SCALES, read_dataset_files

    start = time.perf_counter()
    if mode == "arrays":
        from dprec.datasets import array_train_test_split
        from dprec.utils._ratings import RatingArrays

        data = load(name, path=folder, as_arrays=True)
        loaded = time.perf_counter() - start
        trainset, testset = array_train_test_split(data, test_size=0.2, random_state=0)
        split = time.perf_counter() - start - loaded
        RatingArrays.from_trainset(trainset)
        return {"load_seconds": loaded, "split_seconds": split,
                "seconds": time.perf_counter() - start, "peak_mb": peak_mb(),
                "train": trainset.n_ratings, "test": len(testset)}
    if mode == "load":
        data = load(name, path=folder)
        return {"seconds": time.perf_counter() - start, "peak_mb": peak_mb(),
                "ratings": len(data.raw_ratings)}
    frame = read_dataset_files(name, folder)
    read = time.perf_counter() - start
    read_peak = peak_mb()
    start = time.perf_counter()
    data = Dataset.load_from_df(frame, Reader(rating_scale=RATING_SCALES[name]))
    return {"read_seconds": read, "read_peak_mb": read_peak,
            "dataset_seconds": time.perf_counter() - start, "peak_mb": peak_mb(),
            "ratings": len(data.raw_ratings), "users": int(frame["user"].nunique()),
            "items": int(frame["item"].nunique())}


def run_child(mode: str, name: str, folder: Path) -> dict:
    result = subprocess.run([sys.executable, __file__, "--child", mode, name, str(folder)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-3000:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratings", type=int, default=25_000_000,
                        help="ratings in the file (default 25,000,000)")
    parser.add_argument("--formats", nargs="+", choices=sorted(FORMATS), default=["csv"],
                        help="csv: ml-25m's ratings.csv; dat: ml-10m's '::' ratings.dat")
    parser.add_argument("--tmp", default=None, help="where the temporary folder goes")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    start = time.perf_counter()
    table = generate(args.ratings)
    print(f"generated {len(table):,} ratings ({USERS:,} users, {ITEMS:,} items) in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    with tempfile.TemporaryDirectory(dir=args.tmp, prefix="bench_loaders_") as folder:
        files = {}
        for form in args.formats:
            name, relative = FORMATS[form]
            file = Path(folder) / relative
            start = time.perf_counter()
            write(table, file, form)
            files[form] = (name, file)
            print(f"wrote {file.name} ({name}'s format): {file.stat().st_size / 2**20:,.0f} MB "
                  f"in {time.perf_counter() - start:.1f} s", flush=True)
        del table
        for name, file in files.values():
            stages = run_child("stages", name, file.parent.parent)
            whole = run_child("load", name, file.parent.parent)
            print(f"\nload({name!r}, path=...): {stages['ratings']:,} ratings, "
                  f"{stages['users']:,} users, {stages['items']:,} items")
            print(f"  read (find, parse, ids as str)  {stages['read_seconds']:7.1f} s   "
                  f"peak {stages['read_peak_mb']:7,.0f} MB")
            print(f"  to Dataset (load_from_df)       {stages['dataset_seconds']:7.1f} s   "
                  f"peak {stages['peak_mb']:7,.0f} MB")
            print(f"  load() end to end               {whole['seconds']:7.1f} s   "
                  f"peak {whole['peak_mb']:7,.0f} MB   (target: under 120 s)", flush=True)
            arrays = run_child("arrays", name, file.parent.parent)
            print(f"  as arrays: load {arrays['load_seconds']:.1f} s, split 80/20 "
                  f"{arrays['split_seconds']:.1f} s ({arrays['train']:,} / {arrays['test']:,} "
                  f"ratings), ready to fit {arrays['seconds']:7.1f} s   peak "
                  f"{arrays['peak_mb']:7,.0f} MB   (target: under 120 s and 4,096 MB)",
                  flush=True)


if __name__ == "__main__":
    main()
