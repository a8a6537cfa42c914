"""core.retrieval.modality_fallback: tiers, coverage, direct-to-table, pass-through, calibration choice."""

import math

import pytest

from haystack_fin.core.retrieval.modality_fallback import (
    HIT_METRIC,
    FallbackCandidate,
    FallbackConfig,
    choose_row,
    concept_phrases,
    concepts_mentioned,
    decide,
    staged_sweep,
    threshold_grid,
)
from haystack_fin.core.retrieval.passage_scoring import cosines

QUERY = [1.0, 0.0]


def vec(cos: float) -> list[float]:
    """A unit vector whose cosine with QUERY is ``cos``."""
    return [cos, math.sqrt(max(0.0, 1 - cos * cos))]


def cand(modality: str, cos: float | None, text: str = "capital expenditures were high") -> FallbackCandidate:
    return FallbackCandidate(modality, None if cos is None else vec(cos), text)


CAPEX = concept_phrases([("capex", ["capex", "capital expenditures", "purchases of property and equipment"])])
CONFIG = FallbackConfig.from_params({"text": 0.6, "table": 0.5, "image": 0.4}, {"text": 2, "table": 1, "image": 1})


def test_cosines_are_raw_and_missing_embeddings_are_none():
    got = cosines(QUERY, [vec(0.3), None, [0.0, 0.0], [-1.0, 0.0]])
    assert got[0] == pytest.approx(0.3) and got[1] is None and got[2] == 0.0 and got[3] == pytest.approx(-1.0)
    with pytest.raises(ValueError, match="dimension 3"):
        cosines(QUERY, [[1.0, 0.0, 0.0]])


def test_text_tier_keeps_text_over_threshold_in_order():
    ranked = [cand("table", 0.9), cand("text", 0.7), cand("text", 0.55), cand("text", 0.65), cand("image", 0.9)]
    d = decide(ranked, QUERY, CONFIG, CAPEX)
    assert (d.tier, d.keep, d.start_tier) == ("text", [1, 3], "text")
    assert d.checks[0]["n_over"] == {"text": 2} and d.checks[0]["covered"] == ["capex"]


def test_too_few_text_passages_add_tables_then_images():
    ranked = [cand("text", 0.7), cand("table", 0.55), cand("table", 0.45), cand("image", 0.45)]
    d = decide(ranked, QUERY, CONFIG, CAPEX)
    assert (d.tier, d.keep) == ("table", [0, 1])
    only_images = [cand("text", 0.7), cand("table", 0.3), cand("image", 0.45)]
    d = decide(only_images, QUERY, CONFIG, CAPEX)
    assert (d.tier, d.keep) == ("image", [0, 2])
    assert [c["tier"] for c in d.checks] == ["text", "table", "image"]


def test_uncovered_lexicon_concepts_fall_back_to_tables():
    ranked = [
        cand("text", 0.8, "Our competitors are many."),
        cand("text", 0.7, "Risk factors."),
        cand("table", 0.6, "| Purchases of property and equipment | (1,577) |"),
    ]
    d = decide(ranked, QUERY, CONFIG, CAPEX)
    assert d.tier == "table" and d.keep == [0, 1, 2]
    assert d.checks[0]["coverage_ok"] is False and d.checks[1]["covered"] == ["capex"]
    # "all": every concept must be mentioned; "none": no check.
    two = CAPEX + concept_phrases([("dividends", ["dividends paid"])])
    strict = FallbackConfig.from_params(CONFIG.thresholds, CONFIG.min_counts, coverage="all")
    assert decide(ranked, QUERY, strict, two).tier == "all"
    loose = FallbackConfig.from_params(CONFIG.thresholds, CONFIG.min_counts, coverage="none")
    assert decide(ranked, QUERY, loose, CAPEX).tier == "text"


def test_whole_word_coverage():
    ranked = [cand("text", 0.9, "capexes and capex"), cand("text", 0.9, "recapex")]
    assert decide(ranked[1:] * 2, QUERY, CONFIG, CAPEX).checks[0]["coverage_ok"] is False
    assert decide(ranked[:1] * 2, QUERY, CONFIG, CAPEX).checks[0]["coverage_ok"] is True


def test_named_statement_starts_at_the_table_tier():
    ranked = [cand("text", 0.9), cand("text", 0.8), cand("table", 0.6)]
    d = decide(ranked, QUERY, CONFIG, CAPEX, statements={"cash_flow_statement": 1.0})
    assert (d.start_tier, d.tier, d.keep) == ("table", "table", [0, 1, 2])
    assert "names a financial statement" in d.reason
    implied = decide(ranked, QUERY, CONFIG, CAPEX, statements={"cash_flow_statement": 0.5})
    assert (implied.start_tier, implied.tier) == ("text", "text")


