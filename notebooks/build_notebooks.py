"""Write dprec's notebooks from the cell sources below, and execute them.

The .ipynb files are generated: edit the cells here, then run
``python notebooks/build_notebooks.py notebooks`` (written without outputs), or
``python notebooks/build_notebooks.py notebooks --execute`` to also run each one
in full mode (MovieLens 100k when it can be loaded; saved results under
``results/`` are reused) and save its outputs, trimmed for review: figures as
small PNGs, long text cut.  ``tests/test_notebooks.py`` executes every notebook
in quick mode (``DPREC_QUICK=1``) and checks that every plotting cell shows an
image, in the committed notebooks too.
"""
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

SETUP = '''%matplotlib inline
%config InlineBackend.figure_formats = ["png"]
import os
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

plt.rcParams["figure.dpi"] = 100  # a 9-inch figure: 900 pixels, its text readable at 700

QUICK = os.environ.get("DPREC_QUICK") == "1"   # DPREC_QUICK=1: a small run in well under 3 minutes
RESULTS = Path("..") / "results"
print("quick mode" if QUICK else "full mode")'''

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def write(path, cells):
    """Cells starting with ``md:`` are Markdown, the others code."""
    nb = new_notebook()
    nb.metadata["kernelspec"] = KERNEL
    nb.cells = [new_markdown_cell(c[3:]) if c.startswith("md:") else new_code_cell(c)
                for c in cells]
    nbformat.write(nb, path)

NOTEBOOKS = {}

NOTEBOOKS["ppns_reproduction.ipynb"] = [
"""md:# PPNS reproduction: neighbour selectors, accuracy α, security β and ε

Lu & Shen (ComSIS 2015) propose partitioned probabilistic neighbour selection
(PPNS) and claim it is more accurate than PNCF and probabilistic selection at
the same ε. This notebook cross-validates every selector of `dprec` against
ε with `dprec.experiments.selectors_cv` (the full run is
`python experiments/selectors_cv.py`; with `DPREC_QUICK=1` a small synthetic
run instead), then reads the accuracy α and security β of each selection.""",
SETUP,
'''from dprec import datasets
from dprec.experiments import selectors_cv

saved = RESULTS / "selectors" / "selectors_cv.csv"
if QUICK:
    data = datasets.synthetic(300, 400, 12_000, random_state=0)
    table = selectors_cv.run(data, epsilons=(0.5, 2.0, 10.0), ks=(20,), n_folds=2, progress=False)
elif saved.exists():
    table = pd.read_csv(saved)
else:
    table = selectors_cv.run()
summary = selectors_cv.summary(table)
summary''',
'''selectors_cv.plot(table, Path("ppns_mae.png"))
from IPython.display import Image
Image("ppns_mae.png")''',
"""md:**Reading.** α is the realised `Σ sim(chosen) / Σ sim(top-k)`; β is the
furthest partition (of `k` candidates) a neighbour can come from, so a
β-kNN attacker needs `βk` fake users. PPNS keeps `⌈pk⌉` neighbours from the
top partition: its α stays close to 1 and its β is small and fixed by the
schedule, while probabilistic selection and PNCF can reach every partition.
The curves of PPNS are flat in ε: with co-rated cosine the
recommendation-aware sensitivity is 1 for most users, so the weights
`exp(ε·sim/(4k·RS))` are nearly uniform (see docs/selectors.md).""",
'''alpha_beta = summary.pivot_table(index=["neighbourhood", "k", "selector"],
                                 values=["alpha", "beta", "mae"], aggfunc="mean")
alpha_beta''',
'''from dprec.selectors import ppns_schedule
for k in (20, 40):
    for p in (0.3, 0.5, 0.8):
        schedule = ppns_schedule(k, p)
        print(f"k={k} p={p}: draws per partition {schedule.tolist()}, β = {len(schedule) + 1}")''',
]

