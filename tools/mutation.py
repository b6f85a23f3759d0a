"""Mutation testing of dprec's privacy-critical code, with a score per module.

A wrong constant in a privacy map crashes nothing: it silently prints a false ε.
This runs mutmut (``pip install mutmut``; configuration in ``pyproject.toml``,
``[tool.mutmut]``) on the code whose mistakes would do that — the mechanisms and
their privacy maps, the accountant, the selectors, the sketches' privacy parameters
(the MinHash bound, the SJLT/JL scales), the Mallows calibration, the end-to-end
private models (``DPBaseline``, ``DPItemKNN``, ``LocalKNN``, ``DPALS`` and the
discrete Gaussian they use: their sensitivities, their lists of users and items, the
order they release in) and the private implicit models (``PrivatePopularity``,
``ImplicitKNN``) — and prints, per module, how many mutants the tests kill. Every
survivor must be listed, with the reason it is equivalent, in
``tests/mutation_survivors.md``; the command fails when a module scores below 95 %
or a survivor is not listed.

Usage::

    python tools/mutation.py                 # all modules
    python tools/mutation.py --scope ledger  # one module
    python tools/mutation.py --scope "dp baseline" --max-children 1
    python tools/mutation.py --report        # only print the last results

Run it before changing any of these modules; it is not part of the default test run.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SURVIVORS = ROOT / "tests" / "mutation_survivors.md"
TARGET = 0.95

#: label -> mutant-name patterns (mutmut names functions ``module.x_name`` and methods
#: ``module.xǁClassǁname``)
SCOPES: dict[str, list[str]] = {
    "mechanisms": ["dprec.mechanisms.*", "dprec.utils._arrays.x_top_k_indices*"],
    "ledger": ["dprec.accountant.ledger.*"],
    "selectors": ["dprec.selectors.ppns.*", "dprec.selectors.pncf.*", "dprec.selectors.base.*",
                  "dprec.selectors.probabilistic.*", "dprec.selectors.topk.*",
                  "dprec.selectors.exponential.*"],
    "minhash privacy": [
        "dprec.similarity.minhash_functions.x_check_bound_arguments*",
        "dprec.similarity.minhash_functions.x_difference_bound*",
        "dprec.similarity.minhash.xǁ_MinHashFamilyǁ_init_private*",
        "dprec.similarity.minhash.xǁ_PrivateMinHashǁ*",
        "dprec.similarity.minhash.xǁRRMinHashǁ*",
        "dprec.similarity.minhash.xǁNoisyMinHashǁsensitivity*",
        "dprec.similarity.minhash.xǁNoisyMinHashǁscale*",
        "dprec.similarity.minhash.xǁNoisyMinHashǁprivacy*",
        "dprec.similarity.minhash.xǁNoisyMinHashǁprivatize*",
    ],
    "sjlt/jl privacy": [
        "dprec.similarity.sjlt.x_sjlt_matrix*",
        "dprec.similarity.sjlt.xǁ_PrivateProjectionǁ_init_common*",
        "dprec.similarity.sjlt.xǁ_PrivateProjectionǁsimilarity_input*",
        "dprec.similarity.sjlt.xǁ_PrivateProjectionǁ_entry*",
        "dprec.similarity.sjlt.xǁPrivateSJLTǁscale*",
        "dprec.similarity.sjlt.xǁPrivateSJLTǁprivacy*",
        "dprec.similarity.sjlt.xǁPrivateSJLTǁ_add_noise*",
        "dprec.similarity.sjlt.xǁGaussianJLǁsigma*",
        "dprec.similarity.sjlt.xǁGaussianJLǁprivacy*",
        "dprec.similarity.sjlt.xǁGaussianJLǁ_add_noise*",
    ],
    "mallows calibration": [
        "dprec.ranking.mallows.x_mallows_theta*",
        "dprec.ranking.mallows.x_laplace_scale*",
        "dprec.ranking.mallows.x_truncated_geometric*",
        "dprec.ranking.mallows.x__per_order_epsilon*",
    ],
    "dp baseline": ["dprec.endtoend.dp_baseline.*", "dprec.endtoend.effects_release.*",
                    "dprec.endtoend.rating_space.*", "dprec.endtoend.noisy_effects.*",
                    "dprec.accountant.private_model.*"],
    "partition selection": ["dprec.mechanisms.partition_selection.*",
                            "dprec.endtoend.item_selection.*",
                            "dprec.endtoend.effects_release.x_release_plan*",
                            "dprec.endtoend.effects_release.x_selection_rule*",
                            "dprec.endtoend.effects_release.x_reselect*",
                            "dprec.endtoend.rating_space.xǁRatingSpaceǁselected*"],
    "dp item knn": ["dprec.endtoend.dp_item_knn.*", "dprec.endtoend.covariance_release.*"],
    "local knn": ["dprec.endtoend.local_knn.*"],
    "discrete gaussian": ["dprec.mechanisms.discrete_gaussian.*"],
    "dp als": ["dprec.endtoend.dp_als.*"],
    "private popularity": ["dprec.implicit.popularity.*"],
    "implicit knn": ["dprec.implicit.knn.*"],
}
#: test failure, internal error, timeout, type check, and a kill by signal (mutmut's
#: "segfault": SIGSEGV, or SIGKILL a second after the CPU limit's SIGXCPU)
KILLED = {1, 3, 36, 37, -24, 24, 152, 255, -9, -11}
TIMEOUTS = {36, -24, 24, 152, 255}


def _results() -> dict[str, int | None]:
    """Every mutant's exit code from mutmut's result files."""
    codes: dict[str, int | None] = {}
    for meta in (ROOT / "mutants").rglob("*.meta"):
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    return codes


def _listed_survivors() -> set[str]:
    """Mutant names listed (in backticks) in tests/mutation_survivors.md."""
    if not SURVIVORS.is_file():
        return set()
    return set(re.findall(r"`(dprec\.[^`]+__mutmut_\d+)`", SURVIVORS.read_text()))


def _report(scopes: list[str]) -> bool:
    codes = _results()
    listed = _listed_survivors()
    ok = True
    print(f"{'module':22} {'mutants':>8} {'killed':>8} {'timeouts':>9} {'survived':>9} "
          f"{'unchecked':>10} {'score':>7}")
    unlisted = []
    for scope in scopes:
        names = [n for n in codes if any(fnmatch.fnmatch(n, p) for p in SCOPES[scope])]
        killed = sum(codes[n] in KILLED for n in names)
        timeouts = sum(codes[n] in TIMEOUTS for n in names)
        unchecked = sum(codes[n] is None for n in names)
        survivors = sorted(n for n in names if codes[n] is not None and codes[n] not in KILLED)
        checked = len(names) - unchecked
        score = killed / checked if checked else 0.0
        print(f"{scope:22} {len(names):8d} {killed:8d} {timeouts:9d} {len(survivors):9d} "
              f"{unchecked:10d} {score:7.1%}")
        ok &= score >= TARGET and unchecked == 0
        unlisted += [n for n in survivors if n not in listed]
    if unlisted:
        ok = False
        listing = ROOT / "mutants" / "unexplained.txt"
        listing.write_text("\n".join(unlisted) + "\n")
        print(f"\n{len(unlisted)} survivor(s) not explained in {SURVIVORS.relative_to(ROOT)}, "
              f"listed in {listing.relative_to(ROOT)} (`mutmut show NAME` shows each change):")
        for name in unlisted[:20]:
            print(f"  {name}")
        if len(unlisted) > 20:
            print(f"  ... and {len(unlisted) - 20} more")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scope", choices=sorted(SCOPES), action="append",
                        help="module(s) to mutate (default: all)")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutants")
    parser.add_argument("--report", action="store_true", help="only report the last results")
    args = parser.parse_args(argv)
    scopes = args.scope or list(SCOPES)
    if not args.report:
        patterns = [p for scope in scopes for p in SCOPES[scope]]
        start = time.perf_counter()
        log = ROOT / "mutants" / "mutation.log"
        log.parent.mkdir(exist_ok=True)
        with log.open("w") as out:
            done = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children",
                                   str(args.max_children), *patterns], cwd=ROOT, stdout=out,
                                  stderr=subprocess.STDOUT)
        print(f"mutmut ran in {time.perf_counter() - start:.0f} s (log: {log})")
        if done.returncode:
            print(f"mutmut exited with {done.returncode}; see the log")
            return done.returncode
    return 0 if _report(scopes) else 1


if __name__ == "__main__":
    sys.exit(main())
