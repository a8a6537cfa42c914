"""`haystack-fin train-ranker`: fit the ranker's scoring model on a labelled question set.

Two steps, so that trying a model costs seconds: ``dump_features`` runs the query pipeline once per question (single
setting: the question's own filing) and records what the ranker was given (``core.retrieval.ranking_replay``:
features, hand-set scores, groups, pages, windows, the candidates' words); ``fit_model`` fits
``core.retrieval.ranking_model``'s logistic model, boosted trees and term pairs on one or more dumps and
``cross_validate_dump`` reports page_hit@5 with whole companies held out, the learned model against the hand-set
weights in the same folds.

Questions are FinanceBench-format JSONL (``core.evaluation``); a record's ``company`` field groups the folds (the
doc_name's first part when absent).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from haystack_fin.core import schema
from haystack_fin.core.evaluation import load_questions
from haystack_fin.core.retrieval.modality_fallback import concepts_mentioned
from haystack_fin.core.retrieval.passage_scoring import FallbackWeights
from haystack_fin.core.retrieval.question_analysis import analysis_or_own
from haystack_fin.core.retrieval.ranking_model import (
    FEATURES,
    HAND_SET_FEATURES,
    TREE_PARAMS,
    RankingModel,
    fit_logistic,
    fit_pairwise,
    fit_trees,
    tie_to_dense,
    untie,
)
from haystack_fin.core.retrieval.ranking_replay import (
    FallbackInputs,
    ReplayCandidate,
    ReplayRecord,
    ReplaySettings,
    Scorer,
    cross_validate,
    evidence_role_ids,
    replay,
    stack,
)
from haystack_fin.core.retrieval.term_pairs import fit_term_pairs, passage_words


def question_companies(path: str | Path) -> dict[str, str]:
    """financebench_id -> company (the record's ``company``, else the doc_name before its first "_" or "-")."""
    out: dict[str, str] = {}
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            company = record.get("company") or str(record["doc_name"]).replace("-", "_").split("_")[0]
            out[str(record["financebench_id"])] = str(company).strip().lower()
    return out


def dump_features(
    questions_path: str,
    filing_dirs: Sequence[str],
    store_path: str | None,
    qdrant_url: str | None = None,
    quiet: bool = False,
    fragments: Sequence[str] = (),
    ablate: Sequence[str] = (),
    source_set: str | None = None,
    timeout_s: float | None = 600,
) -> tuple[list[ReplayRecord], dict[str, Any]]:
    """Index the questions' filings (as ``eval`` does), run the query pipeline on each question in its own filing and
    record the ranker's candidates (and what the modality fallback reads of them). Returns the records and a check:
    how many questions' replayed top 10 (with the scores the pipeline used, and the pipeline's fallback when it is
    enabled) differs from what the pipeline returned, or whose scores from the record (its features and words) differ
    from the ranker's (0 when replay is faithful)."""
    from haystack_fin.components.modality_fallback import ModalityThresholdFallback, question_concepts
    from haystack_fin.components.modality_fallback import candidate as fallback_candidate
    from haystack_fin.components.passage_window import PassageWindow
    from haystack_fin.components.two_stage_ranker import TwoStageRanker, _deduplicate
    from haystack_fin.evaluation_runner import HaystackFinRetrieval, index_question_filings
    from haystack_fin.pipeline_loader import component_as

    questions = load_questions(questions_path)
    companies = question_companies(questions_path)
    label = source_set or Path(questions_path).stem
    index_question_filings(questions, list(filing_dirs), store_path, qdrant_url, quiet, timeout_s)
    fin = HaystackFinRetrieval(store_path, qdrant_url, set(ablate), fragments=list(fragments))
    pipe = fin.runner.pipe
    ranker = component_as(pipe, "ranker", TwoStageRanker)
    window = component_as(pipe, "window", PassageWindow)
    embedder = pipe.get_component("embedder")
    window_component = fin.runner.data["components"]["window"]["init_parameters"]
    ranker_params = fin.runner.data["components"]["ranker"]["init_parameters"]
    fallback = pipe.get_component("fallback") if "fallback" in fin.runner.data["components"] else None
    settings = ReplaySettings(
        stage1=bool(ranker_params.get("per_item_cut", True)),
        ranker_top_k=int(ranker_params.get("top_k", 20)),
        k=fin.top_k,
        distinct_pages=bool(window_component.get("distinct_pages", False)),
        fallback=fallback.config if isinstance(fallback, ModalityThresholdFallback) and fallback.enabled else None,
    )
    # the model the ranker runs, to check that a record's scores from its dumped features and words are the ranker's
    ranker.warm_up()
    model = ranker.ranking_model
    records: list[ReplayRecord] = []
    mismatches: list[str] = []
    try:
        for q in tqdm(questions, desc="Dumping ranker features", disable=quiet):
            result = fin.runner.run(q.question, [q.doc_name], k=fin.top_k)
            unique, _ = _deduplicate(result.candidates)
            embedding = embedder.run(text=q.question)["embedding"]
            scored = ranker.score_candidates(q.question, unique, embedding, result.trace.get("analysis"))
            windows = window.windows(unique)
            chunk_pages = {cid: pages for w in windows for cid, pages in w}
            analysed = analysis_or_own(q.question, result.trace.get("analysis"))
            concepts = question_concepts(analysed)
            words = window.chunk_words(unique)
            candidates = [
                ReplayCandidate(
                    chunk_id=d.id,
                    filing_id=str(d.meta.get(schema.FILING_ID) or ""),
                    item=None if d.meta.get(schema.ITEM) is None else str(d.meta[schema.ITEM]),
                    budget_k=d.meta.get(schema.BUDGET_K) if isinstance(d.meta.get(schema.BUDGET_K), int) else None,
                    pages=[int(p) for p in d.meta.get(schema.PAGE_NUMBERS) or []],
                    window=[cid for cid, _ in w],
                    graph_added=(d.meta.get(schema.RETRIEVAL) or {}).get("mode") == "graph",
                    modality=fallback_candidate(d).modality,
                    covers=concepts_mentioned(d.content or "", concepts),
                    words=passage_words(d.content or ""),
                )
                for d, w in zip(unique, windows, strict=True)
            ]
            record = ReplayRecord(
                question=q,
                company=companies.get(q.financebench_id, q.doc_name),
                source_set=label,
                candidates=candidates,
                signals=scored.signals,
                cosines=scored.cosines,
                facts=scored.facts,
                flags=scored.flags,
                hand_scores=np.asarray(scored.hand_scores, dtype=np.float64),
                chunk_pages=chunk_pages,
                fallback_inputs=FallbackInputs(
                    concepts=[cid for cid, _ in concepts],
                    statement_weight=max(analysed.statements.values(), default=0.0),
                    chunk_words={cid: words.get(cid, 0) for cid in chunk_pages},
                ),
            )
            replayed = [(p.doc_name, p.pages) for p in replay(record, scored.scores, settings)]
            returned = [
                (str(d.meta.get(schema.FILING_ID)), [int(p) for p in d.meta.get(schema.PAGE_NUMBERS) or []])
                for d in result.passages
            ]
            rescored = record.model_scores(model) if model is not None else scored.scores
            if replayed != returned or not np.allclose(rescored, scored.scores, rtol=0, atol=1e-9):
                mismatches.append(q.financebench_id)
            records.append(record)
    finally:
        fin.close()
    return records, {"questions": len(records), "replay_mismatches": mismatches}


FITS = ("pairwise", "pointwise")
# How a pointwise fit (and the trees) weigh the candidates: every question the same, every candidate the same, or
# every evidence role of every question the same (a question needing three pieces of evidence weighs three
# single-page ones).
WEIGHTINGS = ("question", "candidate", "role")
# The shipped model's fit, chosen by company-grouped folds (docs/ranking.md).
DEFAULT_FIT = "pointwise"
DEFAULT_WEIGHTING = "role"
DEFAULT_TREE_WEIGHTING = "question"
DEFAULT_C = 0.1
# Signals whose weight keeps its hand-set ratio to dense (FallbackWeights): where that beat the learned weight in the
# same folds (docs/ranking.md).
DEFAULT_HAND_SET: tuple[str, ...] = ("lexical",)
# The boosted trees' weight in the score's log-odds (0: the logistic model alone), chosen by the same folds.
DEFAULT_TREE_WEIGHT = 0.25
# The term pairs' weight in the score's log-odds (0: none), their regularization and the smallest pair weight kept
# (smaller ones barely move a score and would fill the model file), chosen by the same folds.
DEFAULT_TERM_PAIRS = 0.5
DEFAULT_TERM_PAIR_C = 3.0
DEFAULT_TERM_PAIR_MIN_WEIGHT = 0.05
# The shipped query.yaml's steps after scoring: one cut across Items, one page at most once in the top k.
SHIPPED_REPLAY = ReplaySettings(stage1=False, distinct_pages=True)


def hand_set_signals(text: str) -> list[str]:
    """The signals a comma-separated ``--hand-set`` value names ('' names none)."""
    return [s for s in text.split(",") if s.strip()]


def hand_set_ratios(signals: Sequence[str]) -> dict[str, float]:
    """Feature -> its hand-set weight's ratio to dense, for the named fallback signals (``HAND_SET_FEATURES``)."""
    unknown = [s for s in signals if s not in HAND_SET_FEATURES]
    if unknown:
        raise ValueError(f"hand-set signal(s) {unknown}: known are {list(HAND_SET_FEATURES)}")
    weights = FallbackWeights()
    return {HAND_SET_FEATURES[s]: float(getattr(weights, s)) / weights.dense for s in signals}


def _weighing(
    weighting: str, records: Sequence[ReplayRecord], questions: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The question ids and evidence roles a fit weighs the stacked candidates by (None: not used)."""
    if weighting == "candidate":
        return None, None
    return questions, evidence_role_ids(records) if weighting == "role" else None


def fit_model(
    records: Sequence[ReplayRecord],
    c: float = DEFAULT_C,
    info: dict[str, Any] | None = None,
    fit: str = DEFAULT_FIT,
    features: Sequence[str] = FEATURES,
    weighting: str = DEFAULT_WEIGHTING,
    hand_set: Sequence[str] = DEFAULT_HAND_SET,
    trees: float = DEFAULT_TREE_WEIGHT,
    tree_weighting: str = DEFAULT_TREE_WEIGHTING,
    term_pairs: float = DEFAULT_TERM_PAIRS,
    term_pair_c: float = DEFAULT_TERM_PAIR_C,
) -> RankingModel:
    """The ranking model fitted on every candidate of ``records``: ``fit`` "pairwise" (the order within each
    question) or "pointwise" (each candidate's label; ``weighting`` "question": every question weighs the same,
    "candidate": every candidate does, "role": every evidence role of every question does); the ``hand_set``
    signals keep their hand-set ratio to dense; with ``trees`` > 0, boosted trees over every feature, weighed by
    ``tree_weighting``, are blended in at that weight; with ``term_pairs`` > 0, a term-pair model
    (``core.retrieval.term_pairs``, regularization ``term_pair_c``) fitted on the dumped candidates' words adds its
    log-odds at that weight."""
    if fit not in FITS:
        raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
    for name, value in (("weighting", weighting), ("tree_weighting", tree_weighting)):
        if value not in WEIGHTINGS:
            raise ValueError(f"{name} must be one of {WEIGHTINGS}, got {value!r}")
    if not 0.0 <= trees <= 1.0:
        raise ValueError(f"trees must be a weight in [0, 1], got {trees}")
    if term_pairs < 0 or term_pair_c <= 0:
        raise ValueError(f"term_pairs must be >= 0 and term_pair_c > 0, got {term_pairs} and {term_pair_c}")
    examples = [r.pair_example() for r in records] if term_pairs else []
    ratios = {f: r for f, r in hand_set_ratios(hand_set).items() if f in features}
    matrix, labels, questions = stack(records)
    rows = matrix
    if ratios:
        matrix = tie_to_dense(matrix, ratios)
        features = [f for f in features if f not in ratios]
    details = {"questions": len(records), "candidates": len(labels), "relevant": int(labels.sum()), "c": c}
    by_question, roles = _weighing(weighting, records, questions)
    if fit == "pairwise":
        model = fit_pairwise(matrix, labels, questions, features, c=c, info={**details, **(info or {})})
    else:
        model = fit_logistic(
            matrix, labels, features, c=c, info={**details, **(info or {})}, question_ids=by_question, roles=roles
        )
    model = untie(model, ratios) if ratios else model
    if term_pairs:
        pairs = fit_term_pairs(examples, c=term_pair_c, min_weight=DEFAULT_TERM_PAIR_MIN_WEIGHT)
        pair_info = {"term_pair_weight": term_pairs, "term_pair_c": term_pair_c, "term_pairs": len(pairs.pairs)}
        model = replace(model, term_pairs=pairs, term_pair_weight=term_pairs, info={**model.info, **pair_info})
    if not trees:
        return model
    tree_questions, tree_roles = _weighing(tree_weighting, records, questions)
    ensemble = fit_trees(rows, labels, tree_questions, roles=tree_roles)
    tree_info = {
        "tree_weight": trees,
        "tree_weighting": tree_weighting,
        "tree_params": dict(TREE_PARAMS),
        "trees": len(ensemble.trees),
    }
    return replace(model, trees=ensemble, tree_weight=trees, info={**model.info, **tree_info})


def model_fitter(
    c: float = DEFAULT_C,
    fit: str = DEFAULT_FIT,
    features: Sequence[str] = FEATURES,
    weighting: str = DEFAULT_WEIGHTING,
    hand_set: Sequence[str] = DEFAULT_HAND_SET,
    trees: float = DEFAULT_TREE_WEIGHT,
    tree_weighting: str = DEFAULT_TREE_WEIGHTING,
    term_pairs: float = DEFAULT_TERM_PAIRS,
    term_pair_c: float = DEFAULT_TERM_PAIR_C,
) -> Callable[[Sequence[ReplayRecord]], Scorer]:
    """What the folds fit on their training companies: ``fit_model`` with these arguments, as a scorer of records."""

    def fitted(train: Sequence[ReplayRecord]) -> Scorer:
        model = fit_model(
            train,
            c,
            fit=fit,
            features=features,
            weighting=weighting,
            hand_set=hand_set,
            trees=trees,
            tree_weighting=tree_weighting,
            term_pairs=term_pairs,
            term_pair_c=term_pair_c,
        )
        return lambda record: record.model_scores(model).tolist()

    return fitted


def cross_validate_dump(
    records: Sequence[ReplayRecord],
    n_splits: int = 5,
    settings: ReplaySettings | None = None,
    **fit_args: Any,
) -> dict[str, Any]:
    """Company-grouped folds: the model ``model_fitter(**fit_args)`` fits on the other companies against the
    hand-set weights, same folds."""
    return cross_validate(
        records,
        model_fitter(**fit_args),
        {"hand-set": lambda record: record.hand_scores.tolist()},
        settings=settings or SHIPPED_REPLAY,
        n_splits=n_splits,
    )


def cv_table(cv: dict[str, Any]) -> list[str]:
    """The folds as text lines: companies held out, questions, page_hit@5 learned vs hand-set."""
    lines = ["fold  questions  page_hit@5 learned  hand-set  companies held out"]
    for i, fold in enumerate(cv["folds"], start=1):
        lines.append(
            f"{i:>4}  {fold['n']:>9}  {fold['learned']['page_hit@5']:>18.3f}  {fold['hand-set']['page_hit@5']:>8.3f}"
            f"  {', '.join(fold['companies'])}"
        )
    overall = cv["overall"]
    n = int(overall["learned"]["n"])
    lines.append(f" all  {n:>9}  {overall['learned']['page_hit@5']:>18.3f}  {overall['hand-set']['page_hit@5']:>8.3f}")
    return lines