NOTEBOOKS["ranking_reproduction.ipynb"] = [
"""md:# Ranking differential privacy: Mallows against Laplace

Xu, Sun & Cheng (2023). (a) The expected number of concordant pairs kept by
the Mallows and Laplace privatizers at the same ε-ranking DP, simulated next
to their closed forms; (b) a pairwise ranking learner trained on privatised
orders, on MovieLens 100k. `python experiments/ranking_dp.py` is the full
run; `DPREC_QUICK=1` runs a small one.""",
SETUP,
'''from dprec.experiments import ranking_dp

out = Path("ranking_out")
saved = RESULTS / "ranking" / "accuracy.csv"
if not QUICK and saved.exists():
    out = saved.parent
else:
    ranking_dp.run(out, quick=QUICK, dataset="synthetic" if QUICK else "ml-100k", verbose=False)
concordance = pd.read_csv(out / "concordance.csv")
accuracy = pd.read_csv(out / "accuracy.csv")
concordance.head()''',
'''from IPython.display import Image
Image(str(out / "ranking_dp.png"))''',
'''ranking_dp.summarise(accuracy)''',
'''from dprec.ranking import mallows_theta
for m in (2, 5, 50):
    print(f"m={m}: θ(tight) = ε/(2m−3) = {mallows_theta(1.0, m):.4f} at ε = 1")''',
"""md:**Reading.** The tight Mallows calibration θ = ε/(2m−3) is exactly
ε-ranking DP (the tests enumerate every output for m ≤ 6). Calibrated that
way, the Laplace baseline keeps *more* concordant pairs than Mallows once the
lists are longer than a handful of items, contrary to the paper, whose
advantage for Mallows comes from a θ that is not private. The learner's
pairwise accuracy rises with ε towards the non-private value, which matches
or beats Surprise's SVD.""",
]


NOTEBOOKS["sketches_reproduction.ipynb"] = [
"""md:# Private Jaccard sketches: RRMinHash and NoisyMinHash

Aumüller, Bourgeat & Schmurr (SISAP 2020). (a) The MAE of the Jaccard
estimate of pairs of sets against the number of hash functions K, for each
mechanism, ε and B; (b) recall@10 of the neighbours found from private
sketches on HetRec Last.fm and MovieLens 100k. `python
experiments/jaccard_sketches.py` is the full run; `DPREC_QUICK=1` a small one
(the real-data part is skipped when the data is absent).""",
SETUP,
'''from dprec.experiments import jaccard_sketches

out = RESULTS / "sketches"
if QUICK or not (out / "mae.csv").exists():
    out = Path("sketches_out")
    jaccard_sketches.run(out, quick=QUICK, verbose=False)
mae = pd.read_csv(out / "mae.csv")
keys = ["mechanism", "epsilon", "B", "K"]
mae.groupby(keys, dropna=False)["mae"].mean().unstack("K").round(3)''',
'''from IPython.display import Image, display
for name in ["mae_rr_minhash.png", "mae_noisy_minhash.png", "recall.png"]:
    if (out / name).exists():
        display(Image(str(out / name)))''',
"""md:**Reading.** RRMinHash is more accurate than NoisyMinHash at every ε.
The private error barely falls with K: the number of coordinates two
neighbouring sets can change, L, grows with K, and each coordinate gets
ε/⌈L⌉. dprec corrects the paper's L where its Chernoff bound does not hold
(see docs/similarities.md). On real data, the private sketches do not recover the true
neighbours at ε ≤ 8 (recall at chance level), while the non-private MinHash
does.""",
]

