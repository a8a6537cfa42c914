import json
import math
import random
from typing import Any

import pytest

from haystack_fin.core.lexicon import Lexicon, TermCluster
from haystack_fin.core.retrieval.flam import (
    BASIS_COUNTS,
    BASIS_PRIORS,
    BASIS_UNIFORM,
    FilingStats,
    QueryTerm,
    allocate_budget,
    cluster_ids,
    cluster_item_priors,
    detect_query_clusters,
    eligible_items,
    explain,
    relative_frequency,
    route,
    route_sections,
    score_items,
)

# Hand-made Item statistics of a small 10-K: Item 8 mentions revenue most often in absolute terms, Item 7 most
# often relative to everything it mentions; 1B is a one-line placeholder; Item 4 has no chunks.
COUNTS = {
    "cover": {"revenue": 4, "capex": 1},
    "1": {"revenue": 5, "inflation": 5},
    "1B": {"revenue": 1},
    "4": {"revenue": 3},
    "7": {"revenue": 30, "capex": 6},
    "8": {"revenue": 60, "capex": 10, "goodwill": 30},
}
TOTALS = {"cover": 20, "1": 100, "1B": 2, "4": 3, "7": 300, "8": 1000}
CHUNKS = {"cover": 2, "1": 10, "1B": 1, "4": 0, "7": 40, "8": 120}


def item_weights(*args: Any, **kwargs: Any) -> dict[str, float]:
    return score_items(*args, **kwargs).weights


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load_default()


@pytest.fixture(scope="module")
def tiny_lexicon() -> Lexicon:
    return Lexicon(
        [
            TermCluster("revenue", "Revenue", "income_statement", ("revenue", "net sales"), {"10-K": ("7", "8")}),
            TermCluster(
                "capex", "Capital expenditures", "cash_flow", ("capex", "capital expenditures"), {"10-K": ("8",)}
            ),
            TermCluster("inflation", "Inflation", "mdna", ("inflation",), {"10-K": ("7", "1A")}),
        ]
    )


class TestDetectQueryClusters:
    def test_terms_map_to_clusters(self, lexicon):
        terms = detect_query_clusters("How did net sales and capital expenditures change in fiscal 2021?", lexicon)
        assert cluster_ids(terms) == ["revenue", "capex"]
        assert all(isinstance(t, QueryTerm) and t.match_type in ("exact", "normalized", "fuzzy") for t in terms)
        assert terms[0].text == "net sales"

    def test_typo_is_fuzzy(self, lexicon):
        terms = detect_query_clusters("What were the capital expenditres last year?", lexicon)
        assert [(t.cluster_id, t.match_type) for t in terms] == [("capex", "fuzzy")]

    def test_no_terms(self, lexicon):
        assert detect_query_clusters("hello there", lexicon) == []

    def test_cluster_ids_dedupes_in_order(self):
        terms = [QueryTerm("capex", "capex", "exact"), QueryTerm("revenue", "revenue", "exact")]
        assert cluster_ids([*terms, "capex", "goodwill"]) == ["capex", "revenue", "goodwill"]


