"""Company-grouped cross-validation of the ranker's scoring and of the retrieval switches, on feature dumps.

A dump (``haystack-fin train-ranker --dump``) holds, per labelled question, every candidate the ranker was given with
its features. This script replays the pipeline's last steps on them (``core.retrieval.ranking_replay``) and reports
page_hit@5, evidence_complete@5 (questions needing 2+ roles) and MRR with whole companies held out:

- per configuration (a set of dumps made with one pipeline configuration: summary tree on or off, the candidate
  sources, ...): the learned model fitted on the other companies against the hand-set weights, in the same folds;
- the learned model with one signal's weight put back to its hand-set value (a hand-set weight stays only where that
  beats the learned one in the same folds);
- the replay switches (one page at most once, the graph's budget raise, the per-Item cut) under the learned model;
- pointwise against pairwise fitting and the regularization strength.

    python benchmarks/ranking_cv.py --config base=dev.jsonl.gz,analyst.jsonl.gz,more.jsonl.gz \\
        --config no_summary=... --out benchmarks/results/ranking/cv.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from haystack_fin.core.retrieval.passage_scoring import FallbackWeights
from haystack_fin.core.retrieval.ranking_model import FEATURES
from haystack_fin.core.retrieval.ranking_replay import ReplayRecord, ReplaySettings, cross_validate, read_dump
from haystack_fin.ranker_training import fit_model

# The hand-set fusion's signals (besides dense) and the feature that carries each.
HAND_SIGNALS = {
    "lexical": "lexical",
    "table": "table_prior",
    "statement": "statement_prior",
    "section": "section_prior",
    "consolidated": "consolidated",
}


def load(spec: str) -> tuple[str, list[ReplayRecord]]:
    name, _, files = spec.partition("=")
    return name, [r for f in files.split(",") if f for r in read_dump(f)]


Fit = Callable[[Sequence[ReplayRecord]], Callable[[ReplayRecord], np.ndarray]]


def learned_fit(c: float, fit: str, features: Sequence[str] = FEATURES) -> Fit:
    def fitted(train: Sequence[ReplayRecord]) -> Callable[[ReplayRecord], np.ndarray]:
        model = fit_model(train, c, fit=fit, features=features)
        return lambda r: model.score(r.features)

    return fitted


def hybrid_fit(c: float, fit: str, signal: str) -> Fit:
    """The learned model with ``signal`` held at its hand-set weight relative to dense: the two features are merged
    into one, ``dense + (w_signal / w_dense) * signal``, which gets one learned coefficient."""
    hand = FallbackWeights()
    ratio = getattr(hand, signal) / hand.dense
    column = FEATURES.index(HAND_SIGNALS[signal])
    dense = FEATURES.index("dense")
    features = tuple(f for f in FEATURES if f != HAND_SIGNALS[signal])

    def merged(record: ReplayRecord) -> ReplayRecord:
        copy = replace(record)
        copy.features = record.features.copy()
        copy.features[:, dense] = record.features[:, dense] + ratio * record.features[:, column]
        return copy

    def fitted(train: Sequence[ReplayRecord]) -> Callable[[ReplayRecord], np.ndarray]:
        model = fit_model([merged(r) for r in train], c, fit=fit, features=features)
        return lambda r: model.score(merged(r).features)

    return fitted


def short(cv: dict[str, Any], name: str = "learned") -> dict[str, Any]:
    """Overall, per set and per fold page_hit@5 of one scorer."""
    return {
        "overall": cv["overall"][name],
        "by_set": {s: m[name] for s, m in cv["by_set"].items()},
        "by_type": {t: m[name] for t, m in cv["by_type"].items()},
        "folds": [round(f[name]["page_hit@5"], 4) for f in cv["folds"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", required=True, metavar="NAME=DUMP[,DUMP...]")
    parser.add_argument("--base", default=None, help="the configuration the hybrids and replay switches run on")
    parser.add_argument("--c", type=float, default=1.0)
    parser.add_argument("--fit", default="pointwise", choices=["pointwise", "pairwise"])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    configs = dict(load(spec) for spec in args.config)
    base_name = args.base or next(iter(configs))
    out: dict[str, Any] = {
        "features": list(FEATURES),
        "c": args.c,
        "fit": args.fit,
        "folds": args.folds,
        "configs": {},
    }
    for name, records in configs.items():
        cv = cross_validate(
            records, learned_fit(args.c, args.fit), {"hand-set": lambda r: r.hand_scores}, ReplaySettings(), args.folds
        )
        out["configs"][name] = {
            "questions": len(records),
            "candidates": int(sum(len(r.candidates) for r in records)),
            "fold_companies": [f["companies"] for f in cv["folds"]],
            "fold_questions": [f["n"] for f in cv["folds"]],
            "learned": short(cv),
            "hand-set": short(cv, "hand-set"),
        }
        print(
            f"{name}: learned {cv['overall']['learned']['page_hit@5']:.3f} "
            f"hand-set {cv['overall']['hand-set']['page_hit@5']:.3f} ({len(records)} questions)",
            flush=True,
        )

    records = configs[base_name]
    hand = {"hand-set": lambda r: r.hand_scores}
    out["hybrids"] = {}
    for signal in HAND_SIGNALS:
        cv = cross_validate(records, hybrid_fit(args.c, args.fit, signal), hand, ReplaySettings(), args.folds)
        out["hybrids"][signal] = short(cv)
        print(f"hand-set {signal} weight in the learned model: {cv['overall']['learned']['page_hit@5']:.3f}")
    out["model_sweep"] = {}
    for fit in ("pointwise", "pairwise"):
        for c in (0.01, 0.1, 1.0, 10.0):
            cv = cross_validate(records, learned_fit(c, fit), hand, ReplaySettings(), args.folds)
            out["model_sweep"][f"{fit} C={c}"] = short(cv)
            print(f"{fit} C={c}: {cv['overall']['learned']['page_hit@5']:.3f}")
    no_stacking = tuple(f for f in FEATURES if f != "fallback_score")
    cv = cross_validate(records, learned_fit(args.c, args.fit, no_stacking), hand, ReplaySettings(), args.folds)
    out["without_fallback_score"] = short(cv)
    print(f"without the hand-set fusion as a feature: {cv['overall']['learned']['page_hit@5']:.3f}")
    out["replay_switches"] = {}
    for label, settings in (
        ("distinct_pages", ReplaySettings(distinct_pages=True)),
        ("no_graph_budget_raise", ReplaySettings(graph_budget_raise=False)),
        ("no_stage1_cut", ReplaySettings(stage1=False)),
    ):
        cv = cross_validate(records, learned_fit(args.c, args.fit), hand, settings, args.folds)
        out["replay_switches"][label] = {"learned": short(cv), "hand-set": short(cv, "hand-set")}
        print(
            f"{label}: learned {cv['overall']['learned']['page_hit@5']:.3f} "
            f"hand-set {cv['overall']['hand-set']['page_hit@5']:.3f}"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