NOTEBOOKS["sjlt_reproduction.ipynb"] = [
"""md:# Private SJLT against the Gaussian JL baseline

Stausholm (PODS 2021): a sparse Johnson–Lindenstrauss transform with Laplace
noise is pure ε-DP and, for sparse projections and small δ, estimates
distances with less variance than the Gaussian JL mechanism of Kenthapadi et
al. The notebook compares the empirical variance of both estimators with
their formulas. `python experiments/sjlt_variance.py` is the full run.""",
SETUP,
'''from dprec.experiments import sjlt_variance

out = RESULTS / "sjlt"
if QUICK or not (out / "variance.csv").exists():
    out = Path("sjlt_out")
    sjlt_variance.run(out, quick=QUICK, verbose=False)
variance = pd.read_csv(out / "variance.csv")
comparison = pd.read_csv(out / "comparison.csv")
variance.head()''',
'''from IPython.display import Image
Image(str(out / "sjlt_variance.png"))''',
'''comparison.head(20)''',
"""md:**Reading.** The measured variances agree with
`Var_S + 16b²‖z‖² + 56kb⁴` (SJLT) and the Gaussian formula; SJLT wins when
the projection is sparse (small s) and δ is small, as the paper claims, and
loses to JL for dense projections at large δ.""",
]

