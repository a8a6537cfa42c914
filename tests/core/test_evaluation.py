"""Hand-computed cases for the retrieval metrics (synthetic text only, no FinanceBench content)."""

import json
from pathlib import Path

import pytest

from haystack_fin.core.evaluation import (
    Passage,
    Question,
    aggregate,
    load_questions,
    normalize_tokens,
    percentile,
    question_from_record,
    score_question,
)

DOC = "ACME_2020_10K"
OTHER = "ACME_2019_10K"


def make_question(evidence: list[str], gold_pages: set[int] | None = None, qtype: str = "t") -> Question:
    return Question("q1", DOC, qtype, "How much?", gold_pages if gold_pages is not None else {7}, evidence)


def passage(text: str, pages: list[int] | None = None, doc: str = DOC) -> Passage:
    return Passage(doc_name=doc, pages=pages if pages is not None else [1], text=text)


# --- normalization ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("1,577", ["1577"]),
        ("Sales of $1,234,567.89 rose", ["sales", "of", "1234567.89", "rose"]),
        ("3.5%", ["3.5"]),
        ("U.S.", ["u", "s"]),
        ("Widgets, gadgets; 4, 5", ["widgets", "gadgets", "4", "5"]),  # comma not inside a number
        ("(12.0) end.", ["12.0", "end"]),
        (".5 and 5.", ["5", "and", "5"]),  # a point needs digits on both sides
        ("Net\u00a0income\tNOTE", ["net", "income", "note"]),
        ("\ufb01scal \uff11\uff12", ["fiscal", "12"]),  # NFKC: ligature, full-width digits
        ("year-over-year e_g", ["year", "over", "year", "e", "g"]),
        ("Café", ["café"]),
        ("", []),
    ],
)
def test_normalize_tokens(text: str, tokens: list[str]) -> None:
    assert normalize_tokens(text) == tokens


# --- unigram recall ----------------------------------------------------------------------------------------------


def test_clipped_counts_with_multiplicity() -> None:
    # Snippet "a a a b c": 5 tokens. Context holds one "a", plus "b": matched = 1 + 1 = 2 -> 40%, not covered.
    question = make_question(["a a a b c"])
    assert score_question(question, [passage("a b x y")], ks=(1,))["evidence_recall@1"] == 0.0
    # Two "a" and "b": matched 3 of 5 = 60% exactly -> covered.
    assert score_question(question, [passage("a b a")], ks=(1,))["evidence_recall@1"] == 1.0


def test_sixty_percent_threshold_exact() -> None:
    question = make_question(["w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"])
    six = score_question(question, [passage("w1 w2 w3 w4 w5 w6")], ks=(1,))
    five = score_question(question, [passage("w1 w2 w3 w4 w5")], ks=(1,))
    assert six["evidence_recall@1"] == 1.0
    assert five["evidence_recall@1"] == 0.0


def test_recall_is_fraction_of_snippets_and_grows_with_k() -> None:
    question = make_question(["alpha beta gamma", "delta epsilon zeta", "eta theta iota"])
    passages = [passage("alpha beta gamma"), passage("delta epsilon"), passage("nothing here")]
    scores = score_question(question, passages, ks=(1, 2, 3))
    assert scores["evidence_recall@1"] == pytest.approx(1 / 3)
    assert scores["evidence_recall@2"] == pytest.approx(2 / 3)  # 2 of 3 tokens of snippet 2 = 67%
    assert scores["evidence_recall@3"] == pytest.approx(2 / 3)


def test_tokens_across_passages_are_concatenated() -> None:
    # Unigram coverage pools the top-k passages: each passage alone has 2 of 5 tokens, together 4 of 5.
    question = make_question(["p q r s t"])
    scores = score_question(question, [passage("p q"), passage("r s")], ks=(1, 2))
    assert scores["evidence_recall@1"] == 0.0
    assert scores["evidence_recall@2"] == 1.0


def test_normalization_applies_to_snippets_and_passages() -> None:
    question = make_question(["Revenue was $1,577 million in the U.S."])
    scores = score_question(question, [passage("REVENUE WAS 1577 MILLION IN THE U S")], ks=(1,))
    assert scores["evidence_recall@1"] == 1.0
    assert scores["evidence_recall_bigram@1"] == 1.0


# --- bigram recall -----------------------------------------------------------------------------------------------


