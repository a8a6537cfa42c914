"""benchmarks/ranking_cv.py's studies on small replay records: the modality fallback's thresholds calibrated on the
training companies and applied to the held-out ones, each set scored from the others, the model fitted on fewer
companies."""

from dataclasses import replace

import numpy as np
from helpers.benchmark_modules import load_benchmark

from haystack_fin.core.evaluation import Question
from haystack_fin.core.retrieval.modality_fallback import FallbackConfig
from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.ranking_model import CandidateFacts, QuestionFlags
from haystack_fin.core.retrieval.ranking_replay import FallbackInputs, ReplayCandidate, ReplayRecord, ReplaySettings

ranking_cv = load_benchmark("ranking_cv")

F = "ACME_2020_10K"
# Best first: two text chunks that mention the question's concept (cosines 0.8, 0.7), a table (0.3), text (0.2).
MODALITIES = ["text", "text", "table", "text"]
COSINES = [0.8, 0.7, 0.3, 0.2]


def record(company: str, gold_page: int, i: int) -> ReplayRecord:
    ids = [f"{F}#chunk-{j:05d}" for j in range(4)]
    candidates = [
        ReplayCandidate(cid, F, "7", 2, [j + 1], [cid], modality=m, covers=["capex"] if j < 2 else [])
        for j, (cid, m) in enumerate(zip(ids, MODALITIES, strict=True))
    ]
    q = Question(f"{company}-{i}", F, "t", "?", {gold_page}, [])
    signals = [PassageScore(0.5, dense=0.5, lexical=0.5, table=None) for _ in ids]
    facts = [CandidateFacts("tree", item="7", budget_k=2) for _ in ids]
    inputs = FallbackInputs(concepts=["capex"], statement_weight=0.0, chunk_words=dict.fromkeys(ids, 100))
    pages = {c.chunk_id: c.pages for c in candidates}
    return ReplayRecord(
        q, company, "set", candidates, signals, COSINES, facts, QuestionFlags(), np.zeros(4), pages, inputs
    )


def fixed_order(_train):
    return lambda _record: [4.0, 3.0, 2.0, 1.0]


BASE = FallbackConfig.from_params({"text": 0.6, "table": 0.5, "image": 0.5}, {"text": 2})
SETTINGS = ReplaySettings(k=5, stage1=False)
GRID = [0.3, 0.5, 0.7, 0.9]


def test_calibrated_thresholds_cut_words_where_the_training_companies_lose_nothing():
    # The answer is the first text chunk: the two text chunks over a threshold up to 0.7 suffice, the rest can go
    # (0.9 keeps none and the fallback passes everything).
    records = [record(f"c{i % 4}", 1, i) for i in range(8)]
    out = ranking_cv.fallback_study(records, fixed_order, SETTINGS, 2, BASE, GRID)
    assert out["mean"]["off"] == {"page_hit@5": 1.0, "evidence_complete@5_2plus": 0.0, "context_words@5": 400.0}
    assert out["mean"]["calibrated"]["page_hit@5"] == 1.0 and out["mean"]["calibrated"]["context_words@5"] == 200.0
    assert all(f["thresholds"]["text"] <= 0.7 for d in out["dealings"] for f in d["folds"])


def test_no_threshold_when_the_fallback_would_drop_evidence_and_the_yaml_thresholds_measured_too():
    # Half of every company's questions are answered by the table, which the text tier drops: calibration keeps the
    # fallback off.
    records = [record(f"c{i % 4}", 1 if (i // 4) % 2 else 3, i) for i in range(16)]
    out = ranking_cv.fallback_study(records, fixed_order, SETTINGS, 2, BASE, GRID)
    assert all(f["thresholds"] is None for d in out["dealings"] for f in d["folds"])
    assert out["mean"]["calibrated"] == out["mean"]["off"]
    assert out["mean"]["yaml"]["page_hit@5"] == 0.5 and out["mean"]["yaml"]["context_words@5"] == 200.0


def test_transfer_fits_each_set_on_the_other_sets_without_its_companies():
    # Sets "a" and "c" both hold company c0 (as the dev slice and the analyst set share filings): "c" never trains
    # "a", and only a's other company trains "c"; "b" trains both, and both train "b".
    made = {"a": ["c0", "c1"], "b": ["c2", "c3"], "c": ["c0"]}
    records = [
        replace(record(company, 1, i), source_set=name)
        for name, companies in made.items()
        for i, company in enumerate(companies)
    ]
    seen: list[set[str]] = []

    def fit(train):
        seen.append({r.source_set for r in train} | {r.company for r in train})
        return lambda _record: [4.0, 3.0, 2.0, 1.0]

    out = ranking_cv.transfer_study(records, fit, SETTINGS)
    assert seen == [{"b", "c2", "c3"}, {"a", "c", "c0", "c1"}, {"a", "b", "c1", "c2", "c3"}]
    assert out["b"]["trained_on"] == {"sets": ["a", "c"], "companies": 2, "questions": 3}
    assert out["a"]["learned"]["page_hit@5"] == 1.0 and out["a"]["learned"]["n"] == 2.0


def test_the_curve_fits_on_a_share_of_the_training_companies_drawn_the_same_way_each_time():
    records = [record(f"c{i}", 1, i) for i in range(8)]
    seen: list[list[str]] = []

    def fit(train):
        seen.append(sorted(r.company for r in train))
        return lambda _record: [4.0, 3.0, 2.0, 1.0]

    fewer = ranking_cv.on_fewer_companies(fit, 0.5)
    fewer(records)
    fewer(list(reversed(records)))
    ranking_cv.on_fewer_companies(fit, 0.1)(records[:3])
    assert len(seen[0]) == 4 and seen[0] == seen[1]  # half of 8, the same half whatever the order
    assert len(seen[2]) == 2  # never fewer than two companies
