"""Does spreading the top passages over places, or covering what the question names, complete multi-page evidence?

Replays the shipped ranking (learned score, one cut across Items, one page at most once) on feature dumps with whole
companies held out (``ranking_cv``'s folds and dealings), then with three kinds of selection:

* spreading: passages are taken greedily by ``score * gamma ** (passages already shown from the same place)``
  (Item, modality, candidate source);
* covering: each evidence place the question's analysis names (every primary statement it names or implies, the
  MD&A prose a cause is explained in, Item 1 for the business) that has a candidate among the ranker's top k gets
  a passage: when the slots left are as few as the places not yet shown, the best candidate of such a place is
  taken instead of the next by score;
* learned: a second logistic model picks each next passage from the ranker's top k given the passages already
  shown (the candidate's log-odds and its gap to the best shown, whether its Item, modality, statement or Item role
  is already shown, its distance in pages to a shown page, an MD&A paragraph once a statement is shown), fitted on
  the training companies to find a candidate holding a page of an evidence role not yet shown.

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
from sklearn.linear_model import LogisticRegression

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
TOP = 5  # the passages the learned selection picks (the metrics' k); the rest follow the ranker's order
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


def shown_context(record: ReplayRecord, logits: np.ndarray, i: int, cut: PassageCut, shown: list[int]) -> list[float]:
    """Candidate ``i``'s features given the passages already shown (``shown``: their candidate indices)."""
    fact = record.facts[i]
    before = [record.facts[j] for j in shown]
    n = len(shown)
    shown_pages = {p for passage in cut.passages for p in passage.pages}
    distance = min((abs(p - q) for p in record.candidates[i].pages for q in shown_pages), default=99)
    text = not (fact.is_table or fact.is_image)
    same_item = sum(1 for f in before if f.item == fact.item)
    tables = sum(1 for f in before if f.is_table)
    statement_shown = any(f.statement for f in before)
    mdna_text = text and item_role(fact.item) == "mdna"
    return [
        float(logits[i]),
        float(logits[i] - (max(logits[j] for j in shown) if shown else logits[i])),
        float(n),
        same_item / max(n, 1),
        float(n > 0 and same_item == 0),
        float(fact.is_table) * tables / max(n, 1),
        float(text) * (n - tables) / max(n, 1),
        float(fact.statement is not None and any(f.statement == fact.statement for f in before)),
        float(distance <= 1),
        float(1 < distance <= 3),
        float(mdna_text and statement_shown),
        float(mdna_text and statement_shown and record.flags.asks_cause),
        float(fact.statement is not None and n > 0 and not statement_shown),
        float(any(item_role(f.item) == item_role(fact.item) for f in before)),
    ]


def _logits(scores: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(scores, dtype=np.float64), 1e-9, 1 - 1e-9)
    return np.log(p / (1 - p))


def conditional_rows(
    record: ReplayRecord, scores: np.ndarray, settings: ReplaySettings
) -> tuple[list[list[float]], list[int]]:
    """Training rows: the shipped order's states (the first j passages shown, j < ``TOP``); per state every candidate
    left among the top k, labelled 1 when it holds a page of an evidence role not yet shown."""
    logits = _logits(scores)
    roles = record.question.required_pages()
    remaining = best_first(list(scores), settings.ranker_top_k)
    cut = PassageCut(record, settings)
    shown: list[int] = []
    rows: list[list[float]] = []
    labels: list[int] = []
    while remaining and len(cut.passages) < TOP:
        covered = {p for passage in cut.passages for p in passage.pages}
        open_pages = {p for role in roles if not role & covered for p in role}
        for i in remaining:
            if record.candidates[i].chunk_id not in cut.covered:
                rows.append(shown_context(record, logits, i, cut, shown))
                labels.append(int(bool(open_pages & set(record.candidates[i].pages))))
        pick = remaining.pop(0)
        if cut.offer(pick):
            shown.append(pick)
    return rows, labels


def replay_conditional(
    record: ReplayRecord, scores: np.ndarray, settings: ReplaySettings, model: LogisticRegression
) -> list[Passage]:
    """``ranking_replay.replay`` without the per-Item cut, each of the first ``TOP`` passages picked by ``model``."""
    logits = _logits(scores)
    remaining = best_first(list(scores), settings.ranker_top_k)
    cut = PassageCut(record, settings)
    shown: list[int] = []
    while remaining and not cut.full():
        open_ = [i for i in remaining if record.candidates[i].chunk_id not in cut.covered]
        if not open_:
            break
        pick = open_[0]
        if len(cut.passages) < TOP:
            rows = np.array([shown_context(record, logits, i, cut, shown) for i in open_])
            pick = open_[int(np.argmax(model.decision_function(rows)))]
        remaining.remove(pick)
        if cut.offer(pick):
            shown.append(pick)
    return cut.passages_out()


def learned_selection(records: Sequence[ReplayRecord], settings: ReplaySettings) -> dict[str, dict[str, float]]:
    """The shipped order against the learned selection, both held out (the ranking model and the selection model
    fitted per fold on the other companies), mean over ``SEEDS``."""
    fit = learned_fit(0.1, "pointwise")
    per_seed: dict[str, list[dict[str, float]]] = {"shipped": [], "learned selection": []}
    for seed in SEEDS:
        shipped: list[list[Passage]] = [[] for _ in records]
        chosen: list[list[Passage]] = [[] for _ in records]
        for train, test in grouped_folds([r.company for r in records], 5, seed):
            scorer = fit([records[i] for i in train])
            rows: list[list[float]] = []
            labels: list[int] = []
            for i in train:
                if records[i].candidates:
                    more_rows, more_labels = conditional_rows(records[i], scorer(records[i]), settings)
                    rows += more_rows
                    labels += more_labels
            model = LogisticRegression(C=1.0, max_iter=3000).fit(np.array(rows), np.array(labels))
            for i in test:
                if records[i].candidates:
                    scores = scorer(records[i])
                    shipped[i] = replay(records[i], scores, settings)
                    chosen[i] = replay_conditional(records[i], scores, settings, model)
        per_seed["shipped"].append(metrics(records, shipped))
        per_seed["learned selection"].append(metrics(records, chosen))
        print(seed, {k: v[-1] for k, v in per_seed.items()}, flush=True)
    return {k: {m: round(float(np.mean([row[m] for row in v])), 4) for m in v[0]} for k, v in per_seed.items()}


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
    parser.add_argument("--family", choices=("spread", "cover", "both", "learned"), default="both")
    args = parser.parse_args()
    _, records = load(f"base={args.dumps}")
    settings = ReplaySettings(stage1=False, distinct_pages=True)
    if args.family == "learned":
        result = {"questions": len(records), "seeds": list(SEEDS), "results": learned_selection(records, settings)}
        Path(args.out).write_text(json.dumps(result, indent=1))
        print(result["results"], f"wrote {args.out}", sep="\n")
        return
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
