"""PassageWindow on the chunks FilingSplitter cuts from a real 10-Q (Best Buy, FY2024 Q2), in an in-memory store.

Chunk ids of that filing used below (reading order, checked in ``test_fixture_layout``): 0-7 cover text (pages 1-2),
8 the first text chunk of Part I Item 1, 9-11 the three blocks of the balance sheet (table-0001, page 3), 12 a note
in text, 13-14 the two blocks of the statement of earnings (table-0002).
"""

import re
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
from haystack import Document, Pipeline
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.components.passage_window import PassageWindow
from haystack_fin.core import schema
from haystack_fin.store_registry import release_store

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
FID = "bestbuy-10q-2023-07-29"
BIG = 100_000  # a word budget that never binds


_RUN: list[str] = []  # the fixture's indexing run (chunk ids carry it), set by ``chunks``


def cid(i: int) -> str:
    return schema.chunk_id(FID, i, _RUN[0])


@pytest.fixture(scope="module")
def chunks() -> dict[str, Document]:
    filing = FilingConverter().run(sources=[FIXTURE], meta={schema.FILING_ID: FID})["documents"]
    docs = FilingSplitter().run(documents=filing)["documents"]
    _RUN[:] = [docs[0].meta[schema.INDEX_RUN]]
    return {d.id: d for d in docs}


