"""Fallback scorer (dense + BM25 + table prior) and the two-stage budget helpers."""

import math
import random

import pytest

from haystack_fin.core.retrieval.bm25 import content_terms
from haystack_fin.core.retrieval.passage_scoring import (
    FallbackWeights,
    Passage,
    asks_for_number,
    dense_scores,
    drop_phrases,
    lexical_scores,
    query_cosines,
    score_passages,
)
from haystack_fin.core.retrieval.two_stage_selection import GroupBudget, even_split, group_budgets, two_stage_select

QUERY = "What was the FY2018 capital expenditure of 3M?"
Q_EMB = [1.0, 0.0, 0.0]

CAPEX = Passage(
    "Capital expenditures were $1.6 billion in 2018, up from 2017.", embedding=[0.9, 0.1, 0.0]
)  # terms + close
CAPEX_FAR = Passage("Capital expenditures are reviewed by the board.", embedding=[0.1, 0.9, 0.2])  # terms, far
CLOSE_ONLY = Passage("Investment in property and plant increased.", embedding=[0.8, 0.3, 0.1])  # close, no terms
NOISE = Passage("The company faces competition from other retailers.", embedding=[0.0, 0.2, 0.9])


class TestNumberCue:
    @pytest.mark.parametrize(
        "question",
        [
            "What is the FY2016 COGS for Microsoft?",
            "How much did Pepsico increase its revolving credit agreement?",
            "What is Netflix's total current liabilities (in USD millions)?",
            "capex as a % of revenue",
        ],
    )
    def test_asks_for_number(self, question: str) -> None:
        assert asks_for_number(question)

    @pytest.mark.parametrize(
        "question",
        ["Has Pepsico reported any materially important ongoing legal battles?", "Who is the CEO of Best Buy?"],
    )
    def test_does_not_ask_for_number(self, question: str) -> None:
        assert not asks_for_number(question)


class TestWeights:
    def test_defaults(self) -> None:
        assert FallbackWeights.from_dict(None) == FallbackWeights()

    def test_partial_override(self) -> None:
        w = FallbackWeights.from_dict({"table": 0})
        assert (w.dense, w.lexical, w.table) == (0.7, 0.3, 0.0)

    def test_unknown_key(self) -> None:
        with pytest.raises(ValueError, match="unknown fallback weight"):
            FallbackWeights.from_dict({"bm25": 1.0})

    @pytest.mark.parametrize("bad", [{"dense": -0.1}, {"lexical": math.nan}, {"dense": 0, "lexical": 0}])
    def test_invalid(self, bad: dict[str, float]) -> None:
        with pytest.raises(ValueError):
            FallbackWeights.from_dict(bad)