NOTEBOOKS["accuracy_vs_security.ipynb"] = [
"""md:# Accuracy against security: the frontier

The main comparison of dprec, on recommenders worth attacking: every
neighbour selector (top-k, probabilistic, PNCF and PPNS as published, PNCF
corrected) × similarity (exact cosine, the centred cosine over all ratings,
and the private sketches RR-MinHash, Noisy-MinHash, SJLT, Gaussian JL) ×
prediction rule (basic, means, baseline) × neighbourhood (Surprise's item
semantics, the papers' user semantics), each private one at ε ∈ {0.5, 1, 2,
5}, the end-to-end DP models, and the references (global mean,
`BaselineOnly`, `KNNBaseline`). `k` is chosen per configuration by
cross-validation on the training folds only. Accuracy is RMSE and
precision@10; security is the gain of the pooled β-kNN attack over what the
crowd reveals (50 targets, β ∈ {1, 2, 4, 8}, the attacker picks the best β)
and ReuseKNN's share of vulnerable users. Privacy is measured too: one fit
per configuration with canary users and ratings gives the membership
attacks' AUC and a one-run lower bound on ε, set against the ε its report
claims. Each configuration is labelled by
what the privacy report of the configuration fitted with fresh noise
computes for its worst user, never by the `epsilon` given: `privacy` (its ε,
δ, unit and status, with the users outside the guarantee if any) and
`guarantee`: *holds* (end to end, for every user), *in part* (some outputs
or users only), *as published* (a paper's claim dprec does not guarantee) or
*none*.

The full run is `python experiments/frontier.py --anchor` (MovieLens 100k,
671 configurations; its time on 2 cores is on the documentation's *Frontier*
page, `docs/frontier.md`, which quotes the same run); with `DPREC_QUICK=1` this
notebook runs a small synthetic version in seconds. The outputs saved below
are from that full run.""",
SETUP,
'''from dprec.experiments import frontier

saved = RESULTS / "frontier" / "frontier.csv"
if QUICK:
    frontier.main(["--quick", "--out", "frontier_out"])
    saved = Path("frontier_out") / "frontier.csv"
elif not saved.exists():
    print("no saved full run: running it now (MovieLens 100k, about 26 minutes on 2 idle cores)")
    frontier.main(["--anchor", "--out", str(RESULTS / "frontier")])
table = pd.read_csv(saved)
print(f"{len(table)} configurations; Pareto-optimal for RMSE: {table.pareto_rmse.sum()}, "
      f"for precision@10: {table.pareto_precision.sum()}")''',
'''figure = Path(saved).with_name("frontier.png")
frontier.plot_frontier(table, figure)
from IPython.display import Image
Image(filename=str(figure), width=900)''',
'''columns = [c for c in ["config", "k", "rmse", "precision@10", "gain_b1", "gain_b8",
                       "max_gain", "vulnerable", "guarantee", "privacy"]
           if c in table]  # privacy: the report's worst user (runs saved before it: none)
pareto = table[table.pareto_rmse | table.pareto_precision].sort_values("rmse")
pareto[columns].round(3)''',
'''# per accuracy level: the most resistant configuration at least that accurate
pd.read_csv(Path(saved).with_name("by_accuracy.csv")).round(3)''',
'''# the references, and the most accurate configuration of each guarantee label
best = table.dropna(subset=["rmse"]).sort_values("rmse", kind="stable").groupby("guarantee").head(1)
pd.concat([table[table.family == "reference"], best])[columns].round(3)''',
'''# ReuseKNN's vulnerable users: mean share per neighbourhood and selector
print(table.groupby(["neighbourhood", "selector"]).vulnerable.mean().unstack().round(3))
anchor = Path(saved).with_name("anchor.csv")
if anchor.exists():
    print(pd.read_csv(anchor).round(3).to_string(index=False))''',
"""md:## The privacy axis: membership and an empirical ε

Each configuration was fitted once more with 200 canary users and 1,000
canary ratings, each in the training data with probability ½. The membership
attacks' AUC reads the answers a user receives (what a configuration leaks to
whoever sees them); the one-run audit (Steinke, Nasr & Jagielski, 2023) turns
the guesses on the answers to *other* users, the view every dprec claim
covers, into a lower bound on ε at 95 % for the whole table. A bound above a
claim that holds would refute it; the figure marks each claim.""",
'''figure = Path(saved).with_name("privacy.png")
frontier.plot_privacy(table, figure)
Image(filename=str(figure), width=900)''',
'''# the largest leakage and the largest bound under each guarantee label
measured = ["mia_auc_user", "mia_auc_rating", "empirical_epsilon_user",
            "empirical_epsilon_rating", "own_epsilon_user"]
table.groupby("guarantee")[measured].max().round(3)''',
'''# where a claim (that holds, or as published) is below what the audit measures
frontier.disagreements(table).round(3)''',
"""md:## The earlier sweep: every selector and backend against β and ε

The attack in the papers' user neighbourhood (`k = 20`, plain co-rated
cosine next to the overlap-aware one with `min_support = 8`, and MinHash),
where most configurations are less accurate than the global mean but the
selectors' security claims are easiest to read. The full run is
`python experiments/attack_resistance.py` (MovieLens 100k, 50 targets,
about 10 minutes).""",
'''from dprec.experiments import attack_resistance

saved = RESULTS / "attack_resistance" / "attack_summary.csv"
if QUICK:
    attack_resistance.main(["--quick", "--out", "attack_out"])
    saved = Path("attack_out") / "attack_summary.csv"
elif not saved.exists():
    print("no saved full run: running it now (MovieLens 100k, 50 targets, about 10 minutes)")
    attack_resistance.main(["--out", str(RESULTS / "attack_resistance")])
summary = pd.read_csv(saved)
summary["similarity/selector"] = summary["similarity"] + "/" + summary["selector"]
summary.head()''',
'''fig, axes = plt.subplots(2, 2, figsize=(9, 7), layout="constrained")
at_1 = summary[summary.beta == summary.beta.min()]
yardstick = at_1["baseline_item_mean"].mean()

ax = axes[0, 0]  # accuracy against attack success (the frontier)
for name, rows in at_1.groupby("selector"):
    ax.scatter(rows["rmse"], rows["recovery_pooled"], label=name, alpha=0.8)
ax.axhline(yardstick, ls="--", c="r", lw=1, label="crowd yardstick")
ax.set(xlabel="RMSE", ylabel="pooled recovery", title=f"β = {at_1.beta.min()}: accuracy vs attack")
ax.legend()

ax = axes[0, 1]  # attack success against β, per selector (mean over similarities)
for name, rows in summary.groupby("selector"):
    means = rows.groupby("beta")["recovery_pooled"].mean()
    ax.plot(means.index, means.values, marker="o", label=name)
ax.axhline(yardstick, ls="--", c="r", lw=1)
ax.set(xlabel="β", ylabel="pooled recovery (mean over similarities)", title="attack against β")

ax = axes[1, 0]  # attack success against ε, per similarity (private selectors)
private = summary[summary.epsilon.notna()]
for name, rows in private.groupby("similarity"):
    means = rows.groupby("epsilon")["recovery_pooled"].mean()
    ax.plot(means.index, means.values, marker="o", label=name)
ax.set(xscale="log", xlabel="ε", ylabel="pooled recovery", title="attack against ε")
ax.legend()

ax = axes[1, 1]  # accuracy against ε, per similarity
for name, rows in private.groupby("similarity"):
    means = rows.groupby("epsilon")["rmse"].mean()
    ax.plot(means.index, means.values, marker="o", label=name)
ax.set(xscale="log", xlabel="ε", ylabel="RMSE", title="accuracy against ε")''',
'''resisting = attack_resistance.resisting(summary, beta=int(summary.beta.max()))
resisting[["config", "recovery_pooled", "baseline_item_mean", "rmse"]].head(10)''',
"""md:**Reading** (the full MovieLens run; the numbers are in docs/attack.md).
With plain co-rated cosine nobody is exposed, by accident: the target ties at
similarity 1 with every user who shares a single item. With an overlap-aware
similarity (`min_support` = the attacker's 8 known ratings), top-k, PPNS and
probabilistic selection are broken from β = 1: PPNS shows the target to only
half the fake users (its schedule's ⌈pk⌉/k), but the pooled vote of the fake
users recovers every hidden rating, so PPNS's reported β does not hold
against pooling. PNCF resists through the Laplace noise on its prediction
weights (at a cost of about 0.1 RMSE here), and the private sketches resist
because at ε ≤ 5 they are close to random neighbours, at a small accuracy
cost in this coverage-bound user neighbourhood.""",
]


