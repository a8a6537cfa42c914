"""The query side's one BM25: its terms (``content_terms``) and its scorer (``LuceneBM25``).

Both lexical signals of the query path use them: the tree search over an Item's leaves and summary nodes
(``tree_search.ItemTree``, one corpus per Item, so the IDF is the Item's) and the reranker's fallback scorer over
its candidate set (``passage_scoring.lexical_scores``).

* **Terms.** The lexicon's ``normalize_term`` (NFKC, plural folding, "&" -> "and"), so BM25 matches words the way
  the lexicon and FLAM do; thousands separators dropped ("1,234" is "1234"); function words and the boilerplate of
  analyst questions ("Base your judgments on the information provided primarily in ...") dropped; a fiscal token
  ("fy2018", "q22024") also yields its year, because statements label their columns with the bare year.
* **IDF.** Lucene's ``log(1 + (N - n + 0.5) / (n + 0.5))``, always positive. rank-bm25's Okapi IDF is 0 for a term in
  one of two documents and negative in more than half (then floored at an epsilon), which breaks on the few dozen
  candidates a reranker sees. Term frequency and length normalization are rank-bm25's Okapi (k1 1.5, b 0.75). Each
  query term counts once.

Until this module the tree search had a tokenizer of its own (letter runs and numbers, thousands separators
joined, no plural folding, a shorter stop list) and rank-bm25's IDF, and the reranker split "1,234" in two. The
switch, page_hit@5 / evidence_recall_bigram@5 / MRR, two BM25s -> one, same index and session:

* This version's bf16 dev index. FinanceBench dev single 0.974 / 0.842 / 0.795 -> 0.974 / 0.816 / 0.788 (one bigram:
  financebench_id_01328's page stays at rank 1, the rank-5 passage with its evidence words was replaced), shared
  0.868 / 0.763 / 0.744 -> 0.868 / 0.737 / 0.735 (doc_hit@5 0.974 -> 1.000). Analyst set single 0.931 / 0.735 /
  0.708 -> 0.931 / 0.734 / 0.710 (2 hits lost, 2 gained), shared 0.917 / 0.721 / 0.694 -> 0.931 / 0.736 / 0.696
  (2 lost, 4 gained).
* A float32 dev index (the indexing default on CPUs without native bf16; a fresh one of this version and an older
  one give the same top 10 for every question). Dev single 0.974 / 0.842 / 0.806 -> 0.921 / 0.763 / 0.777
  (financebench_id_00566 and 00685 lost), shared 0.868 / 0.763 / 0.755 -> 0.842 / 0.711 / 0.722 (00566). Analyst
  single 0.917 -> 0.924, shared 0.903 -> 0.917.
* Chosen after seeing both sets, among four ways to one BM25: the reranker's terms (which split "1,234") in the
  tree search with rank-bm25's IDF, with Lucene's IDF (these two on the bf16 index only), with Lucene's IDF and
  each query term once, and that with thousands separators dropped (shipped). Every one stayed within two page hits
  of the two BM25s per set and index. Net page hits over the eight runs of the last two: the shipped one -3 on the
  dev slice and +5 on the analyst set, the one before it -2 and -2. Earlier trials of each BM25 on the other's
  tokenizer (an older version) lost a dev question each.
"""

import math
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from rank_bm25 import BM25Okapi

from haystack_fin.core.lexicon import normalize_term, normalize_token, raw_tokens

__all__ = ["STOPWORDS", "LuceneBM25", "content_terms"]

# Question and function words. Analyst questions are long, and over a few dozen candidates (or one Item's chunks)
# such words get a non-trivial IDF.
STOPWORDS: frozenset[str] = frozenset(
    normalize_term(
        """a about above after again against all also am an and any are as at be been before being below between both
        but by can could did do does doing during each few for from further had has have having he her here hers how i
        if in into is it its itself just me more most my no nor not of off on once only or other our out over own
        please provide same she should so some such than that the their them then there these they this those through
        to too under until up very was we were what when where which while who whom why will with would you your
        based basing base judgments judgements answer respond response question information using use primarily"""
    ).split()
)
_FISCAL_TOKEN = re.compile(r"^(?:fy|q[1-4]|h[12])((?:19|20)\d\d)$")
# A thousands separator: a comma between a digit and exactly three digits ("items 3,4" is a list). Dropped, so that
# "1,234,567" is one term as "1234567" in a question is, not three terms that match every "234" and make a table of
# numbers look three times as long as its prose neighbours to BM25's length normalization.
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def content_terms(text: str) -> list[str]:
    """Normalized content terms of ``text`` in order (duplicates kept): lexicon normalization, thousands separators
    and stopwords dropped.

    A fiscal token such as "fy2018" or "q22024" also yields its year ("2018"), because statements label columns
    with the bare year.
    """
    return list(_content_terms(text))


@lru_cache(maxsize=4096)
def _content_terms(text: str) -> tuple[str, ...]:
    # Cached (a few MB at most): the same chunks come back for many questions. Per raw token through a second cache,
    # because the tree search tokenizes every chunk of an Item the first time it searches it.
    terms: list[str] = []
    for raw in raw_tokens(_THOUSANDS.sub("", text) if "," in text else text):
        terms.extend(_token_terms(raw))
    return tuple(terms)


@lru_cache(maxsize=262_144)
def _token_terms(raw: str) -> tuple[str, ...]:
    terms: list[str] = []
    for token in normalize_token(raw):
        if token in STOPWORDS:
            continue
        terms.append(token)
        if token[-1].isdigit() and token[0] in "fqh":
            year = _FISCAL_TOKEN.match(token)
            if year:
                terms.append(year.group(1))
    return tuple(terms)


class LuceneBM25(BM25Okapi):  # type: ignore[misc]  # rank_bm25 has no type information: its classes are Any
    """rank-bm25's Okapi BM25 over ``content_terms`` documents, with Lucene's always-positive IDF.

    The IDF of a term is computed the first time a query asks for it: an Item's corpus is built once and asked
    many times, a candidate set once, and neither needs the log of every word. Entries are only ever added, each
    with its one value, so concurrent queries on a shared index are safe.

    >>> bm25 = LuceneBM25([["capex", "rose"], ["sale", "rose"]])
    >>> [round(s, 3) for s in bm25.scores(["capex"])]
    [0.693, 0.0]
    """

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self._doc_counts = nd
        self.idf: dict[str, float] = {}

    def knows(self, term: str) -> bool:
        """Whether any document has ``term``."""
        return term in self._doc_counts

    def scores(self, query_terms: Sequence[str], rows: Sequence[int] | None = None) -> np.ndarray:
        """BM25 of the query's terms, each counted once (a question that says "working capital" twice asks about it
        once), for every document or for ``rows`` only."""
        n = self.corpus_size
        terms = [t for t in dict.fromkeys(query_terms) if t in self._doc_counts]
        for term in terms:
            if term not in self.idf:
                count = self._doc_counts[term]
                self.idf[term] = math.log(1.0 + (n - count + 0.5) / (count + 0.5))
        if rows is None:
            return np.asarray(self.get_scores(terms), dtype=np.float64)
        return np.asarray(self.get_batch_scores(terms, list(rows)), dtype=np.float64)