class TestScorePassages:
    def test_terms_and_close_embedding_rank_first(self) -> None:
        passages = [NOISE, CAPEX_FAR, CLOSE_ONLY, CAPEX]
        scores = [s.score for s in score_passages(QUERY, passages, Q_EMB)]
        assert max(range(4), key=scores.__getitem__) == 3
        assert scores[0] == min(scores)

    def test_scores_in_unit_interval(self) -> None:
        rng = random.Random(7)
        words = ["capital", "expenditure", "revenue", "2018", "board", "competition", "plant", "cash", "the", "of"]
        passages = [
            Passage(" ".join(rng.choices(words, k=rng.randint(0, 30))), [rng.uniform(-1, 1) for _ in range(3)])
            for _ in range(60)
        ]
        for s in score_passages(QUERY, passages, Q_EMB):
            assert 0.0 <= s.score <= 1.0
            assert s.dense is not None and 0.0 <= s.dense <= 1.0
            assert s.lexical is not None and 0.0 <= s.lexical <= 1.0

    def test_deterministic_and_order_independent(self) -> None:
        passages = [NOISE, CAPEX_FAR, CLOSE_ONLY, CAPEX]
        first = score_passages(QUERY, passages, Q_EMB)
        assert first == score_passages(QUERY, passages, Q_EMB)
        reversed_scores = score_passages(QUERY, passages[::-1], Q_EMB)[::-1]
        assert [s.score for s in reversed_scores] == pytest.approx([s.score for s in first])

    def test_without_embeddings_lexical_decides(self) -> None:
        scores = score_passages(QUERY, [NOISE, CLOSE_ONLY, CAPEX])
        assert all(s.dense is None for s in scores)
        assert scores[2].score > scores[1].score
        assert scores[2].lexical == 1.0

    def test_missing_passage_embedding_is_imputed_not_zeroed(self) -> None:
        no_emb = Passage(CAPEX.text)
        scores = score_passages(QUERY, [no_emb, CLOSE_ONLY, NOISE], Q_EMB, FallbackWeights(table=0))
        assert scores[0].dense is None
        assert scores[0].score == pytest.approx(scores[0].lexical)  # only the lexical signal is in use
        assert scores[0].score > scores[1].score

    def test_two_candidates_term_in_one(self) -> None:
        # rank-bm25's Okapi IDF is log(1.5/1.5) = 0 here; the Lucene IDF keeps the match visible.
        assert lexical_scores(["capex"], [["capex", "rose"], ["sales", "rose"]]) == [1.0, 0.0]

    def test_single_candidate(self) -> None:
        (s,) = score_passages(QUERY, [CAPEX], weights=FallbackWeights(table=0))
        assert s.score == 1.0

    def test_table_prior_caps_text_passages_for_numeric_questions(self) -> None:
        (s,) = score_passages(QUERY, [CAPEX])
        assert (s.lexical, s.table) == (1.0, 0.0)
        assert s.score == pytest.approx(0.3 / 0.6)  # lexical weight / (lexical + table)

    def test_stopword_only_query_keeps_scores_zero(self) -> None:
        scores = score_passages("what was the", [CAPEX, NOISE])
        assert [s.score for s in scores] == [0.0, 0.0]
        assert scores[0].lexical is None

    def test_empty(self) -> None:
        assert score_passages(QUERY, []) == []

    def test_dimension_mismatch(self) -> None:
        with pytest.raises(ValueError, match="same embedder"):
            query_cosines([1.0, 0.0], [[1.0, 0.0, 0.0]])

    def test_negative_cosine_clipped(self) -> None:
        raw = query_cosines([1.0, 0.0], [[-1.0, 0.0], [1.0, 1.0], None])
        assert dense_scores(raw) == [0.0, 1.0, None]

    def test_recorded_cosine_used_without_embedding(self) -> None:
        # A retriever's recorded cosine stands for the embedding; a passage without either has no dense signal.
        raw = query_cosines(None, [None, [1.0, 0.0], None], [0.5, None, None])
        assert raw == [0.5, None, None]
        assert query_cosines([1.0, 0.0], [None, [1.0, 0.0]], [0.5, None]) == [0.5, pytest.approx(1.0)]
        recorded = [Passage("capex", cosine=0.8), Passage("noise", cosine=0.4)]
        assert [s.dense for s in score_passages("capex", recorded)] == [1.0, 0.5]

    def test_table_prior_for_numeric_question(self) -> None:
        text = Passage("Capital expenditures in 2018 rose as we expanded plants and invested further.")
        table = Passage(
            "| | 2018 | 2017 |\n| Capital expenditures | (1,577) | (1,373) |",
            is_table=True,
            table_labels=["Capital expenditures", "Purchases of marketable securities", "2018", "2017"],
        )
        no_prior = score_passages(QUERY, [text, table], weights=FallbackWeights(table=0.0))
        with_prior = score_passages(QUERY, [text, table])
        assert no_prior[1].table is None
        assert with_prior[1].table == pytest.approx(3 / 5)  # capital, expenditure, 2018 of 5 terms
        assert with_prior[0].table == 0.0
        assert with_prior[1].score - with_prior[0].score > no_prior[1].score - no_prior[0].score

    def test_table_prior_off_for_non_numeric_question(self) -> None:
        table = Passage("| Legal proceedings |", is_table=True, table_labels=["Legal proceedings"])
        (s,) = score_passages("Is Pepsico involved in legal proceedings?", [table])
        assert s.table is None

    def test_table_prior_ignores_period_words_and_company_names(self) -> None:
        q = "What was Best Buy's revenue in the second quarter?"
        stores = Passage(
            "| Best Buy | 978 |", is_table=True, table_labels=["Best Buy", "Stores at end of second quarter"]
        )
        income = Passage("| Revenue | 9,583 |", is_table=True, table_labels=["Revenue", "Three months ended"])
        plain = score_passages(q, [stores, income])
        assert plain[0].table == pytest.approx(2 / 3)  # "best", "buy" of {best, buy, revenue}; period words aside
        scoped = score_passages(q, [stores, income], ignore_phrases=[["best", "buy"]])
        assert (scoped[0].table, scoped[1].table) == (0.0, 1.0)
        assert scoped[1].score > scoped[0].score

    def test_drop_phrases_cuts_runs_only(self) -> None:
        terms = content_terms("Bank of America deposits at bank branches")
        assert drop_phrases(terms, [content_terms("Bank of America"), []]) == ["deposit", "bank", "branch"]
        assert drop_phrases(["a", "b"], [["a", "b", "c"]]) == ["a", "b"]

    def test_statement_prior_lifts_blocks_of_the_asked_statement(self) -> None:
        q = "What were FY2018 capital expenditures according to the cash flow statement?"
        rows = "| Purchases of property and equipment | (1,577) | (1,373) |"
        cash_flow = Passage(rows, is_table=True, statement="cash_flow_statement")
        balance = Passage(rows, is_table=True, statement="balance_sheet")
        note = Passage(rows, is_table=True)
        asked = {"cash_flow_statement": 1.0}
        scored = score_passages(q, [cash_flow, balance, note], statements=asked)
        assert [s.statement for s in scored] == [1.0, 0.0, 0.0]
        assert scored[0].score > scored[1].score == pytest.approx(scored[2].score)
        # Not asked, or weight 0: the signal is left out altogether.
        assert score_passages(q, [cash_flow])[0].statement is None
        off = score_passages(q, [cash_flow], statements=asked, weights=FallbackWeights(statement=0.0))
        assert off[0].statement is None

    def test_section_prior_lifts_passages_under_the_questions_headings(self) -> None:
        q = "How did the effective tax rate change from 2021 to 2022?"
        text = "The effective tax rate was 21.0% in 2022 and 19.5% in 2021."
        in_note = Passage(text, section_path=("Item 8. Financial Statements", "NOTE 14: INCOME TAXES"))
        in_mdna = Passage(text, section_path=("Item 7. MD&A", "Liquidity"))
        asked = {"income tax": "effective_tax_rate"}
        scored = score_passages(q, [in_note, in_mdna], sections=asked)
        assert [s.section for s in scored] == [1.0, 0.0]
        assert scored[0].score > scored[1].score
        assert score_passages(q, [in_note])[0].section is None
        off = score_passages(q, [in_note], sections=asked, weights=FallbackWeights(section=0.0))
        assert off[0].section is None


