"""Retrieval metrics against FinanceBench evidence, exactly as defined in docs/evaluation.md.

Plain typed Python (no Haystack, no numpy). A retriever under test hands ``score_question`` its ranked passages
(list order is rank order; ``score`` is informational only); ``aggregate`` averages per-question scores overall and
per question_type.

Decisions the definitions leave open:
- Gold pages and evidence snippets come only from evidence items of the question's own filing (an item without a
  doc_name counts as the question's filing); items naming another filing are dropped, since passages from other
  filings never count for hit or recall.
- Snippets without tokens (unigram recall) or without bigrams (bigram recall, i.e. fewer than two tokens) are
  skipped. A question with no scorable snippet gets evidence recall 0.
- "At least 60%" is compared in integers (5 * matched >= 3 * total), so the threshold is exact.
- Fewer than k passages: top-k is all of them.
- evidence_complete@k: 1 when every gold page is covered by a top-k passage of the question's filing; a question
  without gold pages gets 0 (nothing to be complete about, like recall without snippets). Where the evidence items
  name an ``evidence_role`` (what the page supplies: "revenue FY2022", "capex FY2022"), pages of one role are
  alternatives and the evidence is complete when every role has a covered page; ``by_evidence_pages`` then groups
  questions by their number of roles.
"""

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from haystack_fin.core.validation import check_int

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
CANDIDATE_NS: tuple[int, ...] = (20, 50, 100)  # candidate recall@N: the first N of the ranker's input
MRR_CUTOFF = 10  # mrr looks at the top 10 only
COVERAGE_NUM, COVERAGE_DEN = 3, 5  # a snippet is covered at >= 60% of its tokens (or bigrams)

_NUMBER_COMMA = re.compile(r"(?<=\d),(?=\d)")
_STRAY_POINT = re.compile(r"(?<!\d)\.|\.(?!\d)")  # a "." that is not between two digits


class _KeepTable(dict[int, int]):
    """str.translate table: letters, digits and "." stay, every other character becomes a space (cached)."""

    def __missing__(self, codepoint: int) -> int:
        char = chr(codepoint)
        value = codepoint if (char.isalpha() or char.isdigit() or char == ".") else 0x20
        self[codepoint] = value
        return value


_KEEP_TABLE = _KeepTable()