class ByIdStore(InMemoryDocumentStore):
    """An in-memory store with Qdrant's direct id lookup, recording each lookup."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.lookups: list[list[str]] = []

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        self.lookups.append(list(ids))
        wanted = set(ids)
        return [d for d in self.filter_documents() if d.id in wanted]


@pytest.fixture
def store(chunks):
    s = InMemoryDocumentStore(index=f"pw-{uuid.uuid4().hex}")
    s.write_documents(list(chunks.values()))
    yield s
    release_store(s)


def hit(chunks: dict[str, Document], i: int, score: float = 1.0) -> Document:
    return Document(id=cid(i), content=chunks[cid(i)].content, meta=dict(chunks[cid(i)].meta), score=score)


def words(chunks: dict[str, Document], i: int) -> int:
    return len(chunks[cid(i)].content.split())


def test_fixture_layout(chunks):
    meta = {i: chunks[cid(i)].meta for i in range(15)}
    assert [meta[i][schema.ITEM] for i in range(9)] == ["cover"] * 8 + ["I-1"]
    assert {meta[i][schema.TABLE_ID] for i in (9, 10, 11)} == {f"{FID}#table-0001"}
    assert meta[12][schema.MODALITY] == "text"
    assert {meta[i][schema.TABLE_ID] for i in (13, 14)} == {f"{FID}#table-0002"}


def test_text_hit_grows_within_its_item_and_keeps_provenance(chunks, store):
    out = PassageWindow(document_store=store, max_words=BIG).run(documents=[hit(chunks, 5, score=0.7)])["documents"]
    (passage,) = out
    # radius 5 reaches chunks 0-10; chunk 8 starts Part I Item 1, so the window stops at the cover's last chunk
    assert passage.meta[schema.WINDOW] == [cid(i) for i in range(8)]
    assert passage.id == cid(5) and passage.score == 0.7
    assert passage.meta[schema.PAGE_NUMBERS] == [1, 2]
    assert passage.meta[schema.CHUNK_TEXT] == chunks[cid(5)].content
    for field in schema.PROVENANCE_FIELDS:
        if field != schema.PAGE_NUMBERS:
            assert passage.meta[field] == chunks[cid(5)].meta[field], field
    # reading order, every chunk's text present
    positions = [passage.content.find(chunks[cid(i)].content.split("\n")[-1][:40]) for i in range(8)]
    assert -1 not in positions and positions == sorted(positions)
    # the words of every chunk its window can hold, for replaying context words: their sum counts the sentence
    # a chunk repeats from the one before, which the passage holds once
    words = PassageWindow(document_store=store, max_words=BIG).chunk_words([hit(chunks, 5)])
    assert {cid(i) for i in range(8)} <= set(words)
    assert (
        0 <= sum(words[cid(i)] for i in range(8)) - len(passage.content.split()) <= 0.02 * len(passage.content.split())
    )


def test_table_block_grows_only_with_its_own_table(chunks, store):
    (passage,) = PassageWindow(document_store=store, max_words=BIG).run(documents=[hit(chunks, 10)])["documents"]
    assert passage.meta[schema.WINDOW] == [cid(9), cid(10), cid(11)]
    assert passage.meta[schema.PAGE_NUMBERS] == [3]
    # one table: title and header rule once, not once per block
    assert passage.content.count("Condensed Consolidated Balance Sheets") == 1
    rules = [line for line in passage.content.split("\n") if re.fullmatch(r"\|(\s*-{3,}\s*\|)+", line.strip())]
    assert len(rules) == 1
    assert "Cash and cash equivalents" in passage.content and "NOTE: The Consolidated" not in passage.content


def test_text_hit_between_tables_stays_alone(chunks, store):
    (passage,) = PassageWindow(document_store=store, max_words=BIG).run(documents=[hit(chunks, 12)])["documents"]
    assert passage.meta[schema.WINDOW] == [cid(12)]
    assert passage.content == chunks[cid(12)].content


def test_word_budget_limits_the_window(chunks, store):
    budget = words(chunks, 5) + words(chunks, 6)  # the first neighbour tried (after) fits, the one before not
    assert words(chunks, 4) > 0
    (passage,) = PassageWindow(document_store=store, max_words=budget).run(documents=[hit(chunks, 5)])["documents"]
    assert passage.meta[schema.WINDOW] == [cid(5), cid(6)]
    # a hit longer than the budget is returned whole, alone
    (alone,) = PassageWindow(document_store=store, max_words=1).run(documents=[hit(chunks, 5)])["documents"]
    assert alone.meta[schema.WINDOW] == [cid(5)] and alone.content == chunks[cid(5)].content


def test_radius_zero_returns_the_hits_unchanged(chunks, store):
    out = PassageWindow(document_store=store, radius=0, max_words=BIG).run(documents=[hit(chunks, 5), hit(chunks, 6)])
    assert [p.meta[schema.WINDOW] for p in out["documents"]] == [[cid(5)], [cid(6)]]


def test_hits_inside_a_better_passage_are_skipped_and_text_never_repeats(chunks, store):
    window = PassageWindow(document_store=store, radius=1, max_words=BIG)
    docs = [hit(chunks, 2), hit(chunks, 3), hit(chunks, 4), hit(chunks, 10)]
    out = window.run(documents=docs)["documents"]
    # 3 is inside 2's window (1-3); 4's window would be 3-5, and 3 is already shown
    assert [p.id for p in out] == [cid(2), cid(4), cid(10)]
    assert [p.meta[schema.WINDOW] for p in out] == [
        [cid(1), cid(2), cid(3)],
        [cid(4), cid(5)],
        [cid(9), cid(10), cid(11)],
    ]
    ids = [i for p in out for i in p.meta[schema.WINDOW]]
    assert len(ids) == len(set(ids))


def test_top_k_from_init_and_run(chunks, store):
    docs = [hit(chunks, 2), hit(chunks, 10), hit(chunks, 13)]
    assert len(PassageWindow(document_store=store, radius=1, top_k=1).run(documents=docs)["documents"]) == 1
    assert len(PassageWindow(document_store=store, radius=1, top_k=1).run(documents=docs, top_k=2)["documents"]) == 2
    assert len(PassageWindow(document_store=store, radius=1).run(documents=docs)["documents"]) == 3


def test_documents_without_chunk_ids_or_stored_neighbours_pass_through(chunks, store):
    node = Document(id=f"{FID}#filing", content="Best Buy 10-Q", meta={schema.ITEM: ""})
    orphan = Document(id="other-filing#chunk-00003", content="Revenue rose.", meta={schema.ITEM: "7"})
    out = PassageWindow(document_store=store).run(documents=[node, orphan])["documents"]
    assert [p.content for p in out] == ["Best Buy 10-Q", "Revenue rose."]
    assert [p.meta[schema.WINDOW] for p in out] == [[node.id], [orphan.id]]
    assert PassageWindow(document_store=store).run(documents=[])["documents"] == []


def test_input_documents_are_not_mutated(chunks, store):
    doc = hit(chunks, 5)
    before = (doc.content, dict(doc.meta))
    PassageWindow(document_store=store, max_words=BIG).run(documents=[doc])
    assert (doc.content, doc.meta) == before


def test_neighbours_are_fetched_by_id_in_one_lookup(chunks):
    s = ByIdStore(index=f"pw-{uuid.uuid4().hex}")
    s.write_documents(list(chunks.values()))
    try:
        window = PassageWindow(document_store=s, radius=2, max_words=BIG)
        out = window.run(documents=[hit(chunks, 5), hit(chunks, 6)])["documents"]
        assert len(s.lookups) == 1
        # neighbours of both hits, each once, without the hits themselves (already in hand)
        assert sorted(s.lookups[0]) == [cid(i) for i in (3, 4, 7, 8)]
        assert out[0].meta[schema.WINDOW] == [cid(i) for i in (3, 4, 5, 6, 7)]
    finally:
        release_store(s)


def test_qdrant_store_lookup(chunks):
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    s = QdrantDocumentStore(location=":memory:", index=f"pw{uuid.uuid4().hex}", embedding_dim=4, progress_bar=False)
    s.write_documents([chunks[cid(i)] for i in range(16)])
    try:
        (passage,) = PassageWindow(document_store=s, max_words=BIG).run(documents=[hit(chunks, 10)])["documents"]
        assert passage.meta[schema.WINDOW] == [cid(9), cid(10), cid(11)]
    finally:
        release_store(s)


def test_init_rejects_bad_parameters(store):
    with pytest.raises(ValueError, match=r"^radius must be an integer >= 0, got -1$"):
        PassageWindow(document_store=store, radius=-1)
    with pytest.raises(ValueError, match=r"^max_words must be an integer >= 1, got 0$"):
        PassageWindow(document_store=store, max_words=0)
    with pytest.raises(ValueError, match=r"^top_k must be an integer >= 1 or None, got True$"):
        PassageWindow(document_store=store, top_k=True)


def test_to_dict_from_dict_round_trip(store):
    window = PassageWindow(document_store=store, radius=3, max_words=400, top_k=7)
    data = window.to_dict()
    assert data["type"] == "haystack_fin.components.passage_window.PassageWindow"
    params = data["init_parameters"]
    assert (params["radius"], params["max_words"], params["top_k"]) == (3, 400, 7)
    assert params["document_store"]["init_parameters"]["index"] == store.index
    restored = PassageWindow.from_dict(data)
    assert (restored.radius, restored.max_words, restored.top_k) == (3, 400, 7)
    assert isinstance(restored.document_store, InMemoryDocumentStore)
    assert restored.document_store.index == store.index
    assert restored.to_dict() == data


def test_warm_up_is_idempotent_and_shares_one_store(store):
    window = PassageWindow(document_store=store)
    window.warm_up()
    bound = window._store
    window.warm_up()
    assert window._store is bound is store
    twin = PassageWindow.from_dict(window.to_dict())  # its own store object, same configuration
    assert twin.document_store is not store
    twin.warm_up()
    assert twin._store is store


def test_in_a_pipeline_run_twice_and_after_yaml_round_trip(chunks, store):
    pipe = Pipeline()
    pipe.add_component("window", PassageWindow(document_store=store, radius=1, top_k=5))
    first = pipe.run({"window": {"documents": [hit(chunks, 10)]}})["window"]["documents"]
    second = pipe.run({"window": {"documents": [hit(chunks, 10)], "top_k": 1}})["window"]["documents"]
    assert [p.meta[schema.WINDOW] for p in first] == [p.meta[schema.WINDOW] for p in second]
    restored = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
    again = restored.run({"window": {"documents": [hit(chunks, 10)]}})["window"]["documents"]
    assert [p.content for p in again] == [p.content for p in first]


def test_neighbours_of_another_indexing_run_are_left_out(chunks, store):
    """While a filing is re-indexed, a neighbour id can already hold the new run's chunk: the window keeps to the
    hit's run (no passage mixes two runs)."""
    window = PassageWindow(document_store=store, radius=5, max_words=BIG)
    (before,) = window.run(documents=[hit(chunks, 3)])["documents"]
    assert cid(4) in before.meta[schema.WINDOW]
    newer = replace(chunks[cid(4)], content="REWRITTEN", meta={**chunks[cid(4)].meta, schema.INDEX_RUN: "run-2"})
    store.write_documents([newer], policy=DuplicatePolicy.OVERWRITE)
    (during,) = window.run(documents=[hit(chunks, 3)])["documents"]
    assert "REWRITTEN" not in during.content and cid(4) not in during.meta[schema.WINDOW]