class TestItemWeights:
    def test_relative_is_the_papers_ratio_without_smoothing(self):
        weights = item_weights(["revenue"], COUNTS, TOTALS, mode="relative", smoothing=0, n_chunks=CHUNKS)
        raw = {"1": 5 / 100, "1B": 1 / 2, "7": 30 / 300, "8": 60 / 1000}
        total = sum(raw.values())
        assert weights == pytest.approx({"cover": 0.0, "4": 0.0, **{i: r / total for i, r in raw.items()}})
        assert list(weights) == list(CHUNKS)  # filing order

    def test_smoothing_stops_a_placeholder_item_from_winning(self):
        plain = item_weights(["revenue"], COUNTS, TOTALS, smoothing=0, n_chunks=CHUNKS)
        smoothed = item_weights(["revenue"], COUNTS, TOTALS, smoothing=10, n_chunks=CHUNKS)
        assert max(plain, key=plain.get) == "1B"
        assert max(smoothed, key=smoothed.get) == "7"
        assert smoothed["1B"] == pytest.approx((1 / 12) / (5 / 110 + 1 / 12 + 30 / 310 + 60 / 1010))

    def test_log_damps_the_gap(self):
        weights = item_weights(["revenue"], COUNTS, TOTALS, mode="log", smoothing=0, n_chunks=CHUNKS)
        raw = {i: math.log1p(COUNTS[i]["revenue"]) / math.log1p(TOTALS[i]) for i in ("1", "1B", "7", "8")}
        total = sum(raw.values())
        assert weights == pytest.approx({"cover": 0.0, "4": 0.0, **{i: r / total for i, r in raw.items()}})
        relative = item_weights(["revenue"], COUNTS, TOTALS, mode="relative", smoothing=0, n_chunks=CHUNKS)
        assert max(weights.values()) < max(relative.values())

    def test_several_clusters_add_up(self):
        weights = item_weights(["revenue", "capex"], COUNTS, TOTALS, smoothing=0, n_chunks=CHUNKS)
        raw = {"1": 5 / 100, "1B": 1 / 2, "7": 36 / 300, "8": 70 / 1000}
        assert weights["8"] == pytest.approx(raw["8"] / sum(raw.values()))

    def test_softmax_temperature(self):
        args = (["revenue"], COUNTS, TOTALS)
        relative = item_weights(*args, n_chunks=CHUNKS)
        soft = item_weights(*args, mode="softmax", temperature=1.0, n_chunks=CHUNKS)
        cold = item_weights(*args, mode="softmax", temperature=0.01, n_chunks=CHUNKS)
        hot = item_weights(*args, mode="softmax", temperature=1000.0, n_chunks=CHUNKS)
        ranked = sorted(relative, key=relative.get)
        assert sorted(soft, key=soft.get) == ranked  # same order as the relative scores
        assert cold["7"] == pytest.approx(1.0, abs=1e-6)
        matching = ["1", "1B", "7", "8"]
        assert [hot[i] for i in matching] == pytest.approx([0.25] * 4, abs=1e-3)
        assert hot["cover"] == hot["4"] == 0.0  # the softmax tail never reaches Items without mentions
        assert sum(soft.values()) == pytest.approx(1.0)

    def test_zero_chunk_items_and_cover_get_nothing(self):
        weights = item_weights(["revenue"], COUNTS, TOTALS, n_chunks=CHUNKS)
        assert weights["4"] == 0.0 and weights["cover"] == 0.0
        assert sum(weights.values()) == pytest.approx(1.0)

    def test_cover_only_when_nothing_else(self):
        weights = item_weights(["revenue"], COUNTS, TOTALS, n_chunks={"cover": 2, "4": 0})
        assert weights == {"cover": 1.0, "4": 0.0}
        assert eligible_items(["cover", "1"], {"cover": 1, "1": 0}) == ["cover"]
        assert eligible_items(["cover", "1"], None) == ["1"]

    def test_cover_when_a_question_concept_is_reported_there(self):
        # The registered securities are listed on the cover page: a prior on "cover" lets it compete on counts.
        counts = {**COUNTS, "cover": {**COUNTS["cover"], "registered_securities": 3}, "5": {"registered_securities": 1}}
        chunks = {**CHUNKS, "5": 4}
        totals = {**TOTALS, "5": 50}
        priors = {"cover": 1.0, "5": 0.5}
        weights = item_weights(["registered_securities"], counts, totals, item_priors=priors, n_chunks=chunks)
        assert weights["cover"] > weights["5"] > 0
        assert eligible_items(["cover", "1"], {"cover": 1, "1": 1}, cover=True) == ["cover", "1"]
        # Without the prior the cover stays out even though it mentions the concept.
        assert item_weights(["registered_securities"], counts, totals, n_chunks=chunks)["cover"] == 0.0

    def test_without_chunk_counts_items_come_from_the_counts(self):
        weights = item_weights(["capex"], {"7": {"capex": 1}, "8": {"capex": 3}}, {"7": 10, "8": 10})
        assert weights == pytest.approx({"7": 0.25, "8": 0.75})

    def test_missing_totals_use_the_sum_of_counts(self):
        weights = item_weights(["capex"], {"7": {"capex": 1, "revenue": 1}, "8": {"capex": 1}}, None, smoothing=0)
        assert weights == pytest.approx({"7": 1 / 3, "8": 2 / 3})

    def test_idf_downweights_ubiquitous_clusters(self):
        counts = {"1": {"revenue": 10}, "7": {"revenue": 10, "capex": 2}, "8": {"revenue": 10, "capex": 2}}
        counts["2"] = {"revenue": 10}
        totals = dict.fromkeys(counts, 100)
        plain = score_items(["revenue", "capex"], counts, totals, smoothing=0)
        weighted = score_items(["revenue", "capex"], counts, totals, smoothing=0, idf=True)
        assert weighted.idf == pytest.approx({"revenue": math.log(2), "capex": math.log(3)})
        assert weighted.weights["7"] > plain.weights["7"]
        assert weighted.weights["1"] < plain.weights["1"]
        assert plain.idf == {}

    def test_one_cluster_is_unaffected_by_idf(self):
        plain = item_weights(["revenue"], COUNTS, TOTALS, n_chunks=CHUNKS)
        assert item_weights(["revenue"], COUNTS, TOTALS, n_chunks=CHUNKS, idf=True) == pytest.approx(plain)

    @pytest.mark.parametrize(
        "kwargs", [{"mode": "bm25"}, {"temperature": 0}, {"temperature": -1.0}, {"smoothing": -0.5}]
    )
    def test_invalid_parameters(self, kwargs):
        with pytest.raises(ValueError):
            item_weights(["revenue"], COUNTS, TOTALS, **kwargs)