def test_bigrams_do_not_span_passages() -> None:
    # Snippet bigrams: (a b) (b c) (c d) (d e) = 4. Passages "a b" | "c d" | "e" hold (a b) (c d) = 2 of 4 = 50%;
    # bigrams across the boundaries, (b c) and (d e), would make it 100%.
    question = make_question(["a b c d e"])
    scores = score_question(question, [passage("a b"), passage("c d"), passage("e")], ks=(3,))
    assert scores["evidence_recall@3"] == 1.0
    assert scores["evidence_recall_bigram@3"] == 0.0
    joined = score_question(question, [passage("a b c d e")], ks=(1,))
    assert joined["evidence_recall_bigram@1"] == 1.0
    # "a b c" | "d e": (a b) (b c) (d e) = 3 of 4 = 75%, covered without (c d).
    split = score_question(question, [passage("a b c"), passage("d e")], ks=(2,))
    assert split["evidence_recall_bigram@2"] == 1.0


def test_bigram_threshold_and_clipping() -> None:
    # Snippet "x y x y x y": bigrams (x y) x3, (y x) x2 = 5. Context "x y x y": (x y) x2, (y x) x1 -> 3 of 5 = 60%.
    question = make_question(["x y x y x y"])
    assert score_question(question, [passage("x y x y")], ks=(1,))["evidence_recall_bigram@1"] == 1.0
    # Context "x y z y x": (x y) (y z) (z y) (y x) -> matched 1 + 1 = 2 of 5 = 40%, although every unigram occurs.
    scores = score_question(question, [passage("x y z y x")], ks=(1,))
    assert scores["evidence_recall_bigram@1"] == 0.0
    assert scores["evidence_recall@1"] == 1.0  # unigram: x 2 of 3, y 2 of 3 -> 4 of 6 = 67%


def test_unigram_vs_bigram_word_order() -> None:
    question = make_question(["net income rose"])
    scores = score_question(question, [passage("rose income net")], ks=(1,))
    assert scores["evidence_recall@1"] == 1.0
    assert scores["evidence_recall_bigram@1"] == 0.0


def test_empty_snippets_are_skipped_and_no_snippet_gives_zero() -> None:
    # "$ %" has no tokens, "total" no bigrams: unigram recall over 2 snippets, bigram recall over 1.
    question = make_question(["$ %", "total", "cash flow"])
    scores = score_question(question, [passage("cash flow total")], ks=(1,))
    assert scores["evidence_recall@1"] == 1.0
    assert scores["evidence_recall_bigram@1"] == 1.0
    scores = score_question(question, [passage("cash")], ks=(1,))
    assert scores["evidence_recall@1"] == 0.0  # "total" 0 of 1, "cash flow" 1 of 2 = 50%
    nothing = make_question(["-- ; --"])
    scores = score_question(nothing, [passage("anything at all")], ks=(1,))
    assert scores["evidence_recall@1"] == 0.0
    assert scores["evidence_recall_bigram@1"] == 0.0


# --- filing, pages, words, mrr -----------------------------------------------------------------------------------


def test_wrong_filing_ignored_for_hits_and_recall_but_counted_in_context_words() -> None:
    question = make_question(["operating margin improved"], gold_pages={7})
    passages = [
        passage("operating margin improved", pages=[7], doc=OTHER),  # right page number, wrong filing
        passage("one two three four", pages=[3]),
        passage("operating margin improved", pages=[7]),
    ]
    scores = score_question(question, passages, ks=(1, 2, 3))
    assert scores["page_hit@1"] == 0.0
    assert scores["doc_hit@1"] == 0.0
    assert scores["evidence_recall@1"] == 0.0
    assert scores["evidence_recall_bigram@1"] == 0.0
    assert scores["context_words@1"] == 3.0
    assert scores["page_hit@2"] == 0.0
    assert scores["doc_hit@2"] == 1.0
    assert scores["context_words@2"] == 7.0
    assert scores["page_hit@3"] == 1.0
    assert scores["evidence_recall_bigram@3"] == 1.0
    assert scores["context_words@3"] == 10.0
    assert scores["mrr"] == pytest.approx(1 / 3)


def test_context_words_split_on_any_whitespace() -> None:
    question = make_question(["x"])
    scores = score_question(question, [passage("a\u00a0b\nc  d,e")], ks=(1,))
    assert scores["context_words@1"] == 4.0  # "a", "b", "c", "d,e"


def test_multi_page_passage_hits_any_gold_page() -> None:
    question = make_question(["x"], gold_pages={12, 40})
    scores = score_question(question, [passage("x", pages=[10, 11]), passage("x", pages=[11, 12])], ks=(1, 2))
    assert (scores["page_hit@1"], scores["page_hit@2"]) == (0.0, 1.0)


