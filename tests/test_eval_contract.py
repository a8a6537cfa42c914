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
