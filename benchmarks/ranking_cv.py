"""Company-grouped cross-validation of the ranker's scoring and of the retrieval switches, on feature dumps.

A dump (``haystack-fin train-ranker --dump``) holds, per labelled question, every candidate the ranker was given with
its features. This script replays the pipeline's last steps on them (``core.retrieval.ranking_replay``) and reports
page_hit@5, evidence_complete@5 (questions needing 2+ roles) and MRR with whole companies held out:

- per configuration (a set of dumps made with one pipeline configuration: summary tree on or off, the candidate
  sources, ...): the learned model fitted on the other companies against the hand-set weights, in the same folds;
- each fallback signal's weight switched between learned and its hand-set ratio to dense (a hand-set weight stays
  only where that beats the learned one in the same folds; ``--hand-set`` names those kept);
- the replay switches (one page at most once, the graph's budget raise, the per-Item cut) under the learned model;
- pointwise fitting (every question weighing the same, or every candidate) against pairwise, and the
  regularization strength;
- the modality fallback (``--parts fallback``): per fold, its thresholds calibrated on the training companies
  (``haystack-fin calibrate``'s staged sweep, keeping page_hit@5 and evidence_complete@5 while cutting context
  words) and applied to the held-out ones, against the fallback off and against the thresholds in
  ``pipelines/query.yaml`` switched on, same folds and model (dumps written with the fallback's inputs);
- transfer across labelled sets (``--parts transfer``): each set scored by the model fitted on the other sets'
  questions of other companies, against the hand-set weights (the FinanceBench dev slice's labels are
  FinanceBench's, the other sets' ours: does a ranking learned on one labelling carry to another?);
- a learning curve (``--parts curve``): the same folds with each fold's model fitted on a share of its training
  companies (``--curve``), drawn at random: do more labelled companies still help?

    python benchmarks/ranking_cv.py --config base=dev.jsonl.gz,analyst.jsonl.gz,more.jsonl.gz \\
        --config no_summary=... --out benchmarks/results/ranking/cv.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from haystack_fin.components.modality_fallback import ModalityThresholdFallback
from haystack_fin.core.retrieval.modality_fallback import FallbackConfig, staged_sweep, threshold_grid
from haystack_fin.core.retrieval.ranking_model import FEATURES, HAND_SET_FEATURES
from haystack_fin.core.retrieval.ranking_replay import (
    ReplayRecord,
    ReplaySettings,
    Scorer,
    cross_validate,
    grouped_folds,
    read_dump,
    replay_metrics,
)
from haystack_fin.ranker_training import (
    DEFAULT_HAND_SET,
    DEFAULT_TERM_PAIR_C,
    DEFAULT_TERM_PAIRS,
    DEFAULT_TREE_WEIGHT,
    DEFAULT_TREE_WEIGHTING,
    DEFAULT_WEIGHTING,
    WEIGHTINGS,
    hand_set_signals,
    model_fitter,
)

Fit = Callable[[Sequence[ReplayRecord]], Scorer]


def load(spec: str) -> tuple[str, list[ReplayRecord]]:
    name, _, files = spec.partition("=")
    return name, [r for f in files.split(",") if f for r in read_dump(f)]


# The model fitted on the training folds: ``train-ranker``'s fit as a scorer of records (``model_fitter``'s arguments:
# the hand-set signals, the trees' weight and weighting, the term pairs' weight and regularization).
learned_fit = model_fitter


# The studies main() can run: each configuration's learned score against the hand-set one, each signal switched
# between learned and hand-set, the fit's kind and regularization (and the fallback score among the features), the
# replay switches, the modality fallback calibrated on the training companies, each labelled set scored from the
# others, the model fitted on fewer companies.
PARTS: tuple[str, ...] = ("configs", "hybrids", "sweep", "replay", "fallback", "transfer", "curve")
SEEDS: tuple[int | None, ...] = (None, 1, 2, 3, 4, 5)  # GroupKFold's balanced folds, then 5 random dealings


def study(records: Sequence[ReplayRecord], fit: Fit, settings: ReplaySettings, folds: int) -> dict[str, Any]:
    """The fitted scorer against the hand-set weights: the balanced folds in detail, and the mean over ``SEEDS``
    (repeated dealings of companies to folds; a choice should not rest on one dealing)."""
    hand = {"hand-set": lambda r: r.hand_scores}
    runs = [cross_validate(records, fit, hand, settings, folds, seed=seed) for seed in SEEDS]
    first = runs[0]
    out: dict[str, Any] = {"questions": len(records)}
    for name in ("learned", "hand-set"):
        out[name] = {
            "mean_page_hit@5": round(float(np.mean([r["overall"][name]["page_hit@5"] for r in runs])), 4),
            "mean_evidence_complete@5_2plus": round(
                float(np.mean([r["overall"][name]["evidence_complete@5_2plus"] for r in runs])), 4
            ),
            "mean_by_set": {
                s: round(float(np.mean([r["by_set"][s][name]["page_hit@5"] for r in runs])), 4) for s in first["by_set"]
            },
            "balanced_folds": {
                "overall": first["overall"][name],
                "by_set": {s: m[name] for s, m in first["by_set"].items()},
                "by_type": {t: m[name] for t, m in first["by_type"].items()},
                "folds": [round(f[name]["page_hit@5"], 4) for f in first["folds"]],
            },
        }
    out["dealings"] = [
        {
            "seed": seed,
            **{
                name: {m: round(r["overall"][name][m], 4) for m in ("page_hit@5", "evidence_complete@5_2plus")}
                for name in ("learned", "hand-set")
            },
        }
        for seed, r in zip(SEEDS, runs, strict=True)
    ]
    out["fold_companies"] = [f["companies"] for f in first["folds"]]
    out["fold_questions"] = [f["n"] for f in first["folds"]]
    return out


def on_fewer_companies(fit: Fit, share: float) -> Fit:
    """``fit`` on a share of the training records' companies (at least two), drawn at random, the same draw for the
    same companies and share."""

    def fitted(train: Sequence[ReplayRecord]) -> Scorer:
        companies = sorted({r.company for r in train})
        draw = random.Random(f"{share}:{'|'.join(companies)}")
        kept = set(draw.sample(companies, min(len(companies), max(2, round(share * len(companies))))))
        return fit([r for r in train if r.company in kept])

    return fitted


def transfer_study(records: Sequence[ReplayRecord], fit: Fit, settings: ReplaySettings) -> dict[str, Any]:
    """Per labelled set: the model fitted on the other sets' questions of companies the set does not hold (the dev
    slice and the analyst set, over the same filings, never train each other), against the hand-set weights on the
    set's questions."""
    out: dict[str, Any] = {}
    for held in sorted({r.source_set for r in records}):
        test = [r for r in records if r.source_set == held]
        companies = {r.company for r in test}
        train = [r for r in records if r.source_set != held and r.company not in companies]
        if not train:
            continue
        scorer = fit(train)
        out[held] = {
            "trained_on": {
                "sets": sorted({r.source_set for r in train}),
                "companies": len({r.company for r in train}),
                "questions": len(train),
            },
            "learned": replay_metrics(test, [scorer(r) for r in test], settings),
            "hand-set": replay_metrics(test, [r.hand_scores.tolist() for r in test], settings),
        }
    return out