class TestFallback:
    def test_no_query_terms_is_uniform_over_items_with_chunks(self):
        result = score_items([], COUNTS, TOTALS, n_chunks=CHUNKS, item_priors={"8": 1.0})
        assert result.basis == BASIS_UNIFORM
        assert result.weights == pytest.approx({"cover": 0, "1": 1 / 4, "1B": 1 / 4, "4": 0, "7": 1 / 4, "8": 1 / 4})

    def test_unmentioned_clusters_fall_back_to_priors(self):
        result = score_items(["pensions"], COUNTS, TOTALS, n_chunks=CHUNKS, item_priors={"8": 1.0, "7": 0.5})
        assert result.basis == BASIS_PRIORS
        assert result.weights == pytest.approx({"cover": 0, "1": 0, "1B": 0, "4": 0, "7": 1 / 3, "8": 2 / 3})

    def test_priors_outside_the_filing_fall_back_to_uniform(self):
        result = score_items(["pensions"], COUNTS, TOTALS, n_chunks=CHUNKS, item_priors={"4": 1.0, "II-1": 1.0})
        assert result.basis == BASIS_UNIFORM  # Item 4 has no chunks, II-1 is a 10-Q Item
        assert result.weights["7"] == pytest.approx(0.25)

    def test_filing_without_counts(self):
        result = score_items(["capex"], {}, {}, n_chunks={"7": 3, "8": 5}, item_priors={"8": 1.0})
        assert result.basis == BASIS_PRIORS and result.weights == {"7": 0.0, "8": 1.0}

    def test_no_eligible_item(self):
        result = score_items(["capex"], {"8": {"capex": 1}}, {"8": 1}, n_chunks={"8": 0})
        assert result.weights == {"8": 0.0}

    def test_counts_basis(self):
        assert score_items(["capex"], COUNTS, TOTALS, n_chunks=CHUNKS).basis == BASIS_COUNTS

    def test_cluster_item_priors(self, tiny_lexicon):
        priors = cluster_item_priors(["revenue", "capex", "unknown"], tiny_lexicon, "10-K/A")
        assert priors == pytest.approx({"7": 1.0, "8": 1.5})
        assert cluster_item_priors(["revenue"], tiny_lexicon, "earnings_release") == {}

    def test_pre_2004_8k_items_share_the_current_items_prior(self):
        lexicon = Lexicon([TermCluster("results", "Results", "mdna", ("results",), {"8-K": ("2.02", "9.01")})])
        # An 8-K filed before August 2004 reports results under Item 12 and exhibits under Item 7.
        assert cluster_item_priors(["results"], lexicon, "8-K") == pytest.approx(
            {"2.02": 1.0, "12": 1.0, "9.01": 0.5, "7": 0.5}
        )


