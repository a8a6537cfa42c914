"""The query side's one BM25: content terms and the Lucene-IDF scorer, shared by the tree search and the reranker."""

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from haystack_fin.core.retrieval.bm25 import LuceneBM25, content_terms


class TestContentTerms:
    def test_drop_question_words_and_fold_plurals(self) -> None:
        assert content_terms("What were the capital expenditures?") == ["capital", "expenditure"]

    def test_fiscal_token_also_yields_its_year(self) -> None:
        assert content_terms("FY2018 revenue") == ["fy2018", "2018", "revenue"]
        assert content_terms("Q2 2024 and Q22024") == ["q2", "2024", "q22024", "2024"]

    def test_thousands_separators_dropped_lists_kept(self) -> None:
        assert content_terms("Total debt of $1,234,567 (2.45 per share), Items 3,4") == [
            "total", "debt", "1234567", "2", "45", "per", "share", "item", "3", "4",
        ]  # fmt: skip

    def test_lexicon_normalization(self) -> None:
        # The same normalization as the lexicon's: "&" and possessives, plural folding.
        assert content_terms("Property, Plant & Equipment of the Company's segments") == [
            "property", "plant", "equipment", "company", "segment",
        ]  # fmt: skip

    def test_analyst_boilerplate_dropped(self) -> None:
        terms = content_terms("Base your judgments on the information primarily in the cash flow statement.")
        assert terms == ["cash", "flow", "statement"]


class TestLuceneBM25:
    def test_term_in_one_of_two_documents_scores(self) -> None:
        # rank-bm25's Okapi IDF is log(1.5 / 1.5) = 0 here; Lucene's is log(2).
        scores = LuceneBM25([["capex", "rose"], ["sale", "rose"]]).scores(["capex"])
        assert scores[0] == pytest.approx(math.log(2.0)) and scores[1] == 0.0

    def test_term_in_most_documents_stays_positive(self) -> None:
        bm25 = LuceneBM25([["revenue", "rose"], ["revenue", "fell"], ["revenue"], ["capex"]])
        assert all(s > 0 for s in bm25.scores(["revenue"])[:3])

    def test_rows_score_like_the_whole_corpus(self) -> None:
        corpus = [["capex", "capex", "rose"], ["capex", "plant"], ["sale"], ["capex"] + ["word"] * 20]
        bm25 = LuceneBM25(corpus)
        full = bm25.scores(["capex", "plant"])
        np.testing.assert_allclose(bm25.scores(["capex", "plant"], [3, 1]), full[[3, 1]])
        assert full[1] > full[0] > full[3] > full[2] == 0.0  # the plant match, then term frequency and length

    def test_repeated_query_term_counts_once(self) -> None:
        bm25 = LuceneBM25([["capex"], ["sale"]])
        assert bm25.scores(["capex", "capex"]).tolist() == bm25.scores(["capex"]).tolist()

    def test_unknown_terms(self) -> None:
        bm25 = LuceneBM25([["capex"], ["sale"]])
        assert bm25.knows("capex") and not bm25.knows("goodwill")
        assert bm25.scores(["goodwill"]).tolist() == [0.0, 0.0]
        assert bm25.scores([]).tolist() == [0.0, 0.0]

    def test_concurrent_queries_agree(self) -> None:
        # One Item's index serves concurrent requests; IDF entries are filled on first use.
        corpus = [[f"w{(i * j) % 50}" for j in range(30)] for i in range(40)]
        queries = [[f"w{q}", f"w{(q * 7) % 50}"] for q in range(50)]
        expected = [LuceneBM25(corpus).scores(q) for q in queries]
        shared = LuceneBM25(corpus)
        with ThreadPoolExecutor(8) as pool:
            got = list(pool.map(shared.scores, queries))
        for e, g in zip(expected, got, strict=True):
            np.testing.assert_allclose(g, e)
