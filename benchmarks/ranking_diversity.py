"""Does spreading the top passages over places, or covering what the question names, complete multi-page evidence?

Replays the shipped ranking (learned score, one cut across Items, one page at most once) on feature dumps with whole
companies held out (``ranking_cv``'s folds and dealings), then with two kinds of selection:

* spreading: passages are taken greedily by ``score * gamma ** (passages already shown from the same place)``
  (Item, modality, candidate source);
* covering: each evidence place the question's analysis names (every primary statement it names or implies, the
  MD&A prose a cause is explained in, Item 1 for the business) that has a candidate among the ranker's top k gets
  a passage: when the slots left are as few as the places not yet shown, the best candidate of such a place is
  taken instead of the next by score.

Reports page_hit@5 and evidence_complete@5 over questions needing 2+ evidence roles, and where the evidence roles
the top 5 misses lie.

    python benchmarks/ranking_diversity.py --dumps dumps/base-dev.jsonl.gz,dumps/base-analyst.jsonl.gz,... \\
        --out benchmarks/results/ranking/diversity.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from ranking_cv import SEEDS, learned_fit, load

from haystack_fin.core.evaluation import Passage, score_question
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.retrieval.ranking_model import CandidateFacts, item_role
from haystack_fin.core.retrieval.ranking_replay import (
    PassageCut,
    ReplayRecord,
    ReplaySettings,
    best_first,
    grouped_folds,
    replay,
)
from haystack_fin.core.statements import statements_in_query

Place = Callable[[ReplayRecord, int], Any]
PLACES: dict[str, Place] = {
    "item": lambda r, i: r.facts[i].item,
    "item+modality": lambda r, i: (r.facts[i].item, r.facts[i].is_table),
    "modality": lambda r, i: r.facts[i].is_table,
    "source": lambda r, i: r.facts[i].source,
}


def replay_spread(
    record: ReplayRecord, scores: Sequence[float], settings: ReplaySettings, gamma: float, place: Place
) -> list[Passage]:
    """``ranking_replay.replay`` without the per-Item cut, taking passages greedily by the place-penalized score."""
    order = best_first(scores, settings.ranker_top_k)
    rank = {i: n for n, i in enumerate(order)}
    remaining = list(order)
    cut = PassageCut(record, settings)
    counts: Counter[Any] = Counter()
    while remaining and not cut.full():
        best = max(remaining, key=lambda i: (scores[i] * gamma ** counts[place(record, i)], -rank[i]))
        remaining.remove(best)
        if cut.offer(best):
            counts[place(record, best)] += 1
    return cut.passages_out()


Need = Callable[[CandidateFacts], bool]


def question_needs(record: ReplayRecord, statements: dict[str, float], what: str) -> list[Need]:
    """The evidence places the question names (``what``: "statements", "statements+cause", "all")."""
    needs: list[Need] = [lambda f, k=kind: f.statement == k for kind in sorted(statements)]
    if what != "statements" and record.flags.asks_cause:
        needs.append(lambda f: not (f.is_table or f.is_image) and item_role(f.item) == "mdna")
    if what == "all" and record.flags.asks_business:
        needs.append(lambda f: item_role(f.item) == "business")
    return needs


def replay_cover(
    record: ReplayRecord, scores: Sequence[float], settings: ReplaySettings, needs: Sequence[Need], min_needs: int
) -> list[Passage]:
    """``ranking_replay.replay`` without the per-Item cut, reserving the last slots for needs not yet shown."""
    order = best_first(scores, settings.ranker_top_k)
    open_needs = [n for n in needs if any(n(record.facts[i]) for i in order)]
    if len(open_needs) < min_needs:
        return replay(record, scores, settings)
    remaining = list(order)
    cut = PassageCut(record, settings)
    while remaining and not cut.full():
        pick = remaining[0]
        if len(open_needs) >= settings.k - len(cut.passages):
            pick = next((i for i in remaining if any(n(record.facts[i]) for n in open_needs)), pick)
        remaining.remove(pick)
        if cut.offer(pick):
            open_needs = [n for n in open_needs if not n(record.facts[pick])]
    return cut.passages_out()


def held_out_scores(records: Sequence[ReplayRecord], seed: int | None) -> list[np.ndarray]:
    fit = learned_fit(0.1, "pointwise")
    out: list[np.ndarray] = [np.zeros(0)] * len(records)
    for train, test in grouped_folds([r.company for r in records], 5, seed):
        scorer = fit([records[i] for i in train])
        for i in test:
            out[i] = scorer(records[i])
    return out


def metrics(records: Sequence[ReplayRecord], passages: Sequence[list[Passage]]) -> dict[str, float]:
    rows = [score_question(r.question, p, (5,)) for r, p in zip(records, passages, strict=True)]
    multi = [row for r, row in zip(records, rows, strict=True) if len(r.question.required_pages()) >= 2]
    return {
        "page_hit@5": round(float(np.mean([row["page_hit@5"] for row in rows])), 4),
        "evidence_complete@5_2plus": round(float(np.mean([row["evidence_complete@5"] for row in multi])), 4),
    }


def missed_roles(records: Sequence[ReplayRecord], scores: Sequence[np.ndarray], settings: ReplaySettings) -> dict:
    """For each evidence role the top 5 misses (questions with 2+ roles): its distance in pages to the nearest page
    shown, and the rank of the first candidate holding one of its pages."""
    distance: Counter[str] = Counter()
    rank: Counter[str] = Counter()
    for record, s in zip(records, scores, strict=True):
        roles = record.question.required_pages()
        if len(roles) < 2:
            continue
        shown = {p for passage in replay(record, s, settings)[:5] for p in passage.pages}
        order = sorted(range(len(s)), key=lambda i: -s[i])
        for role in (r for r in roles if not r & shown):
            d = min((abs(p - q) for p in role for q in shown), default=99)
            distance[str(d) if d <= 3 else "4+"] += 1
            first = next((n for n, i in enumerate(order) if set(record.candidates[i].pages) & role), -1)
            rank["not a candidate" if first < 0 else "1-10" if first < 10 else "11-20" if first < 20 else "21+"] += 1
    return {"page_distance": dict(sorted(distance.items())), "first_candidate_rank": dict(rank)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dumps", required=True, help="comma-separated feature dumps (train-ranker --dump)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--family", choices=("spread", "cover", "both"), default="both")
    args = parser.parse_args()
    _, records = load(f"base={args.dumps}")
    settings = ReplaySettings(stage1=False, distinct_pages=True)
    runs = {seed: held_out_scores(records, seed) for seed in SEEDS}
    out: dict[str, Any] = {"questions": len(records), "seeds": list(SEEDS), "results": {}}

    def mean_over_seeds(passages_of: Callable[[ReplayRecord, np.ndarray], list[Passage]]) -> dict[str, float]:
        per_seed = [metrics(records, [passages_of(r, s) for r, s in zip(records, runs[seed], strict=True)])
                    for seed in SEEDS]  # fmt: skip
        return {k: round(float(np.mean([m[k] for m in per_seed])), 4) for k in per_seed[0]}

    out["results"]["shipped"] = mean_over_seeds(lambda r, s: replay(r, s, settings))
    print("shipped", out["results"]["shipped"], flush=True)
    for name, place in PLACES.items() if args.family != "cover" else ():
        for gamma in (0.9, 0.8, 0.7, 0.5):
            label = f"{name} gamma={gamma}"
            out["results"][label] = mean_over_seeds(lambda r, s, g=gamma, p=place: replay_spread(r, s, settings, g, p))
            print(label, out["results"][label], flush=True)
    lexicon = Lexicon.load_default()
    statements = [statements_in_query(r.question.question, lexicon) for r in records]
    for what in ("statements", "statements+cause", "all") if args.family != "spread" else ():
        for min_weight in (1.0, 0.5):
            for min_needs in (1, 2):
                label = f"cover {what} weight>={min_weight} needs>={min_needs}"
                needs = {id(r): question_needs(r, {k: w for k, w in st.items() if w >= min_weight}, what)
                         for r, st in zip(records, statements, strict=True)}  # fmt: skip
                out["results"][label] = mean_over_seeds(
                    lambda r, s, n=needs, m=min_needs: replay_cover(r, s, settings, n[id(r)], m)
                )
                print(label, out["results"][label], flush=True)
    out["missed_roles_balanced_folds"] = missed_roles(records, runs[None], settings)
    print(out["missed_roles_balanced_folds"])
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