# What the fallback study keeps on the training companies while it cuts words (calibrate keeps page_hit@5 and
# evidence_recall_bigram@5, which needs passage text a dump does not hold).
FALLBACK_KEPT = ("page_hit@5", "evidence_complete@5_2plus")
FALLBACK_METRICS = ("page_hit@5", "evidence_complete@5_2plus", "context_words@5")


def _pooled(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Metrics over the union of disjoint question sets from each set's means and counts."""
    n = sum(p["n"] for p in parts)
    n2 = sum(p["n_2plus"] for p in parts)
    return {
        "page_hit@5": sum(p["page_hit@5"] * p["n"] for p in parts) / n,
        "evidence_complete@5_2plus": sum(p["evidence_complete@5_2plus"] * p["n_2plus"] for p in parts) / n2
        if n2
        else 0.0,
        "context_words@5": sum(p["context_words@5"] * p["n"] for p in parts) / n,
    }


def calibrate_on(
    records: Sequence[ReplayRecord],
    scores: Sequence[Sequence[float]],
    settings: ReplaySettings,
    base: FallbackConfig,
    grids: dict[str, Sequence[float]],
) -> tuple[dict[str, float], Mapping[str, Any] | None]:
    """``haystack-fin calibrate``'s staged sweep on replayed rankings: the metrics with the fallback off and the
    chosen row (None: no threshold keeps page_hit@5 and evidence_complete@5 while cutting words)."""

    def row(stage: str, thresholds: Any) -> dict[str, Any]:
        config = replace(base, thresholds=dict(thresholds))
        metrics = replay_metrics(records, scores, replace(settings, fallback=config))
        return {"stage": stage, "thresholds": dict(thresholds), "overall": metrics}

    baseline = replay_metrics(records, scores, settings)
    _, chosen = staged_sweep(row, grids, baseline, kept=FALLBACK_KEPT)
    return baseline, chosen


def fallback_study(
    records: Sequence[ReplayRecord],
    fit: Fit,
    settings: ReplaySettings,
    folds: int,
    base: FallbackConfig,
    grid: Sequence[float],
) -> dict[str, Any]:
    """The modality fallback decided on held-out companies: per fold, the thresholds calibrated on the training
    companies (their rankings by the fold's model) and applied to the held-out ones; against the fallback off and
    ``base``'s thresholds (the YAML's) switched on. Mean over ``SEEDS``, per dealing, and each fold's choice."""
    groups = [r.company for r in records]
    grids = {"text": grid, "table": grid, "image": grid}
    variants = ("off", "calibrated", "yaml")
    dealings: list[dict[str, Any]] = []
    for seed in SEEDS:
        parts: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
        chosen_rows: list[dict[str, Any]] = []
        for train, test in grouped_folds(groups, folds, seed):
            train_records = [records[i] for i in train]
            test_records = [records[i] for i in test]
            scorer = fit(train_records)
            train_scores = [scorer(r) for r in train_records]
            test_scores = [scorer(r) for r in test_records]
            baseline, chosen = calibrate_on(train_records, train_scores, settings, base, grids)
            calibrated = None if chosen is None else replace(base, thresholds=dict(chosen["thresholds"]))
            chosen_rows.append(
                {
                    "companies": sorted({r.company for r in test_records}),
                    "thresholds": None if chosen is None else chosen["thresholds"],
                    "training": {m: round(baseline[m], 4) for m in FALLBACK_METRICS},
                    "training_chosen": None
                    if chosen is None
                    else {m: round(chosen["overall"][m], 4) for m in FALLBACK_METRICS},
                }
            )
            for variant, config in (("off", None), ("calibrated", calibrated), ("yaml", base)):
                parts[variant].append(replay_metrics(test_records, test_scores, replace(settings, fallback=config)))
        dealings.append(
            {
                "seed": seed,
                **{v: {m: round(x, 4) for m, x in _pooled(parts[v]).items()} for v in variants},
                "folds": chosen_rows,
            }
        )
    return {
        "questions": len(records),
        "grid": list(grid),
        "kept": list(FALLBACK_KEPT),
        "min_counts": dict(base.min_counts),
        "coverage": base.coverage,
        "on_insufficient": base.on_insufficient,
        "yaml_thresholds": dict(base.thresholds),
        "mean": {
            v: {m: round(float(np.mean([d[v][m] for d in dealings])), 4) for m in FALLBACK_METRICS} for v in variants
        },
        "dealings": dealings,
    }


def line(label: str, result: dict[str, Any]) -> str:
    learned, hand = result["learned"], result["hand-set"]
    return (
        f"{label:36s} learned {learned['mean_page_hit@5']:.4f} (ec2+ {learned['mean_evidence_complete@5_2plus']:.3f})"
        f"  hand-set {hand['mean_page_hit@5']:.4f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", action="append", required=True, metavar="NAME=DUMP[,DUMP...]")
    parser.add_argument("--base", default=None, help="the configuration the hybrids and replay switches run on")
    parser.add_argument("--c", type=float, default=0.1)
    parser.add_argument("--fit", default="pointwise", choices=["pointwise", "pairwise"])
    parser.add_argument("--weighting", default=DEFAULT_WEIGHTING, choices=WEIGHTINGS)
    parser.add_argument("--tree-weighting", default=DEFAULT_TREE_WEIGHTING, choices=WEIGHTINGS)
    parser.add_argument(
        "--hand-set", default=",".join(DEFAULT_HAND_SET), help="signals kept at their hand-set ratio to dense"
    )
    parser.add_argument(
        "--trees", type=float, default=DEFAULT_TREE_WEIGHT, help="boosted trees' weight in the score (0: logistic only)"
    )
    parser.add_argument(
        "--term-pairs", type=float, default=DEFAULT_TERM_PAIRS, help="the term-pair model's weight (0: none)"
    )
    parser.add_argument("--term-pair-c", type=float, default=DEFAULT_TERM_PAIR_C, help="its regularization")
    parser.add_argument("--no-per-item-cut", action="store_true", help="replay without the ranker's per-Item cut")
    parser.add_argument("--distinct-pages", action="store_true", help="replay with one page at most once")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--sweep-c", default="0.01,0.1,1,10", help="comma-separated regularization strengths the sweep study tries"
    )
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated studies to run, of {','.join(PARTS)} (default: all)",
    )
    parser.add_argument(
        "--fallback-yaml",
        default="pipelines/query.yaml",
        help="the query YAML whose fallback settings (min counts, coverage, thresholds) the fallback study starts from",
    )
    parser.add_argument(
        "--fallback-grid", default="0.2:0.9:0.05", help="START:STOP:STEP of the cosine thresholds the study sweeps"
    )
    parser.add_argument(
        "--curve", default="0.25,0.5,0.75", help="comma-separated shares of the training companies the curve fits on"
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    parts = {p for p in args.parts.split(",") if p}
    if parts - set(PARTS):
        parser.error(f"unknown part(s) {sorted(parts - set(PARTS))}; known: {', '.join(PARTS)}")

    try:
        sweep_c = [float(c) for c in args.sweep_c.split(",") if c]
    except ValueError:
        parser.error(f"--sweep-c takes comma-separated numbers, not {args.sweep_c!r}")
    try:
        shares = [float(x) for x in args.curve.split(",") if x]
    except ValueError:
        parser.error(f"--curve takes comma-separated shares, not {args.curve!r}")
    if any(not 0 < x <= 1 for x in shares):
        parser.error(f"--curve shares lie in (0, 1], not {args.curve!r}")
    tw = args.tree_weighting
    settings = ReplaySettings(stage1=not args.no_per_item_cut, distinct_pages=args.distinct_pages)
    hand_set = hand_set_signals(args.hand_set)
    configs = dict(load(spec) for spec in args.config)
    base_name = args.base or next(iter(configs))
    out: dict[str, Any] = {
        "features": list(FEATURES),
        "c": args.c,
        "fit": args.fit,
        "weighting": args.weighting,
        "hand_set": hand_set,
        "trees": args.trees,
        "tree_weighting": tw,
        "term_pairs": args.term_pairs,
        "term_pair_c": args.term_pair_c,
        "folds": args.folds,
        "seeds": list(SEEDS),
        "settings": {"per_item_cut": settings.stage1, "distinct_pages": settings.distinct_pages},
        "configs": {},
    }
    pairs = {"term_pairs": args.term_pairs, "term_pair_c": args.term_pair_c}
    learned = learned_fit(
        args.c, args.fit, weighting=args.weighting, hand_set=hand_set, trees=args.trees, tree_weighting=tw, **pairs
    )
    for name, records in configs.items() if "configs" in parts else ():
        out["configs"][name] = study(records, learned, settings, args.folds)
        print(line(f"config {name}", out["configs"][name]), flush=True)

    records = configs[base_name]
    out["hybrids"] = {}
    # each signal switched between learned and hand-set, the others as given
    for signal in HAND_SET_FEATURES if "hybrids" in parts else ():
        toggled = [s for s in hand_set if s != signal] if signal in hand_set else [*hand_set, signal]
        label = f"{'learned' if signal in hand_set else 'hand-set'} {signal}/dense ratio"
        out["hybrids"][label] = study(
            records,
            learned_fit(
                args.c,
                args.fit,
                weighting=args.weighting,
                hand_set=toggled,
                trees=args.trees,
                tree_weighting=tw,
                **pairs,
            ),
            settings,
            args.folds,
        )
        print(line(label, out["hybrids"][label]), flush=True)
    out["model_sweep"] = {}
    sweeps = (*(("pointwise", w) for w in WEIGHTINGS), ("pairwise", DEFAULT_WEIGHTING))
    for fit, weighting in sweeps if "sweep" in parts else ():
        for c in sweep_c:
            label = f"{fit} C={c}" if fit == "pairwise" else f"{fit} by {weighting} C={c}"
            fitted = learned_fit(
                c, fit, weighting=weighting, hand_set=hand_set, trees=args.trees, tree_weighting=tw, **pairs
            )
            out["model_sweep"][label] = study(records, fitted, settings, args.folds)
            print(line(label, out["model_sweep"][label]), flush=True)
    if "sweep" in parts:
        no_stacking = tuple(f for f in FEATURES if f != "fallback_score")
        out["without_fallback_score"] = study(
            records,
            learned_fit(args.c, args.fit, no_stacking, args.weighting, hand_set, args.trees, tw, **pairs),
            settings,
            args.folds,
        )
        print(line("without fallback_score", out["without_fallback_score"]), flush=True)
    out["replay_switches"] = {}
    replay_switches = (
        ("distinct_pages", replace(settings, distinct_pages=not settings.distinct_pages)),
        ("per_item_cut", replace(settings, stage1=not settings.stage1)),
        ("graph_budget_raise (with the per-Item cut)", replace(settings, stage1=True, graph_budget_raise=False)),
    )
    for label, switched in replay_switches if "replay" in parts else ():
        out["replay_switches"][label] = study(records, learned, switched, args.folds)
        print(line(f"switched: {label}", out["replay_switches"][label]), flush=True)
    if "fallback" in parts:
        node = yaml.safe_load(Path(args.fallback_yaml).read_text())["components"]["fallback"]
        base = ModalityThresholdFallback.from_dict(node).config
        start, stop, step = (float(x) for x in args.fallback_grid.split(":"))
        out["fallback"] = fallback_study(
            records, learned, settings, args.folds, base, threshold_grid(start, stop, step)
        )
        for variant, metrics in out["fallback"]["mean"].items():
            print(f"fallback {variant:10s} " + "  ".join(f"{m} {v:.4f}" for m, v in metrics.items()), flush=True)
    if "transfer" in parts:
        out["transfer"] = transfer_study(records, learned, settings)
        for held, row in out["transfer"].items():
            print(
                f"transfer to {held:10s} from {'+'.join(row['trained_on']['sets'])}: "
                + "  ".join(
                    f"{name} {row[name]['page_hit@5']:.4f} (ec2+ {row[name]['evidence_complete@5_2plus']:.3f})"
                    for name in ("learned", "hand-set")
                ),
                flush=True,
            )
    out["curve"] = {}
    for share in shares if "curve" in parts else ():
        out["curve"][str(share)] = study(records, on_fewer_companies(learned, share), settings, args.folds)
        print(line(f"trained on {share:.0%} of the companies", out["curve"][str(share)]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
