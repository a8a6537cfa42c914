"""The order in which candidates reach the ranker: sources take turns, and so do the filings within a source."""

from haystack_fin.core.retrieval.candidates import Candidate, CandidatePool


def candidate(chunk_id: str, filing_id: str, mode: str, score: float = 0.0) -> Candidate:
    retrieval = {"mode": mode} if mode != "tree" else {"mode": "summary_tree", "trees": ["summary"]}
    return Candidate(chunk_id, filing_id, score, None, retrieval, 5)


def test_sources_and_filings_take_turns():
    pool = CandidatePool()
    # a 10-K's statement blocks were added before the release's; the release's first block is not behind them all
    for n in range(3):
        pool.offer(candidate(f"k-s{n}", "CO_2022_10K", "statement"))
    pool.offer(candidate("r-s0", "CO_2022Q4_EARNINGS", "statement"))
    pool.offer(candidate("k-t0", "CO_2022_10K", "tree", 0.9))
    pool.offer(candidate("k-t1", "CO_2022_10K", "tree", 0.8))
    pool.offer(candidate("r-t0", "CO_2022Q4_EARNINGS", "tree", 0.1))
    order = [c.chunk_id for c in pool.ranked()]
    assert order == ["k-t0", "k-s0", "r-t0", "r-s0", "k-t1", "k-s1", "k-s2"]


def test_one_filing_keeps_each_sources_own_order():
    pool = CandidatePool()
    pool.offer(candidate("a", "F", "tree", 0.2))
    pool.offer(candidate("b", "F", "tree", 0.7))
    pool.offer(candidate("c", "F", "heading"))
    pool.offer(candidate("d", "F", "heading"))
    pool.offer(candidate("b", "F", "tree", 0.1))  # a lower score for a held chunk changes nothing
    assert [c.chunk_id for c in pool.ranked()] == ["b", "c", "a", "d"]