def test_no_sufficient_tier_passes_everything_or_the_last_tier():
    ranked = [cand("text", 0.7), cand("text", 0.2), cand("table", 0.1)]
    d = decide(ranked, QUERY, CONFIG, CAPEX)
    assert (d.tier, d.keep) == ("all", [0, 1, 2]) and "no tier sufficed" in d.reason
    last = FallbackConfig.from_params(CONFIG.thresholds, CONFIG.min_counts, on_insufficient="last_tier")
    assert decide(ranked, QUERY, last, CAPEX).keep == [0]


def test_without_embeddings_nothing_is_judged():
    ranked = [cand("text", None), cand("table", None)]
    assert decide(ranked, QUERY, CONFIG).keep == [0, 1]
    assert decide([cand("text", 0.9)], None, CONFIG).tier == "all"
    assert decide([], QUERY, CONFIG).keep == []


def test_unknown_modality_counts_as_text_and_questions_without_terms_are_covered():
    ranked = [cand("", 0.9, "x"), cand("chart", 0.8, "y")]
    assert decide(ranked, QUERY, CONFIG).tier == "text"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"thresholds": {"audio": 0.5}},
        {"thresholds": {"text": 1.5}},
        {"thresholds": {"text": "high"}},
        {"min_counts": {"text": -1}},
        {"min_counts": {"text": 1.5}},
        {"coverage": "most"},
        {"on_insufficient": "drop"},
    ],
)
def test_config_validation(kwargs):
    with pytest.raises(ValueError):
        FallbackConfig.from_params(**kwargs)


def test_threshold_grid():
    assert threshold_grid(0.55, 0.85, 0.05) == [0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85]
    with pytest.raises(ValueError):
        threshold_grid(0.8, 0.5, 0.05)


def test_choose_row_keeps_hits_and_cuts_words_most():
    base = {"page_hit@5": 0.9, "evidence_recall_bigram@5": 0.7, "context_words@5": 1600}

    def row(hit, rec, words):
        return {"overall": {"page_hit@5": hit, "evidence_recall_bigram@5": rec, "context_words@5": words}}

    rows = [row(0.9, 0.7, 1500), row(0.92, 0.71, 1200), row(0.87, 0.75, 800), row(0.9, 0.69, 900)]
    assert choose_row(rows, base) is rows[1]
    assert choose_row(rows, base, tolerance=0.03) is rows[2]
    assert choose_row([row(0.9, 0.7, 1600)], base) is None  # keeps hits but cuts nothing


def test_known_coverage_stands_in_for_the_text():
    # A replayed passage has no text: the concepts it mentions are given instead.
    known = [FallbackCandidate("text", None, "", 0.9, covers=frozenset({"capex"})) for _ in range(3)]
    assert decide(known, None, CONFIG, [("capex", [])]).tier == "text"
    unknown = [FallbackCandidate("text", None, "", 0.9, covers=frozenset()) for _ in range(3)]
    assert decide(unknown, None, CONFIG, [("capex", [])]).tier == "all"
    assert concepts_mentioned("Purchases of property and equipment rose", CAPEX) == ["capex"]


def test_choose_row_keeps_the_metrics_named():
    base = {"page_hit@5": 0.9, "evidence_complete@5_2plus": 0.7, "context_words@5": 1600}
    rows = [{"overall": {"page_hit@5": 0.9, "evidence_complete@5_2plus": 0.6, "context_words@5": 900}}]
    assert choose_row(rows, base, kept=("page_hit@5",)) is rows[0]
    assert choose_row(rows, base, kept=("page_hit@5", "evidence_complete@5_2plus")) is None


def test_staged_sweep_fixes_text_then_table_then_image():
    # Words fall with each threshold; hits hold while text <= 0.6 and table <= 0.5, whatever the image threshold.
    def row(stage, thresholds):
        hit = 0.9 if thresholds["text"] <= 0.6 and thresholds["table"] <= 0.5 else 0.8
        words = 3000 - 1000 * sum(thresholds.values())
        return {"stage": stage, "thresholds": dict(thresholds), "overall": {HIT_METRIC: hit, "context_words@5": words}}

    base = {HIT_METRIC: 0.9, "context_words@5": 2000}
    grid = [0.4, 0.5, 0.6, 0.7]
    rows, chosen = staged_sweep(row, {"text": grid, "table": grid, "image": grid}, base, kept=(HIT_METRIC,))
    assert chosen is not None and chosen["thresholds"] == {"text": 0.5, "table": 0.5, "image": 0.7}
    assert len(rows) == 12
    # The text stage keeps no row: the sweep stops there.
    rows, chosen = staged_sweep(row, {"text": [0.7], "table": grid, "image": grid}, base, kept=(HIT_METRIC,))
    assert chosen is None and len(rows) == 1