def test_mrr_rank_two() -> None:
    question = make_question(["x"], gold_pages={7})
    scores = score_question(question, [passage("x", pages=[6]), passage("x", pages=[7]), passage("x", pages=[7])])
    assert scores["mrr"] == 0.5


def test_mrr_rank_ten_and_beyond() -> None:
    question = make_question(["x"], gold_pages={7})
    misses = [passage("x", pages=[1]) for _ in range(9)]
    at_ten = score_question(question, [*misses, passage("x", pages=[7])], ks=(1,))
    assert at_ten["mrr"] == pytest.approx(0.1)
    at_eleven = score_question(question, [*misses, passage("x", pages=[1]), passage("x", pages=[7])], ks=(1, 20))
    assert at_eleven["mrr"] == 0.0
    assert at_eleven["page_hit@20"] == 1.0  # beyond the mrr cut-off but inside top-20


def test_no_passages_and_default_keys() -> None:
    scores = score_question(make_question(["x y"]), [])
    expected = (
        {
            f"{name}@{k}"
            for name in ("page_hit", "evidence_recall", "evidence_recall_bigram", "context_words", "doc_hit")
            for k in (1, 3, 5, 10)
        }
        | {"mrr"}
        | {f"evidence_complete@{k}" for k in (1, 3, 5, 10)}
    )
    assert set(scores) == expected
    assert all(value == 0.0 for value in scores.values())


def test_fewer_passages_than_k_uses_all() -> None:
    question = make_question(["a b"], gold_pages={2})
    scores = score_question(question, [passage("a b", pages=[2])], ks=(1, 5))
    assert scores["page_hit@5"] == scores["page_hit@1"] == 1.0
    assert scores["context_words@5"] == 2.0


def test_invalid_ks() -> None:
    with pytest.raises(ValueError):
        score_question(make_question(["x"]), [], ks=(0, 1))


# --- loading, aggregation, percentile ----------------------------------------------------------------------------


