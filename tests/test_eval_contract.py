"""The eval JSON's per-question audit trail: the ranked (filing_id, pages) of the top 10 next to the
unchanged metric keys, and completeness by number of gold pages."""

from haystack import Document

from haystack_fin.core.evaluation import Question
from haystack_fin.evaluation_runner import _score

DOC = "ACME_2020_10K"


def test_per_question_lists_the_ranked_top_ten() -> None:
    questions = [Question("q1", DOC, "t", "?", {4, 5}, ["net sales"]), Question("q2", DOC, "t", "?", {2}, [])]
    ranked = [Document(content=f"p{i}", meta={"filing_id": DOC, "page_numbers": [i]}) for i in range(1, 13)]
    ranked.insert(1, Document(content="other", meta={"filing_id": "OTHER", "page_numbers": [4]}))

    def retrieve(q: Question) -> list[Document]:
        return ranked if q.financebench_id == "q1" else ranked[:1]

    result = _score(questions, retrieve, (1, 5, 10), True, "test")
    q1 = result["per_question"]["q1"]
    assert q1["top10"] == [[DOC, [1]], ["OTHER", [4]], *[[DOC, [i]] for i in range(2, 10)]]
    assert result["per_question"]["q2"]["top10"] == [[DOC, [1]]]
    # Top 5 holds pages 1-4 of the filing (page 4 of OTHER does not count): page 5 is missing.
    assert q1["page_hit@5"] == 1.0 and q1["evidence_complete@5"] == 0.0 and q1["evidence_complete@10"] == 1.0
    assert result["by_evidence_pages"]["2+"]["evidence_complete@10"] == 1.0
    assert result["by_evidence_pages"]["1"]["evidence_complete@10"] == 0.0
    assert result["evidence_pages_counts"] == {"1": 1, "2+": 1}
    assert "top10" not in result["overall"] and "counts" not in result


def test_candidates_are_scored_apart_from_the_ranking() -> None:
    """Candidate recall@N looks at the ranker's input in its order; the ranking's metrics are untouched."""
    from haystack_fin.core.evaluation import CANDIDATE_NS

    questions = [Question("q1", DOC, "t", "?", {7}, []), Question("q2", DOC, "u", "?", {3}, [])]
    ranked = [Document(content="x", meta={"filing_id": DOC, "page_numbers": [1]})]
    # q1's gold page is the 30th candidate, q2's is no candidate at all.
    pool = [Document(content="c", meta={"filing_id": DOC, "page_numbers": [100 + i]}) for i in range(60)]
    pool[29] = Document(content="gold", meta={"filing_id": DOC, "page_numbers": [7]})
    current: dict[str, list[Document]] = {}

    def retrieve(q: Question) -> list[Document]:
        current["pool"] = pool if q.financebench_id == "q1" else pool[:29]
        return ranked

    result = _score(questions, retrieve, (1, 5, 10), True, "test", candidates=lambda: current["pool"])
    rows = result["candidates"]["per_question"]
    assert CANDIDATE_NS == (20, 50, 100)
    assert rows["q1"]["candidate_recall@20"] == 0.0 and rows["q1"]["candidate_recall@50"] == 1.0
    assert rows["q1"]["candidate_recall@all"] == 1.0 and rows["q1"]["n_candidates"] == 60
    assert rows["q2"]["candidate_recall@all"] == 0.0 and rows["q2"]["n_candidates"] == 29
    assert result["candidates"]["overall"]["candidate_recall@50"] == 0.5
    assert set(result["candidates"]["by_question_type"]) == {"t", "u"}
    assert "candidate_recall@50" not in result["overall"]  # reported apart from the ranking
    assert "candidates" not in _score(questions, retrieve, (1, 5), True, "test")


def test_filings_are_found_as_pdf_or_html_across_folders(tmp_path) -> None:
    import pytest

    from haystack_fin.evaluation_runner import find_filings

    pdfs, html = tmp_path / "pdfs", tmp_path / "html"
    pdfs.mkdir()
    html.mkdir()
    (pdfs / "ACME_2020_10K.pdf").write_bytes(b"%PDF")
    (html / "acme-10-q-2021-05-01.html").write_text("<html></html>")
    (html / "ACME_2020_10K.html").write_text("<html></html>")  # the first folder's PDF wins
    found = find_filings(["ACME_2020_10K", "acme-10-q-2021-05-01"], [pdfs, html])
    assert found == [pdfs / "ACME_2020_10K.pdf", html / "acme-10-q-2021-05-01.html"]
    with pytest.raises(FileNotFoundError, match="NOPE_2020_10K"):
        find_filings(["ACME_2020_10K", "NOPE_2020_10K"], [pdfs, html])