class TestBudgets:
    def test_even_split_rounds_up(self) -> None:
        assert [even_split(5, n) for n in (1, 2, 3, 5, 10)] == [5, 3, 2, 1, 1]

    def test_even_split_when_no_meta(self) -> None:
        keys = [("f", "7"), ("f", "7"), ("f", "8"), ("g", "7")]
        budgets = group_budgets(keys, top_k=5)
        assert list(budgets) == [("f", "7"), ("f", "8"), ("g", "7")]
        assert {b.budget for b in budgets.values()} == {2}
        assert {b.source for b in budgets.values()} == {"even_split"}
        assert budgets[("f", "7")].n_candidates == 2

    def test_budget_k_from_meta_takes_group_max(self) -> None:
        keys = [("f", "7"), ("f", "7"), ("f", "8")]
        budgets = group_budgets(keys, top_k=4, meta_budgets=[3, None, None])
        assert budgets[("f", "7")] == GroupBudget(("f", "7"), 3, "meta", 2)
        assert budgets[("f", "8")] == GroupBudget(("f", "8"), 2, "even_split", 1)

    def test_invalid_meta_budget_ignored(self) -> None:
        budgets = group_budgets([("f", "7")], top_k=4, meta_budgets=[0])
        assert budgets[("f", "7")].source == "even_split"

    def test_stage1_top_k_overrides_meta(self) -> None:
        budgets = group_budgets([("f", "7"), ("f", "8")], top_k=4, meta_budgets=[3, 1], stage1_top_k=2)
        assert [(b.budget, b.source) for b in budgets.values()] == [(2, "stage1_top_k")] * 2

    def test_length_mismatch(self) -> None:
        with pytest.raises(ValueError):
            group_budgets([("f", "7")], top_k=4, meta_budgets=[1, 2])


