"""How much of gradient-boosted trees over the same features to blend into the ranker's logistic score.

The shipped score is linear in the ranker's features (``ranking_model``); trees can learn interactions the linear
model cannot (a heading match on the cover page, a cause question's MD&A prose at rank 12). This script fits
scikit-learn's ``HistGradientBoostingClassifier`` on the same dumps, labels and question weights as ``train-ranker``
and replays the pipeline's last steps with whole companies held out (``ranking_cv``'s folds, six dealings): the
logistic model alone (weight 0), the trees alone (1) and blends of their log-odds, in the same folds. The training
code is ``train-ranker``'s (``fit_model(trees=...)``).

    python benchmarks/ranking_trees.py --dumps dumps/base-dev.jsonl.gz,dumps/base-analyst.jsonl.gz,... \\
        --out benchmarks/results/ranking/trees.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from ranking_cv import line, load, study

from haystack_fin.core.retrieval.ranking_model import TREE_PARAMS, RankingModel
from haystack_fin.core.retrieval.ranking_replay import ReplayRecord
from haystack_fin.ranker_training import SHIPPED_REPLAY, fit_model

Scorer = Callable[[ReplayRecord], np.ndarray]


class Fits:
    """The blended model per training set, fitted once (trees weight 1) and re-weighted for every blend weight (the
    folds repeat per weight)."""

    def __init__(self) -> None:
        self.cache: dict[tuple[str, ...], RankingModel] = {}

    def blend(self, weight: float) -> Callable[[Sequence[ReplayRecord]], Scorer]:
        def fitted(train: Sequence[ReplayRecord]) -> Scorer:
            key = tuple(sorted(r.question.financebench_id for r in train))
            if key not in self.cache:
                self.cache[key] = fit_model(train, trees=1.0, term_pairs=0.0)
            full = self.cache[key]
            model = replace(full, trees=None, tree_weight=0.0) if weight == 0 else replace(full, tree_weight=weight)
            return lambda record: model.score(record.features)

        return fitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dumps", required=True, help="comma-separated dumps of one configuration")
    parser.add_argument("--weights", default="0,0.25,0.5,0.75,1", help="the trees' weights in the blend")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    _, records = load(f"base={args.dumps}")
    fits = Fits()
    out: dict[str, Any] = {"tree_params": dict(TREE_PARAMS), "blends": {}}
    for weight in (float(w) for w in args.weights.split(",")):
        label = f"trees weight {weight:g}"
        out["blends"][label] = study(records, fits.blend(weight), SHIPPED_REPLAY, 5)
        print(line(label, out["blends"][label]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