def normalize_tokens(text: str) -> list[str]:
    """Tokens per evaluation.md: NFKC, lowercase, "1,577" -> "1577", non-letter/digit -> space, split.

    A decimal point survives only between two digits ("3.5%" -> ["3.5"], "U.S." -> ["u", "s"]).
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = _NUMBER_COMMA.sub("", text)
    text = text.translate(_KEEP_TABLE)
    text = _STRAY_POINT.sub(" ", text)
    return text.split()


def _bigrams(tokens: Sequence[str]) -> list[tuple[str, str]]:
    return list(pairwise(tokens))


@dataclass
class Passage:
    """One retrieved passage: its filing, the 1-based physical PDF pages it covers and the text a reader gets."""

    doc_name: str
    pages: list[int]
    text: str
    score: float = 0.0


@dataclass
class Question:
    """A FinanceBench question with gold pages (1-based) and evidence snippets of its own filing."""

    financebench_id: str
    doc_name: str
    question_type: str
    question: str
    gold_pages: set[int] = field(default_factory=set)
    evidence_texts: list[str] = field(default_factory=list)
    # role -> its gold pages, when the evidence items name roles (pages of one role are alternatives)
    evidence_roles: dict[str, set[int]] = field(default_factory=dict)

    def required_pages(self) -> list[set[int]]:
        """What complete evidence needs: one page of each set (each role's pages, or each gold page alone)."""
        if self.evidence_roles:
            return list(self.evidence_roles.values())
        return [{page} for page in sorted(self.gold_pages)]


def question_from_record(record: Mapping[str, Any]) -> Question:
    """Build a Question from one FinanceBench JSONL record (evidence_page_num is 0-based)."""
    doc_name = str(record["doc_name"])
    gold_pages: set[int] = set()
    evidence_texts: list[str] = []
    roles: dict[str, set[int]] = {}
    for item in record.get("evidence") or []:
        if item.get("doc_name", doc_name) != doc_name:
            continue
        if item.get("evidence_page_num") is not None:
            page = int(item["evidence_page_num"]) + 1
            gold_pages.add(page)
            if item.get("evidence_role"):
                roles.setdefault(str(item["evidence_role"]), set()).add(page)
        evidence_texts.append(str(item.get("evidence_text") or ""))
    return Question(
        financebench_id=str(record["financebench_id"]),
        doc_name=doc_name,
        question_type=str(record.get("question_type") or ""),
        question=str(record["question"]),
        gold_pages=gold_pages,
        evidence_texts=evidence_texts,
        evidence_roles=roles,
    )


def load_questions(path: str | Path) -> list[Question]:
    """Read FinanceBench questions from a JSONL file (blank lines ignored), in file order."""
    questions: list[Question] = []
    with Path(path).open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                questions.append(question_from_record(json.loads(line)))
    return questions


def _recall(snippets: Sequence[Counter[Any]], context: Counter[Any]) -> float:
    """Fraction of non-empty snippets with >= 60% of their items (clipped counts) in ``context``; 0 if none."""
    scorable = [s for s in snippets if s]
    if not scorable:
        return 0.0
    covered = 0
    for snippet in scorable:
        total = sum(snippet.values())
        matched = sum(min(count, context[item]) for item, count in snippet.items())
        if COVERAGE_DEN * matched >= COVERAGE_NUM * total:
            covered += 1
    return covered / len(scorable)


def score_question(question: Question, passages: Sequence[Passage], ks: Iterable[int] = DEFAULT_KS) -> dict[str, float]:
    """Per-question metrics for ranked ``passages`` (best first).

    Keys, for each k: page_hit@k, evidence_recall@k, evidence_recall_bigram@k, context_words@k, doc_hit@k; plus
    mrr; then evidence_complete@k for each k. Hit, recall, completeness and mrr consider only passages of the
    question's filing; context_words counts every passage.
    """
    ks = sorted(set(ks))
    if not ks:
        raise ValueError("ks must name at least one cut-off")
    for k in ks:
        check_int("each of ks", k)
    required = question.required_pages()

    snippet_tokens = [normalize_tokens(text) for text in question.evidence_texts]
    snippet_unigrams = [Counter(tokens) for tokens in snippet_tokens]
    snippet_bigrams = [Counter(_bigrams(tokens)) for tokens in snippet_tokens]

    # Walk the ranking once, accumulating the top-k state and reading it off at each k.
    unigrams: Counter[str] = Counter()
    bigrams: Counter[tuple[str, str]] = Counter()
    words = 0
    page_hit = doc_hit = False
    covered: set[int] = set()  # gold pages covered so far
    mrr = 0.0
    at_k: dict[int, dict[str, float]] = {}
    depth = max(ks[-1], MRR_CUTOFF)
    for rank in range(1, depth + 1):
        if rank <= len(passages):
            passage = passages[rank - 1]
            in_filing = passage.doc_name == question.doc_name
            covers_gold = in_filing and not question.gold_pages.isdisjoint(passage.pages)
            if covers_gold and mrr == 0.0 and rank <= MRR_CUTOFF:
                mrr = 1.0 / rank
            if rank <= ks[-1]:
                words += len(passage.text.split())
                doc_hit = doc_hit or in_filing
                page_hit = page_hit or covers_gold
                if covers_gold:
                    covered |= question.gold_pages.intersection(passage.pages)
                if in_filing:
                    tokens = normalize_tokens(passage.text)
                    unigrams.update(tokens)
                    bigrams.update(_bigrams(tokens))  # bigrams stay inside one passage
        if rank in ks:
            at_k[rank] = {
                "page_hit": float(page_hit),
                "evidence_recall": _recall(snippet_unigrams, unigrams),
                "evidence_recall_bigram": _recall(snippet_bigrams, bigrams),
                "context_words": float(words),
                "doc_hit": float(doc_hit),
                "evidence_complete": float(bool(required) and all(not covered.isdisjoint(r) for r in required)),
            }

    scores: dict[str, float] = {}
    for name in ("page_hit", "evidence_recall", "evidence_recall_bigram", "context_words", "doc_hit"):
        for k in ks:
            scores[f"{name}@{k}"] = at_k[k][name]
    scores["mrr"] = mrr
    # After mrr, so the keys every earlier run wrote keep their order.
    for k in ks:
        scores[f"evidence_complete@{k}"] = at_k[k]["evidence_complete"]
    return scores


def score_candidates(
    question: Question, candidates: Sequence[Passage], ns: Iterable[int] = CANDIDATE_NS
) -> dict[str, float]:
    """Candidate generation apart from the ranking: what the ranker was given to choose from, in its input order.

    Keys: candidate_recall@N (a candidate among the first N covers a gold page of the question's filing; positions
    count candidates of every filing, since they all take the ranker's slots), candidate_recall@all,
    candidate_complete@N and @all (every role's or gold page's set covered, as evidence_complete), n_candidates.
    A question without gold pages scores 0.
    """
    ns = sorted(set(ns))
    for n in ns:
        check_int("each candidate cut-off", n)
    required = question.required_pages()
    covered: set[int] = set()
    first_hit: int | None = None
    covered_at: dict[int, set[int]] = {}
    for rank, passage in enumerate(candidates, start=1):
        if passage.doc_name == question.doc_name:
            found = question.gold_pages.intersection(passage.pages)
            if found and first_hit is None:
                first_hit = rank
            covered |= found
        for n in ns:
            if rank == n:
                covered_at[n] = set(covered)
    scores: dict[str, float] = {}
    for n in ns:
        scores[f"candidate_recall@{n}"] = float(first_hit is not None and first_hit <= n)
    scores["candidate_recall@all"] = float(first_hit is not None)
    for n in ns:
        pages = covered_at.get(n, covered)
        scores[f"candidate_complete@{n}"] = float(bool(required) and all(not pages.isdisjoint(r) for r in required))
    scores["candidate_complete@all"] = float(bool(required) and all(not covered.isdisjoint(r) for r in required))
    scores["n_candidates"] = float(len(candidates))
    return scores


def _mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {key: sum(row[key] for row in rows) / len(rows) for key in rows[0]}


def aggregate(per_question: Mapping[str, Mapping[str, float]], questions: Iterable[Question]) -> dict[str, Any]:
    """Average per-question scores (keyed by financebench_id) overall and per question_type.

    Returns {"overall": {metric: mean}, "by_question_type": {type: {metric: mean}},
    "by_evidence_pages": {"1": {metric: mean}, "2+": {metric: mean}}, "counts": {"overall": n, type: n}}
    (``by_evidence_pages`` groups by the number of gold pages, or of evidence roles where the set labels them;
    questions without gold pages are in neither group,
    an empty group is ``{}``; ``evidence_pages_counts`` gives the group sizes). Questions without scores are
    ignored; scores for an unknown id or with a different set of metric keys raise ValueError.
    """
    questions = list(questions)  # read twice below
    types = {q.financebench_id: q.question_type for q in questions}
    rows = list(per_question.items())
    unknown = [qid for qid, _ in rows if qid not in types]
    if unknown:
        raise ValueError(f"scores for unknown questions: {unknown}")
    if not rows:
        return {
            "overall": {},
            "by_question_type": {},
            "by_evidence_pages": {"1": {}, "2+": {}},
            "evidence_pages_counts": {"1": 0, "2+": 0},
            "counts": {"overall": 0},
        }
    keys = set(rows[0][1])
    if any(set(scores) != keys for _, scores in rows):
        raise ValueError("all questions must have the same metric keys")

    by_type: dict[str, list[Mapping[str, float]]] = {}
    for qid, scores in rows:
        by_type.setdefault(types[qid], []).append(scores)
    counts: dict[str, int] = {"overall": len(rows)}
    counts.update({qtype: len(group) for qtype, group in sorted(by_type.items())})
    n_gold = {q.financebench_id: len(q.required_pages()) for q in questions}
    by_pages: dict[str, list[Mapping[str, float]]] = {"1": [], "2+": []}
    for qid, scores in rows:
        if n_gold[qid] >= 1:
            by_pages["1" if n_gold[qid] == 1 else "2+"].append(scores)
    return {
        "overall": _mean_scores([scores for _, scores in rows]),
        "by_question_type": {qtype: _mean_scores(group) for qtype, group in sorted(by_type.items())},
        "by_evidence_pages": {name: _mean_scores(group) if group else {} for name, group in by_pages.items()},
        "evidence_pages_counts": {name: len(group) for name, group in by_pages.items()},
        "counts": counts,
    }


def percentile(values: Iterable[float], q: float) -> float:
    """q-th percentile (0..100) by linear interpolation between closest ranks (numpy's default "linear").

    p50 of [1, 2, 3, 4] is 2.5; p95 of 1..20 is 19.05. Raises ValueError on no values or q outside 0..100.
    """
    data = sorted(values)
    if not data:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    position = (len(data) - 1) * q / 100
    lower = int(position)
    upper = min(lower + 1, len(data) - 1)
    return data[lower] + (data[upper] - data[lower]) * (position - lower)
