"""Replaying the two-stage cut and the passage windows on dumped candidates, and company-grouped folds."""

import numpy as np
import pytest

from haystack_fin.core.evaluation import Question
from haystack_fin.core.retrieval.modality_fallback import FallbackConfig
from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.ranking_model import FEATURES, CandidateFacts, QuestionFlags
from haystack_fin.core.retrieval.ranking_replay import (
    FallbackInputs,
    ReplayCandidate,
    ReplayRecord,
    ReplaySettings,
    cross_validate,
    evidence_role_ids,
    fallback_kept,
    grouped_folds,
    read_dump,
    replay,
    replay_metrics,
    stack,
    write_dump,
)

F = "ACME_2020_10K"


def cand(i: int, pages: list[int], item: str = "7", budget: int | None = 2, window: list[int] | None = None,
         graph: bool = False) -> ReplayCandidate:  # fmt: skip
    ids = [f"{F}#chunk-{j:05d}" for j in (window or [i])]
    return ReplayCandidate(f"{F}#chunk-{i:05d}", F, item, budget, pages, ids, graph)


def record(candidates: list[ReplayCandidate], gold: set[int], company: str = "acme") -> ReplayRecord:
    pages = {c.chunk_id: c.pages for c in candidates}
    q = Question(f"q-{company}-{len(candidates)}-{min(gold)}", F, "t", "?", gold, [])
    n = len(candidates)
    signals = [PassageScore(0.5, dense=0.5, lexical=float(i), table=None) for i in range(n)]
    facts = [CandidateFacts("graph" if c.graph_added else "tree", item=c.item, budget_k=c.budget_k) for c in candidates]
    return ReplayRecord(q, company, "set", candidates, signals, [0.3] * n, facts, QuestionFlags(), np.zeros(n), pages)


def test_windows_skip_covered_chunks_and_the_stage1_cut_applies() -> None:
    # Chunk 1's window holds chunk 2: chunk 2 is then skipped. Item 8 keeps only its best (budget 1).
    cands = [cand(1, [10], window=[1, 2]), cand(2, [11]), cand(3, [40], item="8", budget=1), cand(4, [41], "8", 1)]
    rec = record(cands, {41})
    passages = replay(rec, [0.9, 0.8, 0.7, 0.6], ReplaySettings(ranker_top_k=4, k=5))
    assert [p.pages for p in passages] == [[10, 11], [40]]
    free = replay(rec, [0.9, 0.8, 0.7, 0.6], ReplaySettings(ranker_top_k=4, k=5, stage1=False))
    assert [p.pages for p in free] == [[10, 11], [40], [41]]


def test_distinct_pages_defer_a_passage_that_adds_no_page() -> None:
    cands = [cand(1, [10]), cand(5, [10]), cand(9, [12])]
    rec = record(cands, {12})
    base = replay(rec, [0.9, 0.8, 0.7], ReplaySettings(k=2, stage1=False))
    assert [p.pages for p in base] == [[10], [10]]
    distinct = replay(rec, [0.9, 0.8, 0.7], ReplaySettings(k=2, stage1=False, distinct_pages=True))
    assert [p.pages for p in distinct] == [[10], [12]]
    short = replay(rec, [0.9, 0.8, 0.7], ReplaySettings(k=3, stage1=False, distinct_pages=True))
    assert [p.pages for p in short] == [[10], [12], [10]]  # waits, comes back when nothing else is left


def test_graph_budget_raise_switch() -> None:
    # Item 7 has budget 1; the graph-added candidate carries 2 (raised): without the raise only one Item 7 passage.
    cands = [cand(1, [10], budget=1), cand(5, [20], budget=2, graph=True)]
    rec = record(cands, {20})
    raised = replay(rec, [0.9, 0.8], ReplaySettings(k=5))
    plain = replay(rec, [0.9, 0.8], ReplaySettings(k=5, graph_budget_raise=False))
    assert [p.pages for p in raised] == [[10], [20]] and [p.pages for p in plain] == [[10]]
    assert replay_metrics([rec], [[0.9, 0.8]])["page_hit@5"] == 1.0
    assert replay_metrics([rec], [[0.9, 0.8]], ReplaySettings(graph_budget_raise=False))["page_hit@5"] == 0.0


def test_dump_round_trip(tmp_path) -> None:
    rec = record([cand(1, [3], window=[1, 2]), cand(2, [4], graph=True)], {4})
    rec.question.evidence_roles = {"revenue": {4}}
    path = tmp_path / "d.jsonl.gz"
    assert write_dump([rec, rec], path) == 2
    back = read_dump(path)[0]
    assert back.question == rec.question and back.candidates == rec.candidates
    assert back.facts == rec.facts and back.signals == rec.signals and back.flags == rec.flags
    assert np.array_equal(back.features, rec.features) and back.chunk_pages == rec.chunk_pages
    assert back.features.shape == (2, len(FEATURES))
    assert list(back.labels()) == [0, 1]


