"""The order in which candidates reach the ranker: sources take turns, and so do the filings within a source; the
page neighbours of the first candidates."""

from haystack_fin.core.retrieval.candidates import (
    SOURCE_ORDER,
    Candidate,
    CandidatePool,
    FilingState,
    add_neighbour_candidates,
    candidate_source,
    page_neighbours,
)
from haystack_fin.core.retrieval.ranking_model import SOURCES


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


def _filing(chunks: list[tuple[str, list[int], list[str]]], tables: tuple[int, ...] = ()) -> FilingState:
    """A filing of chunks in this order: (Item, pages, section path below the Item title); text but ``tables``."""
    meta = {
        f"F_{n:04d}": {
            "item": item,
            "page_numbers": pages,
            "section_path": [f"Item {item}.", *path],
            "modality": "table" if n in tables else "text",
        }
        for n, (item, pages, path) in enumerate(chunks)
    }
    return FilingState.build("F", None, [], meta)


def test_page_neighbours_continue_the_heading_over_the_page_break():
    filing = _filing([
        ("7", [40], ["Results of Operations"]),
        ("7", [41], ["Results of Operations", "Gross Margin"]),  # a deeper heading starts on the page before
        ("7", [42], ["Results of Operations"]),
        ("7", [42], ["Results of Operations"]),
        ("7", [43], ["Results of Operations", "Income Taxes"]),
        ("7", [44], ["Liquidity"]),
    ])  # fmt: skip
    # the nearest chunk on each neighbouring page, walking past the seed's own page
    assert page_neighbours(filing, "F_0002") == [("F_0001", "previous"), ("F_0004", "next")]
    assert page_neighbours(filing, "F_0003") == [("F_0001", "previous"), ("F_0004", "next")]
    # another first heading (or Item) ends the walk
    assert page_neighbours(filing, "F_0004") == [("F_0003", "previous")]
    assert page_neighbours(filing, "F_0005") == []


def test_page_neighbours_are_prose():
    mdna = ["Results of Operations"]
    filing = _filing(
        [("7", [40], mdna), ("7", [41], mdna), ("7", [41], mdna), ("7", [41], mdna), ("7", [42], mdna)],
        tables=(1, 3, 4),
    )
    assert page_neighbours(filing, "F_0000") == [("F_0002", "next")]  # past the table on the next page
    assert page_neighbours(filing, "F_0002") == [("F_0000", "previous")]  # page 42 holds only a table
    assert page_neighbours(filing, "F_0001") == []  # a table has no continuation


def test_page_neighbours_stop_at_a_gap_of_pages():
    filing = _filing([("8", [60], ["Note 7"]), ("8", [62], ["Note 7"]), ("8", [], ["Note 7"])])
    assert page_neighbours(filing, "F_0000") == []  # page 61 holds no chunk of the note
    assert page_neighbours(filing, "F_0002") == []  # a chunk without pages has no neighbouring page


def test_neighbour_candidates_follow_the_first_candidates_only():
    filing = _filing([("7", [p], ["MD&A"]) for p in range(10, 16)])
    pool = CandidatePool()
    pool.offer(candidate("F_0002", "F", "tree", 0.9))
    pool.offer(candidate("F_0004", "F", "heading"))
    added = add_neighbour_candidates(pool, {"F": filing}, {}, seeds=1)
    assert added == ["F_0001", "F_0003"]  # the heading's chunk is the second in turn: not a seed
    assert [pool.by_id[c].retrieval for c in added] == [
        {"mode": "neighbour", "of": "F_0002", "direction": "previous"},
        {"mode": "neighbour", "of": "F_0002", "direction": "next"},
    ]
    assert candidate_source(pool.by_id["F_0001"].retrieval) == "neighbour"
    # a chunk already a candidate is not offered again; a filter's refusal is respected
    more = add_neighbour_candidates(pool, {"F": filing}, {}, seeds=3, allowed={"F": {"F_0005"}})
    assert more == ["F_0005"]


def test_every_source_is_a_feature_of_the_ranking_model():
    # a source the model has no flag for would be scored as if no source had proposed it
    assert sorted(SOURCE_ORDER) == sorted(SOURCES)
