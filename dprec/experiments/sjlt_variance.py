"""Variance of private distance estimates: Laplace SJLT against Gaussian JL.

Stausholm, "Improved Differentially Private Euclidean Distance
Approximation", PODS 2021, against Kenthapadi et al. 2013, with
dprec's [`PrivateSJLT`][] and
[`GaussianJL`][].

(a) Empirical against formula.  One pair of rating vectors ``x, y`` (ratings
    1-5 on 20 of 50 items each, 10 in common; ``Δ = 5``), ``R`` repetitions
    with a fresh projection and fresh noise each (every pair on its own block
    of columns; the Gaussian JL in chunks of pairs, each chunk with its own
    ``σ`` from its own public matrix, the formula averaged over chunks).  The
    sample variance of ``‖x' − y'‖² − 2k·Var(η)`` is compared with

    * SJLT: ``(2/k)(‖z‖₂⁴ − ‖z‖₄⁴) + 16b²‖z‖² + 56kb⁴``, ``b = √s·Δ/ε``;
    * JL:   ``2‖z‖⁴/k + 8σ²‖z‖² + 8kσ⁴``, ``σ = (w₂/ε)·sqrt(2(ln(1/(2δ)) + ε))``,

    with its standard error ``sqrt((m₄ − v²)/R)``, over ε, δ, k and s.
(b) Where the SJLT wins.  The formulas over a wider grid, for a pair of
    MovieLens-sized vectors (``d = 1682``, ``w₂`` from a drawn ``P``; both
    Gaussian calibrations: the paper's and the analytic one of Balle & Wang,
    which is the smallest valid σ): the variance ratio SJLT / JL.  The SJLT's
    pure-ε noise term ``56k s²Δ⁴/ε⁴`` grows with ``s²``; the Gaussian's
    ``8kσ⁴`` with ``(ln(1/(2δ)) + ε)²``: the SJLT wins for small ``s`` and
    small ``δ`` (the paper's "δ < e^{-s}" regime).

Writes ``variance.csv``, ``comparison.csv`` and ``sjlt_variance.png`` under
``--out`` (default ``results/sjlt``):

    python experiments/sjlt_variance.py --quick
    python experiments/sjlt_variance.py
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from tqdm import tqdm

from dprec.experiments._options import POSITIVE_INT, experiment_parser, run_folder
from dprec.mechanisms import gaussian_sigma, laplace_scale
from dprec.similarity.sjlt import (
    GaussianJL,
    PrivateSJLT,
    gaussian_jl_distance_variance,
    gaussian_jl_matrix,
    kenthapadi_sigma,
    sjlt_distance_variance,
)
from dprec.utils._plotting import save, subplots

EPSILONS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
DELTAS: tuple[float, ...] = (1e-2, 1e-4, 1e-6, 1e-9)
KS: tuple[int, ...] = (64, 256, 1024)
SS: tuple[int, ...] = (1, 2, 4, 8, 16)
SENSITIVITY = 5.0
N_FEATURES = 50
#: entries of one chunk's dense Gaussian matrix (k × chunk columns)
_JL_CELLS = 1 << 22


def pair_vectors(seed: int = 0, d: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """Ratings 1-5 on items 0-19 (x) and 10-29 (y) of ``d``."""
    rng = np.random.default_rng(seed)
    x, y = np.zeros(d), np.zeros(d)
    x[:20] = rng.integers(1, 6, 20)
    y[10:30] = rng.integers(1, 6, 20)
    return x, y


def _blocks(x: np.ndarray, y: np.ndarray, n_pairs: int) -> sp.csr_matrix:
    """Rows 2i, 2i+1: x and y on the i-th block of ``len(x)`` columns."""
    return sp.block_diag([sp.csr_matrix(np.vstack([x, y]))] * n_pairs, format="csr")


def _summary(D: np.ndarray, truth: float, formula: float) -> dict:
    var = float(D.var(ddof=1))
    m4 = float(np.mean((D - D.mean()) ** 4))
    se = math.sqrt(max(m4 - var * var, 0.0) / len(D))
    return {"mean": float(D.mean()), "truth": truth, "variance": var, "formula": formula,
            "se_variance": se, "z": (var - formula) / se if se > 0 else 0.0,
            "ratio": var / formula, "reps": len(D)}


def sjlt_row(x, y, k: int, s: int, eps: float, reps: int, seed: int) -> dict:
    """Private SJLT's measured and predicted variance of the squared distance
    of ``x`` and ``y`` over ``reps`` sketches."""
    backend = PrivateSJLT(k, s, epsilon=eps, rating_bound=SENSITIVITY, random_state=seed)
    S = backend.sketch(_blocks(x, y, reps))
    D = backend.squared_distances_paired(S[0::2], S[1::2])
    z = x - y
    return {"mechanism": "sjlt", "k": k, "s": s, "epsilon": eps, "delta": 0.0,
            "noise": backend.scale(), **_summary(D, float(z @ z), backend.distance_variance(z))}


def jl_row(x, y, k: int, eps: float, delta: float, reps: int, seed: int) -> dict:
    """Gaussian JL's measured and predicted variance of the squared distance of
    ``x`` and ``y`` over ``reps`` projections."""
    per_chunk = max(1, min(reps, _JL_CELLS // (k * len(x))))
    D, formulas, sigmas = [], [], []
    z = x - y
    for i, start in enumerate(range(0, reps, per_chunk)):
        n = min(per_chunk, reps - start)
        backend = GaussianJL(k, epsilon=eps, delta=delta, rating_bound=SENSITIVITY,
                             random_state=seed * 100_003 + i)
        S = backend.sketch(_blocks(x, y, n))
        D.append(backend.squared_distances_paired(S[0::2], S[1::2]))
        formulas.append(np.full(n, backend.distance_variance(z)))
        sigmas.append(np.full(n, backend.sigma_))
    D = np.concatenate(D)
    return {"mechanism": "gaussian_jl", "k": k, "s": np.nan, "epsilon": eps, "delta": delta,
            "noise": float(np.mean(np.concatenate(sigmas))),
            **_summary(D, float(z @ z), float(np.mean(np.concatenate(formulas))))}


def variance_table(epsilons=EPSILONS, deltas=DELTAS, ks=KS, ss=SS, reps: int = 2000,
                   seed: int = 0, verbose: bool = True) -> pd.DataFrame:
    """(a): empirical variance against the formula for every configuration."""
    x, y = pair_vectors(seed)
    rows = []
    for ki, k in enumerate(tqdm(ks, desc="variance (a)", unit="k", disable=not verbose)):
        start = time.perf_counter()
        for ei, eps in enumerate(epsilons):
            for s in ss:
                if k % s == 0:
                    rows.append(sjlt_row(x, y, k, s, eps, reps, seed + 1000 * ki + 10 * ei + s))
            for di, delta in enumerate(deltas):
                rows.append(jl_row(x, y, k, eps, delta, reps,
                                   seed + 7 + 1000 * ki + 10 * ei + di))
        if verbose:
            tqdm.write(f"  k={k}: {time.perf_counter() - start:.1f} s")
    return pd.DataFrame(rows)


def comparison_table(epsilons=EPSILONS, deltas=DELTAS, ks=KS, ss=SS, n_features: int = 1682,
                     seed: int = 0) -> pd.DataFrame:
    """(b): formula variances of SJLT and JL (both calibrations), and their ratio."""
    x, y = pair_vectors(seed, n_features)
    z = x - y
    rows = []
    for k in ks:
        P = gaussian_jl_matrix(k, np.arange(n_features), seed)
        w2 = SENSITIVITY * float(np.sqrt((P**2).sum(axis=0)).max())
        for eps in epsilons:
            for delta in deltas:
                sigmas = {"kenthapadi": kenthapadi_sigma(eps, delta, w2),
                          "analytic": gaussian_sigma(eps, delta, w2)}
                for s in ss:
                    if k % s:
                        continue
                    b = laplace_scale(eps, math.sqrt(s) * SENSITIVITY, "lattice", max_changed=s)
                    v_sjlt = sjlt_distance_variance(z, k, b)
                    row = {"k": k, "s": s, "epsilon": eps, "delta": delta, "w2": w2,
                           "sq_distance": float(z @ z), "var_sjlt": v_sjlt,
                           "noise_sjlt": 56 * k * b**4}
                    for name, sigma in sigmas.items():
                        v_jl = gaussian_jl_distance_variance(z, k, sigma)
                        row[f"var_jl_{name}"] = v_jl
                        row[f"ratio_{name}"] = v_sjlt / v_jl
                        row[f"sjlt_wins_{name}"] = v_sjlt < v_jl
                    rows.append(row)
    return pd.DataFrame(rows)


def plot(variance: pd.DataFrame, comparison: pd.DataFrame, path: Path) -> None:
    """The variance figures (measured against predicted, SJLT against JL),
    written to ``path``."""
    fig, axes = subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    for mechanism, marker in (("sjlt", "o"), ("gaussian_jl", "s")):
        part = variance[variance.mechanism == mechanism]
        ax.errorbar(part.formula, part.variance, yerr=2 * part.se_variance, fmt=marker, ms=3,
                    alpha=0.7, label=mechanism)
    lims = [variance.formula.min() / 2, variance.formula.max() * 2]
    ax.plot(lims, lims, "k-", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="formula variance", ylabel="empirical variance",
           title="(a) empirical (±2 se) vs formula")
    ax.legend(fontsize=7)

    ax = axes[1]
    k = 256 if 256 in set(comparison.k) else int(comparison.k.max())
    part = comparison[comparison.k == k]
    for s in sorted(part.s.unique()):
        line = part[(part.s == s) & (part.delta == part.delta.min())]
        ax.plot(line.epsilon, line.var_sjlt, "-o", ms=3, label=f"SJLT s={s}")
    for delta in sorted(part.delta.unique()):
        line = part[(part.s == part.s.min()) & (part.delta == delta)]
        ax.plot(line.epsilon, line.var_jl_kenthapadi, "--", label=f"JL δ={delta:g}")
    ax.set(xscale="log", yscale="log", xlabel="ε", ylabel="Var of ‖x−y‖² estimate",
           title=f"(b) formulas, k={k}, ‖z‖²={part.sq_distance.iloc[0]:.0f}")
    ax.set_xticks(sorted(part.epsilon.unique()), [f"{e:g}" for e in sorted(part.epsilon.unique())])
    ax.minorticks_off()
    ax.legend(fontsize=6, ncol=2)

    ax = axes[2]
    eps_mid = sorted(part.epsilon.unique())[len(part.epsilon.unique()) // 2]
    grid = part[part.epsilon == eps_mid].pivot_table(index="s", columns="delta",
                                                     values="ratio_kenthapadi")
    image = ax.imshow(np.log10(grid.values), cmap="coolwarm", vmin=-1.5, vmax=1.5,
                      aspect="auto", origin="lower")
    ax.set_xticks(range(len(grid.columns)), [f"{d:g}" for d in grid.columns])
    ax.set_yticks(range(len(grid.index)), [str(s) for s in grid.index])
    ax.set(xlabel="δ (JL)", ylabel="s (SJLT)",
           title=f"log10 Var SJLT / Var JL (ε={eps_mid:g}, k={k}); blue: SJLT wins")
    fig.colorbar(image, ax=ax)
    save(fig, path)


def run(out: str | os.PathLike | None = None, quick: bool = False, seed: int = 0,
        reps: int | None = None, verbose: bool = True) -> pd.DataFrame:
    """Run (a) and (b), write the CSVs and the figure; return the table of (a).

    ``out``: the folder written (default ``results/sjlt``; ``results/quick/sjlt`` when
    ``quick``).

    ``quick``: ε ∈ {1, 4}, δ ∈ {1e-4, 1e-9}, k ∈ {64, 256}, s ∈ {1, 4, 16}, 500 repetitions.
    """
    out = run_folder(out, "results/sjlt", quick)
    out.mkdir(parents=True, exist_ok=True)
    grid = (dict(epsilons=(1.0, 4.0), deltas=(1e-4, 1e-9), ks=(64, 256), ss=(1, 4, 16))
            if quick else {})
    variance = variance_table(reps=reps or (500 if quick else 2000), seed=seed,
                              verbose=verbose, **grid)
    variance.to_csv(out / "variance.csv", index=False)
    comparison = comparison_table(seed=seed)
    comparison.to_csv(out / "comparison.csv", index=False)
    plot(variance, comparison, out / "sjlt_variance.png")
    return variance


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """The command line of ``dprec sjlt``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/sjlt")
    parser.add_argument("--quick", action="store_true", help="a small fast run")
    parser.add_argument("--reps", type=POSITIVE_INT, default=2000, quick=500,
                        help="repetitions per configuration (default 2000; quick 500)")
    args = parser.parse_args(argv)
    variance = run(args.out, quick=args.quick, seed=args.seed, reps=args.reps)
    comparison = pd.read_csv(Path(args.out) / "comparison.csv")
    with pd.option_context("display.width", 200, "display.max_rows", 100,
                           "display.float_format", "{:.4g}".format):
        print(variance[["mechanism", "k", "s", "epsilon", "delta", "variance", "formula",
                        "ratio", "z"]].to_string(index=False))
        print(f"|z| > 3 in {int((variance.z.abs() > 3).sum())} of {len(variance)} rows")
        wins = comparison.pivot_table(index=["k", "s"], columns="delta",
                                      values="sjlt_wins_kenthapadi", aggfunc="mean")
        print("share of ε values where SJLT beats JL (paper's σ):")
        print(wins)
        analytic = comparison.pivot_table(index=["k", "s"], columns="delta",
                                          values="sjlt_wins_analytic", aggfunc="mean")
        print("same against the analytic (smallest valid) Gaussian σ:")
        print(analytic)
    print(f"wrote {Path(args.out).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