def test_load_questions(tmp_path: Path) -> None:
    records = [
        {
            "financebench_id": "id_1",
            "doc_name": DOC,
            "question_type": "metrics-generated",
            "question": "What was revenue?",
            "answer": "ignored",
            "evidence": [
                {"doc_name": DOC, "evidence_page_num": 4, "evidence_text": "first snippet"},
                {"doc_name": DOC, "evidence_page_num": 4, "evidence_text": "second snippet"},
                {"doc_name": OTHER, "evidence_page_num": 9, "evidence_text": "other filing"},
                {"evidence_page_num": 0, "evidence_text": "no doc name"},
            ],
        },
        {"financebench_id": "id_2", "doc_name": OTHER, "question_type": "domain-relevant", "question": "Why?"},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n", encoding="utf-8")
    first, second = load_questions(path)
    assert first == Question(
        "id_1",
        DOC,
        "metrics-generated",
        "What was revenue?",
        {5, 1},
        ["first snippet", "second snippet", "no doc name"],
    )
    assert second.gold_pages == set() and second.evidence_texts == []


def test_aggregate_overall_and_by_type() -> None:
    questions = [
        Question("a", DOC, "t1", "?", {1}, []),
        Question("b", DOC, "t1", "?", {1}, []),
        Question("c", DOC, "t2", "?", {1}, []),
        Question("unscored", DOC, "t3", "?", {1}, []),
    ]
    per_question = {
        "a": {"page_hit@1": 1.0, "mrr": 1.0},
        "b": {"page_hit@1": 0.0, "mrr": 0.5},
        "c": {"page_hit@1": 1.0, "mrr": 0.0},
    }
    result = aggregate(per_question, questions)
    assert result["overall"] == pytest.approx({"page_hit@1": 2 / 3, "mrr": 0.5})
    assert result["by_question_type"]["t1"] == pytest.approx({"page_hit@1": 0.5, "mrr": 0.75})
    assert result["by_question_type"]["t2"] == pytest.approx({"page_hit@1": 1.0, "mrr": 0.0})
    assert set(result["by_question_type"]) == {"t1", "t2"}
    assert result["counts"] == {"overall": 3, "t1": 2, "t2": 1}
    with pytest.raises(ValueError):
        aggregate({"zzz": {"mrr": 1.0}}, questions)
    with pytest.raises(ValueError):
        aggregate({"a": {"mrr": 1.0}, "b": {"page_hit@1": 1.0}}, questions)


def test_percentile_linear_interpolation() -> None:
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile(range(1, 21), 95) == pytest.approx(19.05)
    assert percentile([7.0], 95) == 7.0
    assert percentile([1, 2, 3], 0) == 1
    assert percentile([1, 2, 3], 100) == 3
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


# --- evidence completeness --------------------------------------------------------------------------


def test_evidence_complete_needs_every_gold_page_of_the_filing() -> None:
    question = make_question(["x"], gold_pages={3, 9})
    ranked = [passage("a", pages=[3]), passage("b", pages=[9], doc=OTHER), passage("c", pages=[8, 9])]
    scores = score_question(question, ranked, ks=(1, 2, 3))
    assert scores["page_hit@1"] == 1.0
    assert scores["evidence_complete@1"] == 0.0  # page 9 still missing
    assert scores["evidence_complete@2"] == 0.0  # page 9 of another filing does not count
    assert scores["evidence_complete@3"] == 1.0
    keys = list(scores)
    assert keys.index("mrr") < keys.index("evidence_complete@1")  # earlier keys keep their order


def test_evidence_roles_make_pages_of_one_role_alternatives() -> None:
    record = {
        "financebench_id": "q",
        "doc_name": DOC,
        "question": "What was capex as a share of revenue?",
        "evidence": [
            {"doc_name": DOC, "evidence_page_num": 40, "evidence_text": "revenue", "evidence_role": "revenue"},
            {"doc_name": DOC, "evidence_page_num": 60, "evidence_text": "revenue", "evidence_role": "revenue"},
            {"doc_name": DOC, "evidence_page_num": 62, "evidence_text": "capex", "evidence_role": "capex"},
        ],
    }
    question = question_from_record(record)
    assert question.evidence_roles == {"revenue": {41, 61}, "capex": {63}}
    ranked = [passage("a", pages=[61]), passage("b", pages=[63])]
    scores = score_question(question, ranked, ks=(1, 2))
    assert scores["evidence_complete@1"] == 0.0  # capex still missing
    assert scores["evidence_complete@2"] == 1.0  # one revenue page and the capex page: page 41 is not needed
    aggregated = aggregate({"q": scores}, [question])
    assert aggregated["evidence_pages_counts"] == {"1": 0, "2+": 1}  # two roles, not three pages


def test_evidence_complete_without_gold_pages_is_zero() -> None:
    scores = score_question(make_question(["x"], gold_pages=set()), [passage("x", pages=[1])], ks=(1,))
    assert scores["evidence_complete@1"] == 0.0


def test_aggregate_by_evidence_pages() -> None:
    questions = [
        Question("one", DOC, "t1", "?", {1}, []),
        Question("two", DOC, "t1", "?", {1, 2}, []),
        Question("three", DOC, "t2", "?", {1, 2, 3}, []),
        Question("none", DOC, "t2", "?", set(), []),
    ]
    per_question = {
        "one": {"evidence_complete@5": 1.0},
        "two": {"evidence_complete@5": 0.0},
        "three": {"evidence_complete@5": 1.0},
        "none": {"evidence_complete@5": 0.0},
    }
    result = aggregate(per_question, iter(questions))  # an iterator is read once only
    assert result["by_evidence_pages"] == {"1": {"evidence_complete@5": 1.0}, "2+": {"evidence_complete@5": 0.5}}
    assert result["evidence_pages_counts"] == {"1": 1, "2+": 2}
    assert result["overall"] == {"evidence_complete@5": 0.5}
    only_one = aggregate({"one": per_question["one"]}, questions)
    assert only_one["by_evidence_pages"] == {"1": {"evidence_complete@5": 1.0}, "2+": {}}


def test_score_candidates_counts_positions_of_every_filing_and_roles() -> None:
    from haystack_fin.core.evaluation import Passage, Question, score_candidates

    q = Question("q", "F", "t", "?", {3, 8, 9}, [], {"revenue": {3}, "capex": {8, 9}})
    other = [Passage("OTHER", [3], "") for _ in range(4)]  # another filing's page 3 takes slots, never counts
    cands = [*other, Passage("F", [3], ""), Passage("F", [1], ""), Passage("F", [9], "")]
    s = score_candidates(q, cands, (4, 5, 6))
    assert s["candidate_recall@4"] == 0.0 and s["candidate_recall@5"] == 1.0
    assert s["candidate_complete@6"] == 0.0 and s["candidate_complete@all"] == 1.0  # capex's page 9 is 7th
    assert s["n_candidates"] == 7.0
    assert score_candidates(Question("e", "F", "t", "?"), cands)["candidate_recall@all"] == 0.0