#: stream output lines kept per cell in the committed notebooks
KEEP_LINES = 30
#: widest image (pixels) kept in the committed notebooks
MAX_WIDTH = 900


def compress_images(notebook) -> None:
    """Re-encode every PNG output at most :data:`MAX_WIDTH` pixels wide, with a 256-colour
    palette (figures are flat colours): the committed notebooks stay small."""
    import base64
    import io

    from PIL import Image

    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data:
                continue
            image = Image.open(io.BytesIO(base64.b64decode(data["image/png"]))).convert("RGB")
            if image.width > MAX_WIDTH:
                image = image.resize((MAX_WIDTH, round(image.height * MAX_WIDTH / image.width)),
                                     Image.LANCZOS)
            buffer = io.BytesIO()
            image.quantize(256).save(buffer, format="PNG", optimize=True)
            data["image/png"] = base64.b64encode(buffer.getvalue()).decode()


def tidy(notebook) -> None:
    """Outputs fit for review: no stderr (progress bars, fitting chatter), each cell's
    stdout cut to :data:`KEEP_LINES` lines, figures compressed (:func:`compress_images`)."""
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.outputs:
            if output.get("output_type") == "stream":
                if output["name"] == "stderr":
                    continue
                if kept and kept[-1].get("output_type") == "stream":
                    kept[-1]["text"] += output["text"]
                    continue
            kept.append(output)
        for output in kept:
            if output.get("output_type") == "stream":
                lines = output["text"].splitlines()
                if len(lines) > KEEP_LINES:
                    output["text"] = "\n".join(lines[:KEEP_LINES] + [
                        f"... ({len(lines) - KEEP_LINES} more lines)"]) + "\n"
        cell.outputs = kept
    compress_images(notebook)


def execute(path: Path) -> None:
    """Run the notebook at ``path`` in full mode from its folder and save it with its
    outputs tidied (:func:`tidy`)."""
    import nbclient

    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=3600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    tidy(notebook)
    nbformat.write(notebook, path)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    for name, cells in NOTEBOOKS.items():
        write(target / name, cells)
        print("wrote", name)
        if "--execute" in sys.argv[2:]:
            execute(target / name)
            print("executed", name, flush=True)