class TestTwoStageSelect:
    def test_group_budgets_then_global_cut(self) -> None:
        # Item 7 holds the four best passages; its budget of 2 lets Item 8's best two compete in stage 2.
        scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3]
        keys = [("f", "7")] * 4 + [("f", "8")] * 3
        sel = two_stage_select(scores, keys, {("f", "7"): 2, ("f", "8"): 2}, top_k=3)
        assert [c.index for c in sel.selected] == [0, 1, 4]
        assert [c.stage1_rank for c in sel.selected] == [1, 2, 1]
        assert [c.stage2_rank for c in sel.selected] == [1, 2, 3]
        assert sel.kept_stage1 == {("f", "7"): 2, ("f", "8"): 2}
        assert sel.kept_stage2 == {("f", "7"): 2, ("f", "8"): 1}

    def test_ties_keep_original_rank(self) -> None:
        sel = two_stage_select([0.5, 0.7, 0.5, 0.5], [(None, None)] * 4, {(None, None): 4}, top_k=4)
        assert [c.index for c in sel.selected] == [1, 0, 2, 3]

    def test_budgets_can_return_fewer_than_top_k(self) -> None:
        sel = two_stage_select([0.9, 0.8, 0.7], [("f", "7")] * 3, {("f", "7"): 1}, top_k=3)
        assert [c.index for c in sel.selected] == [0]

    def test_accepts_group_budget_objects(self) -> None:
        keys = [("f", "7"), ("f", "7")]
        sel = two_stage_select([0.1, 0.2], keys, group_budgets(keys, top_k=1), top_k=1)
        assert [c.index for c in sel.selected] == [1]

    def test_length_mismatch(self) -> None:
        with pytest.raises(ValueError):
            two_stage_select([0.1], [], {}, top_k=1)


# Captions and headings of the Best Buy 10-Q fixture (tests/fixtures/bestbuy-10q-2023-07-29.pdf, pp. 4, 13, 16, 17).
MDNA = "Part I, Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations"
DOMESTIC = Passage(
    "Selected financial data for the Domestic segment was as follows ($ in millions): $ in millions | | Three Months "
    "Ended July 29, 2023 | | Revenue | 8,890",
    embedding=[0.95, 0.05, 0.0],
    is_table=True,
    table_labels=("Revenue", "Three Months Ended July 29, 2023"),
    section_path=(MDNA, "Segment Performance Summary"),
)
SEGMENT_NOTE = Passage(
    "Reportable segment and product category revenue information was as follows ($ in millions): | | Domestic | 8,890",
    embedding=[0.95, 0.05, 0.0],
    is_table=True,
    table_labels=("Revenue by reportable segment", "Domestic", "International", "Total revenue"),
    section_path=("Part I, Item 1. Financial Statements", "11. Segments"),
)
CONSOLIDATED = Passage(
    "Selected consolidated financial data was as follows ($ in millions): | | Three Months Ended July 29, 2023 | | "
    "Revenue | 9,583",
    embedding=[0.9, 0.1, 0.0],
    is_table=True,
    table_labels=("Revenue", "Three Months Ended July 29, 2023"),
    section_path=(MDNA, "Consolidated Results"),
)


def test_segment_specific_reads_the_heading_and_the_caption():
    from haystack_fin.core.retrieval.passage_scoring import segment_specific

    assert segment_specific(DOMESTIC)  # heading "Segment Performance Summary" and caption "the Domestic segment"
    assert segment_specific(SEGMENT_NOTE)  # note "11. Segments"
    assert not segment_specific(CONSOLIDATED)
    # The question names the segment: the Domestic table is its answer, not a part of it.
    domestic_caption_only = Passage(DOMESTIC.text, is_table=True, section_path=(MDNA, "Results"))
    assert not segment_specific(domestic_caption_only, content_terms("Domestic revenue in Q2"))
    assert segment_specific(domestic_caption_only, content_terms("Total revenue in Q2"))
    # A text chunk is read by its heading only: prose mentioning a segment is not a segment passage.
    prose = Passage("Revenue of the Domestic segment fell 7.1%.", section_path=(MDNA, "Overview"))
    assert not segment_specific(prose)


def test_consolidated_prior_puts_the_whole_before_its_parts_unless_a_segment_is_asked():
    from haystack_fin.core.retrieval.passage_scoring import names_segment

    query = "What was Best Buy's revenue in the second quarter?"
    passages = [DOMESTIC, SEGMENT_NOTE, CONSOLIDATED]
    on = score_passages(query, passages, Q_EMB, segment_question=False)
    assert [s.consolidated for s in on] == [0.0, 0.0, 1.0]
    assert max(range(3), key=lambda i: on[i].score) == 2
    # Off when the question names a segment (or is not analysed), or asks for no number.
    for flag in (True, None):
        assert all(s.consolidated is None for s in score_passages(query, passages, Q_EMB, segment_question=flag))
    assert all(
        s.consolidated is None for s in score_passages("Who audits Best Buy?", passages, Q_EMB, segment_question=False)
    )
    off = score_passages(query, passages, Q_EMB, FallbackWeights(consolidated=0.0), segment_question=False)
    assert max(range(3), key=lambda i: off[i].score) != 2  # without it, the closer segment tables win
    assert names_segment(["income_statement", "segments"]) and not names_segment(["income_statement"])