class TestAllocateBudget:
    def test_sums_to_k_for_random_weights(self):
        rng = random.Random(1234)
        for _ in range(2000):
            n = rng.randint(1, 25)
            weights = {
                f"item{i}": rng.choice([0.0, rng.random(), rng.random() * 1e-6, rng.random() * 1e6]) for i in range(n)
            }
            if not any(w > 0 for w in weights.values()):
                weights["item0"] = 1.0
            k = rng.randint(1, 60)
            budgets = allocate_budget(weights, k)
            assert sum(budgets.values()) == k
            assert all(b > 0 and weights[item] > 0 for item, b in budgets.items())
            total = sum(weights.values())
            for item, w in weights.items():  # largest remainder: every quota rounded down or up, never further
                assert abs(budgets.get(item, 0) - k * w / total) < 1.0

    def test_rounding_example(self):
        assert allocate_budget({"7": 0.46, "8": 0.34, "1": 0.2}, 5) == {"7": 2, "8": 2, "1": 1}
        assert allocate_budget({"7": 0.6, "8": 0.3, "1": 0.1}, 3) == {"7": 2, "8": 1}

    def test_ties_break_by_weight_then_order(self):
        assert allocate_budget({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1}
        assert allocate_budget({"c": 1, "b": 1, "a": 1}, 1) == {"c": 1}
        # Equal remainders (0.5 each): the larger weight wins.
        assert allocate_budget({"small": 1.0, "big": 3.0}, 2) == {"big": 2}
        assert allocate_budget({"a": 1.0, "b": 1.0, "big": 2.0}, 2) == {"big": 1, "a": 1}

    def test_keeps_input_order_and_drops_zeros(self):
        assert list(allocate_budget({"8": 0.1, "7": 0.9, "1": 0.0}, 10)) == ["8", "7"]

    def test_no_positive_weight(self):
        assert allocate_budget({}, 3) == {}
        assert allocate_budget({"a": 0.0}, 3) == {}

    @pytest.mark.parametrize("k", [0, -1, 2.5, True])
    def test_invalid_k(self, k):
        with pytest.raises(ValueError):
            allocate_budget({"a": 1.0}, k)


class TestExplain:
    def test_json_serializable(self, lexicon):
        terms = detect_query_clusters("What were capex and revenue in 2022?", lexicon)
        weights = item_weights(terms, COUNTS, TOTALS, n_chunks=CHUNKS)
        budgets = allocate_budget(weights, 5)
        explanation = explain(terms, weights, budgets, "relative", lexicon)
        assert json.loads(json.dumps(explanation)) == explanation
        assert explanation["clusters"] == {"capex": "Capital expenditures", "revenue": lexicon.cluster("revenue").name}
        assert explanation["terms"][0] == {"term": "capex", "cluster": "capex", "match_type": "exact", "text": "capex"}
        assert sum(explanation["budgets"].values()) == 5
        assert explanation["mode"] == "relative" and explanation["basis"] == "term_counts"

    def test_without_lexicon_names_are_ids(self):
        explanation = explain([QueryTerm("capex", "capex", "exact")], {"8": 1.0}, {"8": 2}, "log")
        assert explanation["clusters"] == {"capex": "capex"}


def _filing(filing_id: str, form: str = "10-K", counts=None, totals=None, chunks=None, sections=False) -> FilingStats:
    chunks = CHUNKS if chunks is None else chunks
    return FilingStats(
        filing_id,
        form,
        [{"item": item, "n_chunks": n} for item, n in chunks.items()],
        COUNTS if counts is None else counts,
        TOTALS if totals is None else totals,
        SECTION_COUNTS if sections else {},
        SECTION_TOTALS if sections else {},
    )


# The sections of Items 7 and 8 (headings below the Item title) with their counts: Item 7's revenue is concentrated
# in its results of operations, its capex in liquidity; Item 8's revenue in the revenue note.
SECTION_COUNTS = {
    "7": {
        "Overview": {"revenue": 4, "capex": 1},
        "Results of Operations": {"revenue": 20},
        "Liquidity and Capital Resources": {"capex": 5, "revenue": 2},
    },
    "8": {"NOTE 3: REVENUE": {"revenue": 25}, "NOTE 9: GOODWILL": {"goodwill": 30, "revenue": 1}},
}
SECTION_TOTALS = {
    "7": {"Overview": 60, "Results of Operations": 80, "Liquidity and Capital Resources": 40},
    "8": {"NOTE 3: REVENUE": 50, "NOTE 9: GOODWILL": 100},
}


class TestRouteSections:
    def test_only_sections_above_their_items_relative_frequency(self):
        item_score = relative_frequency(30, 300)  # Item 7's revenue: 30 / (300 + 10)
        routed = route_sections(["revenue"], SECTION_COUNTS["7"], SECTION_TOTALS["7"], item_score, 3)
        # Overview 4/70 and Liquidity 2/50 are below 30/310; the results of operations (20/90) get the whole budget.
        assert [(s.section, s.k, s.count, s.total) for s in routed] == [("Results of Operations", 3, 20, 80)]
        assert routed[0].score == pytest.approx(20 / 90)
        assert routed[0].to_dict() == {
            "section": "Results of Operations", "score": round(20 / 90, 6), "count": 20, "total": 80, "k": 3
        }  # fmt: skip

    def test_the_items_budget_is_split_by_score(self):
        item_score = relative_frequency(36, 300)  # revenue + capex in Item 7
        routed = route_sections(["revenue", "capex"], SECTION_COUNTS["7"], SECTION_TOTALS["7"], item_score, 3)
        # 20/90 and 7/50 share 3 passages by the largest remainder: 1.84 -> 2, 1.16 -> 1.
        assert [(s.section, s.k) for s in routed] == [
            ("Results of Operations", 2),
            ("Liquidity and Capital Resources", 1),
        ]
        # With one passage the smaller share rounds to nothing: at most k sections per Item.
        one = route_sections(["revenue", "capex"], SECTION_COUNTS["7"], SECTION_TOTALS["7"], item_score, 1)
        assert [(s.section, s.k) for s in one] == [("Results of Operations", 1)]

    def test_nothing_without_clusters_counts_or_budget(self):
        assert route_sections([], SECTION_COUNTS["7"], SECTION_TOTALS["7"], 0.0, 3) == []
        assert route_sections(["goodwill"], SECTION_COUNTS["7"], SECTION_TOTALS["7"], 0.0, 3) == []
        assert route_sections(["revenue"], {}, {}, 0.0, 3) == []
        assert route_sections(["revenue"], SECTION_COUNTS["7"], SECTION_TOTALS["7"], 0.0, 0) == []
        # Totals missing: the counts' sum (smoothing as for Items).
        routed = route_sections(["revenue"], {"Revenue": {"revenue": 5, "capex": 5}}, None, 0.0, 2)
        assert routed[0].total == 10 and routed[0].score == pytest.approx(5 / 20)

    def test_route_names_the_sections_of_budgeted_items(self, lexicon):
        decision = route("What was revenue?", [_filing("acme", sections=True)], 5, lexicon=lexicon)
        by_item = {b.item: b for b in decision.budgets}
        assert [(s.section, s.k) for s in by_item["7"].sections] == [("Results of Operations", by_item["7"].k)]
        assert [(s.section, s.k) for s in by_item["8"].sections] == [("NOTE 3: REVENUE", by_item["8"].k)]
        assert by_item["7"].to_dict()["sections"][0]["section"] == "Results of Operations"
        explained = json.loads(json.dumps(decision.explain(lexicon)))
        assert explained["sections"]["acme"]["8"][0]["section"] == "NOTE 3: REVENUE"
        # The Items' budgets are those of routing without sections.
        plain = route("What was revenue?", [_filing("acme", sections=True)], 5, lexicon=lexicon, sections=False)
        assert [(b.item, b.k) for b in plain.budgets] == [(b.item, b.k) for b in decision.budgets]
        assert all(b.sections == () for b in plain.budgets) and "sections" not in plain.explain(lexicon)

    def test_filing_without_section_statistics_routes_as_before(self, lexicon):
        decision = route("What was revenue?", [_filing("acme")], 5, lexicon=lexicon)
        assert all(b.sections == () and "sections" not in b.to_dict() for b in decision.budgets)
        assert "sections" not in decision.explain(lexicon)

    def test_uniform_mode_routes_no_section(self, lexicon):
        decision = route("What was revenue?", [_filing("acme", sections=True)], 5, mode="uniform", lexicon=lexicon)
        assert decision.budgets and all(b.sections == () for b in decision.budgets)

    def test_from_meta_reads_section_statistics(self):
        meta = {
            "filing_id": "acme",
            "section_term_counts": {"8": {"NOTE 3: REVENUE": {"revenue": "25"}}},
            "section_term_totals": {"8": {"NOTE 3: REVENUE": 50}},
        }
        stats = FilingStats.from_meta(meta)
        assert stats.section_term_counts == {"8": {"NOTE 3: REVENUE": {"revenue": 25}}}
        assert stats.section_term_totals == {"8": {"NOTE 3: REVENUE": 50}}
        assert FilingStats.from_meta({"filing_id": "x"}).section_term_counts == {}


class TestRoute:
    def test_single_filing_matches_item_weights(self, lexicon):
        decision = route("What was revenue?", [_filing("acme")], 5, lexicon=lexicon)
        expected = allocate_budget(item_weights(["revenue"], COUNTS, TOTALS, n_chunks=CHUNKS), 5)
        assert {b.item: b.k for b in decision.budgets} == expected
        assert sum(b.weight for b in decision.budgets) <= 1.0 + 1e-9
        assert json.loads(json.dumps(decision.explain(lexicon)))["budgets"] == {"acme": expected}

    def test_budget_split_across_filings_first(self, lexicon):
        filings = [_filing("acme-2023"), _filing("acme-2022"), _filing("acme-2021")]
        decision = route("What was revenue?", filings, 5, lexicon=lexicon)
        per_filing = {f.filing_id: f.k for f in decision.filings}
        assert per_filing == {"acme-2023": 2, "acme-2022": 2, "acme-2021": 1}
        assert sum(b.k for b in decision.budgets) == 5
        assert sum(b.weight for b in decision.budgets) <= 1.0 + 1e-9

    def test_fewer_units_than_filings_go_to_the_first(self, lexicon):
        decision = route("What was revenue?", [_filing("b"), _filing("a")], 1, lexicon=lexicon)
        assert [(b.filing_id, b.k) for b in decision.budgets] == [("b", 1)]

    def test_filing_weights(self, lexicon):
        filings = [_filing("a"), _filing("b")]
        decision = route("What was revenue?", filings, 4, lexicon=lexicon, filing_weights={"a": 1.0, "b": 3.0})
        assert {f.filing_id: f.k for f in decision.filings} == {"a": 1, "b": 3}

    def test_filing_without_chunks_gets_no_share(self, lexicon):
        empty = _filing("empty", chunks={"8": 0})
        decision = route("What was revenue?", [empty, _filing("acme")], 3, lexicon=lexicon)
        assert {b.filing_id for b in decision.budgets} == {"acme"}
        assert sum(b.k for b in decision.budgets) == 3

    def test_priors_used_when_filing_has_no_counts(self, tiny_lexicon):
        bare = _filing("bare", counts={}, totals={}, chunks={"1": 2, "7": 3, "8": 4})
        decision = route("capex?", [bare], 2, lexicon=tiny_lexicon)
        assert [(b.item, b.k) for b in decision.budgets] == [("8", 2)]
        assert decision.explain()["filings"][0]["basis"] == "item_priors"

    def test_no_filings(self, lexicon):
        decision = route("What was revenue?", [], 5, lexicon=lexicon)
        assert decision.budgets == [] and decision.filings == []

    def test_from_meta(self):
        meta = {
            "node_type": "filing",
            "filing_id": "acme",
            "form": "10-Q",
            "items": [{"item": "I-1", "n_chunks": 3, "start_page": 1}, {"item": "I-2", "n_chunks": 0}],
            "item_term_counts": {"I-1": {"revenue": 2}},
            "item_term_totals": {"I-1": 9},
        }
        stats = FilingStats.from_meta(meta)
        assert (stats.filing_id, stats.form, stats.n_chunks) == ("acme", "10-Q", {"I-1": 3, "I-2": 0})
        assert stats.item_term_totals == {"I-1": 9}
        assert FilingStats.from_meta({"filing_id": "x"}).item_term_counts == {}

    def test_invalid_k(self, lexicon):
        with pytest.raises(ValueError):
            route("revenue", [_filing("a")], 0, lexicon=lexicon)