def test_folds_hold_out_whole_companies_and_compare_in_the_same_folds() -> None:
    records = [record([cand(1, [1]), cand(2, [2])], {2 if i % 2 else 1}, company=f"c{i % 4}") for i in range(12)]
    for r in records:  # feature 0 marks the gold candidate
        r.features[:, 0] = r.labels()
    folds = grouped_folds([r.company for r in records], n_splits=4)
    assert len(folds) == 4
    for train, test in folds:
        assert not {records[i].company for i in train} & {records[i].company for i in test}

    def fit(train):
        assert len({r.company for r in train}) == 3
        return lambda r: r.features[:, 0]

    cv = cross_validate(records, fit, {"first": lambda r: np.array([1.0, 0.0])}, ReplaySettings(k=1), n_splits=4)
    assert cv["overall"]["learned"]["page_hit@5"] == 1.0 and cv["overall"]["first"]["page_hit@5"] == 0.5
    assert [len(f["companies"]) for f in cv["folds"]] == [1, 1, 1, 1]
    with pytest.raises(ValueError, match="at least 2 companies"):
        grouped_folds(["a", "a"])


def test_evidence_role_ids_align_with_the_stacked_rows() -> None:
    # Roles "table" (page 4 or 5) and "text" (page 9); a question without roles has one per gold page.
    with_roles = record([cand(1, [4]), cand(2, [9]), cand(3, [7]), cand(4, [5])], {4, 5, 9})
    with_roles.question.evidence_roles = {"table": {4, 5}, "text": {9}}
    empty = record([], {1})
    plain = record([cand(5, [2]), cand(6, [3])], {2, 3}, company="other")
    records = [with_roles, empty, plain]
    roles = evidence_role_ids(records)
    _, labels, questions = stack(records)
    assert roles.tolist() == [0, 1, -1, 0, 0, 1]
    assert len(roles) == len(labels) == len(questions)
    assert ((roles >= 0) == (labels == 1)).all()


def fallback_record() -> ReplayRecord:
    # Best first: a text chunk (cosine 0.8, mentions capex), a table (0.55), a text chunk (0.65), a text chunk (0.2).
    cands = [cand(1, [10]), cand(2, [30], window=[2, 3]), cand(4, [11]), cand(5, [12])]
    cands[1].modality = "table"
    cands[0].covers = ["capex"]
    rec = record(cands, {30})
    rec.cosines = [0.8, 0.55, 0.65, 0.2]
    words = {f"{F}#chunk-{j:05d}": 100 * j for j in (1, 2, 3, 4, 5)}
    rec.fallback_inputs = FallbackInputs(concepts=["capex"], statement_weight=0.0, chunk_words=words)
    return rec


def test_the_fallback_between_the_cut_and_the_windows_and_context_words() -> None:
    rec = fallback_record()
    scores = [0.9, 0.8, 0.7, 0.6]
    off = ReplaySettings(k=5, stage1=False)
    assert [p.pages for p in replay(rec, scores, off)] == [[10], [30], [11], [12]]
    # Two text chunks over 0.6, one mentions capex: the text tier suffices and the table goes.
    config = FallbackConfig.from_params({"text": 0.6, "table": 0.5}, {"text": 2})
    assert fallback_kept(rec, [0, 1, 2, 3], config) == [0, 2]
    on = ReplaySettings(k=5, stage1=False, fallback=config)
    assert [p.pages for p in replay(rec, scores, on)] == [[10], [11]]
    assert replay_metrics([rec], [scores], off)["context_words@5"] == 100 + 500 + 400 + 500
    assert replay_metrics([rec], [scores], on) == pytest.approx(
        {"n": 1, "page_hit@5": 0.0, "evidence_complete@5_2plus": 0.0, "context_words@5": 500, "n_2plus": 0, "mrr": 0}
    )
    # Nobody mentions the concept: no tier suffices and the ranked list passes unchanged.
    rec.candidates[0].covers = []
    assert fallback_kept(rec, [0, 1, 2, 3], config) == [0, 1, 2, 3]
    # A statement named outright starts at the table tier: the table joins the text over threshold.
    rec.candidates[0].covers = ["capex"]
    assert rec.fallback_inputs is not None
    rec.fallback_inputs.statement_weight = 1.0
    assert fallback_kept(rec, [0, 1, 2, 3], config) == [0, 1, 2]


def test_a_dump_without_the_fallback_inputs_says_so(tmp_path) -> None:
    rec = fallback_record()
    path = tmp_path / "d.jsonl.gz"
    write_dump([rec], path)
    back = read_dump(path)[0]
    assert back.fallback_inputs == rec.fallback_inputs and back.candidates == rec.candidates
    old = record([cand(1, [3])], {3})
    assert "context_words@5" not in replay_metrics([old], [[1.0]])
    with pytest.raises(ValueError, match="no modality fallback inputs"):
        replay(old, [1.0], ReplaySettings(fallback=FallbackConfig()))
