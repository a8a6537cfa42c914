import json
import uuid
from dataclasses import replace

import numpy as np
import pytest
from haystack import Document, Pipeline
from haystack.components.embedders import MockTextEmbedder
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy

from haystack_fin.components.dual_tree_retriever import DualTreeRetriever
from haystack_fin.store_registry import release_store

ACME, BETA = "ACME_2023_10K", "BETA_2023_10K"
WORDS = [
    "revenue", "capex", "dividend", "goodwill", "lease", "pension", "inventory", "tax",
    "debt", "cash", "margin", "segment", "litigation", "warranty", "buyback", "impairment",
]  # fmt: skip
DIM = len(WORDS)


def one_hot(j: int) -> list[float]:
    vec = [0.05] * DIM
    vec[j] = 1.0
    return vec


def chunk_id(fid: str, item: str, j: int) -> str:
    return f"{fid}#chunk-{item}-{j:05d}"


def item_documents(fid: str, item: str, with_tree: bool = True, embed: bool = True) -> list[Document]:
    """16 chunks (chunk j about WORDS[j], one-hot vector j; odd chunks are tables) and, optionally, a depth-3
    summary tree and question tree: root -> 4 mid nodes -> 2 bottom nodes each -> 2 chunks each."""
    base = {"filing_id": fid, "item": item, "index_run": "run-1"}
    docs = [
        Document(
            id=chunk_id(fid, item, j),
            content=f"The {WORDS[j]} discussion of {fid}.",
            embedding=one_hot(j) if embed else None,
            meta={**base, "node_type": "chunk", "modality": "table" if j % 2 else "text", "page_numbers": [j + 1]},
        )
        for j in range(16)
    ]
    if not with_tree:
        return docs
    leaves = {(2, b): [2 * b, 2 * b + 1] for b in range(8)}
    leaves.update({(1, m): list(range(4 * m, 4 * m + 4)) for m in range(4)})
    leaves[(0, 0)] = list(range(16))
    for (level, j), below in leaves.items():
        for kind, node_type in (("s", "summary"), ("q", "question")):
            nid = f"{fid}#tree-{item}-{kind}{level}-{j}"
            if level == 0:
                parent, kids = None, [f"{fid}#tree-{item}-{kind}1-{m}" for m in range(4)]
            elif level == 1:
                parent, kids = (
                    f"{fid}#tree-{item}-{kind}0-0",
                    [f"{fid}#tree-{item}-{kind}2-{b}" for b in (2 * j, 2 * j + 1)],
                )
            else:
                parent, kids = f"{fid}#tree-{item}-{kind}1-{j // 2}", [chunk_id(fid, item, x) for x in below]
            is_q = kind == "q"
            docs.append(
                Document(
                    id=nid,
                    content="\n".join(f"What about {WORDS[x]}?" for x in below)
                    if is_q
                    else " ".join(f"The {WORDS[x]} discussion." for x in below),
                    embedding=np.mean([one_hot(x) for x in below], axis=0).tolist() if is_q else None,
                    meta={
                        **base,
                        "node_type": node_type,
                        "__level": level,
                        "__parent_id": parent,
                        "__children_ids": kids,
                        "leaf_ids": [chunk_id(fid, item, x) for x in below],
                    },
                )
            )
    return docs


def filing_node(fid: str, run: str = "run-1") -> Document:
    return Document(id=f"{fid}#filing", content=fid, meta={"filing_id": fid, "node_type": "filing", "index_run": run})


@pytest.fixture
def store() -> InMemoryDocumentStore:
    s = InMemoryDocumentStore(index=f"dtr-{uuid.uuid4().hex}")
    docs = [filing_node(ACME), *item_documents(ACME, "7"), *item_documents(ACME, "1A", with_tree=False)]
    docs += [filing_node(BETA), *item_documents(BETA, "7")]
    s.write_documents(docs)
    yield s
    release_store(s)


def count_filter_calls(store: InMemoryDocumentStore) -> list[dict]:
    calls: list[dict] = []
    original = store.filter_documents

    def counting(filters=None):
        calls.append(filters)
        return original(filters=filters)

    store.filter_documents = counting  # type: ignore[method-assign]  # spy on the store's calls
    return calls


class TestDualTreeRetriever:
    def test_init_defaults(self, store):
        r = DualTreeRetriever(document_store=store)
        assert (r.beam_width, r.top_k, r.candidates_per_item, r.cache_size) == (3, 5, 10, 64)
        assert r.use_summary_tree and r.use_question_tree

    @pytest.mark.parametrize("arg", ["beam_width", "top_k", "candidates_per_item", "cache_size"])
    def test_init_rejects_non_positive(self, store, arg):
        with pytest.raises(ValueError, match=arg):
            DualTreeRetriever(document_store=store, **{arg: 0})

    def test_to_dict_from_dict(self, store):
        r = DualTreeRetriever(
            document_store=store,
            beam_width=2,
            top_k=4,
            use_question_tree=False,
            cache_size=8,
            flat_candidates_per_item=0,
        )
        data = component_to_dict(r, "retriever")
        assert data["type"] == "haystack_fin.components.dual_tree_retriever.DualTreeRetriever"
        params = data["init_parameters"]
        assert params["beam_width"] == 2 and params["use_question_tree"] is False and params["cache_size"] == 8
        assert params["flat_candidates_per_item"] == 0
        restored = component_from_dict(DualTreeRetriever, data, "retriever")
        assert component_to_dict(restored, "retriever") == data
        assert isinstance(restored.document_store, InMemoryDocumentStore)

    def test_run_budgets_routing(self, store):
        r = DualTreeRetriever(document_store=store)
        budgets = [{"filing_id": ACME, "item": "7", "k": 2, "weight": 0.7}, {"filing_id": BETA, "item": "7", "k": 5}]
        out = r.run(query="pension", query_embedding=one_hot(5), budgets=budgets)
        docs = out["documents"]
        assert {d.meta["filing_id"] for d in docs} == {ACME, BETA}
        assert {d.meta["item"] for d in docs} == {"7"}
        per_filing = {fid: [d for d in docs if d.meta["filing_id"] == fid] for fid in (ACME, BETA)}
        # max(candidates_per_item, 3k) from the trees, plus the flat matches the trees did not reach
        flat = r.flat_candidates_per_item
        assert len(per_filing[ACME]) <= 10 + flat and len(per_filing[BETA]) <= 15 + flat
        assert {d.meta["budget_k"] for d in per_filing[ACME]} == {2}
        assert {d.meta["budget_k"] for d in per_filing[BETA]} == {5}
        top = docs[0]
        assert top.id in {chunk_id(ACME, "7", 5), chunk_id(BETA, "7", 5)} and top.score == pytest.approx(1.0)
        retrieval = top.meta["retrieval"]
        assert set(retrieval) >= {"bm25", "dense", "trees", "tree_paths"}
        assert retrieval["trees"] == ["summary", "question"]
        fid = top.meta["filing_id"]
        assert retrieval["tree_paths"]["summary"] == [
            f"{fid}#tree-7-s0-0", f"{fid}#tree-7-s1-1", f"{fid}#tree-7-s2-2", top.id,
        ]  # fmt: skip
        # The ranker's dense signal: the chunk's cosine to the question, recorded instead of its vector.
        assert top.embedding is None and top.meta["query_cosine"] == pytest.approx(1.0)
        assert all(-1.0 <= d.meta["query_cosine"] <= 1.0 + 1e-9 for d in docs)
        with_vectors = DualTreeRetriever(document_store=store, return_embedding=True)
        top_vec = with_vectors.run(query="pension", query_embedding=one_hot(5), budgets=budgets)["documents"][0]
        assert top_vec.id == top.id and top_vec.meta["query_cosine"] == top.meta["query_cosine"]
        assert top_vec.embedding is not None and np.linalg.norm(top_vec.embedding) == pytest.approx(1.0)
        assert np.argmax(top_vec.embedding) == 5  # the chunk's own (normalized) vector
        # Tree candidates and flat matches take turns, each best first.
        for from_trees in (True, False):
            scores = [d.score for d in docs if bool(d.meta["retrieval"]["trees"]) is from_trees]
            assert scores == sorted(scores, reverse=True)
        assert bool(docs[0].meta["retrieval"]["trees"]) and not docs[1].meta["retrieval"]["trees"]
        assert [t["item"] for t in out["trace"]["items"]] == ["7", "7"]
        assert out["trace"]["items"][0]["visited"]["summary"][0]["scored"] == 1
        json.dumps(out["trace"])

    def test_statement_blocks_join_the_candidates(self, store):
        # ACME's Item 1A chunk 9 (a table) is tagged as the cash flow statement; the budgets only name Item 7.
        tagged = store.filter_documents({"field": "id", "operator": "==", "value": chunk_id(ACME, "1A", 9)})[0]
        tagged.meta["statement"] = "cash_flow_statement"
        store.write_documents([tagged], policy=DuplicatePolicy.OVERWRITE)
        budgets = [{"filing_id": ACME, "item": "7", "k": 2}]
        question = "What were capital expenditures in the cash flow statement?"
        out = DualTreeRetriever(document_store=store).run(query=question, query_embedding=one_hot(1), budgets=budgets)
        added = [d for d in out["documents"] if d.meta["retrieval"]["mode"] == "statement"]
        assert [d.id for d in added] == [chunk_id(ACME, "1A", 9)]
        assert added[0].meta["budget_k"] == 1 and added[0].meta["query_cosine"] is not None
        assert out["trace"]["statements"] == {"asked": {"cash_flow_statement": 1.0}, "added": [added[0].id]}
        off = DualTreeRetriever(document_store=store, statement_candidates=False).run(
            query=question, query_embedding=one_hot(1), budgets=budgets
        )
        assert all(d.meta["item"] == "7" for d in off["documents"]) and off["trace"]["statements"] == {}
        other = DualTreeRetriever(document_store=store).run(
            query="Who are our competitors?", query_embedding=one_hot(1), budgets=budgets
        )
        assert all(d.meta["item"] == "7" for d in other["documents"])

    def test_chunks_under_the_questions_headings_join_the_candidates(self, store):
        # Three of ACME's Item 1A chunks sit under an income-tax note; the budgets only name Item 7.
        docs = store.filter_documents({"field": "meta.item", "operator": "==", "value": "1A"})
        under = {chunk_id(ACME, "1A", j) for j in (3, 7, 12)}
        for d in docs:
            if d.id in under:
                d.meta["section_path"] = ["Item 1A. Risk Factors", "NOTE 14: INCOME TAXES"]
        store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        budgets = [{"filing_id": ACME, "item": "7", "k": 2}]
        question = "How did the effective tax rate change?"
        retriever = DualTreeRetriever(document_store=store, section_candidates=2)
        out = retriever.run(query=question, query_embedding=one_hot(7), budgets=budgets)
        added = [d for d in out["documents"] if d.meta["retrieval"]["mode"] == "section"]
        # The two closest to the question by cosine (chunk 7 is the query's direction), ties by id.
        assert [d.id for d in added] == [chunk_id(ACME, "1A", 7), chunk_id(ACME, "1A", 3)]
        assert added[0].meta["retrieval"]["section"] == "income tax"
        assert added[0].meta["retrieval"]["cluster"] == "effective_tax_rate"
        assert added[0].meta["budget_k"] == 1 and added[0].meta["query_cosine"] is not None
        assert out["trace"]["sections"]["added"] == [d.id for d in added]
        assert out["trace"]["sections"]["asked"]["income tax"] == "effective_tax_rate"
        off = DualTreeRetriever(document_store=store, section_candidates=0).run(
            query=question, query_embedding=one_hot(7), budgets=budgets
        )
        assert all(d.meta["item"] == "7" for d in off["documents"]) and off["trace"]["sections"] == {}
        other = retriever.run(query="What was revenue?", query_embedding=one_hot(7), budgets=budgets)
        assert all(d.meta["item"] == "7" for d in other["documents"])
        with pytest.raises(ValueError, match="section_candidates"):
            DualTreeRetriever(document_store=store, section_candidates=-1)

    def test_chunks_of_the_sections_flam_routed_to_join_the_candidates(self, store):
        # Item 7 chunks 3, 7 and 12 sit under the note FLAM routes to; chunk 9 under a longer heading and an Item 1A
        # chunk under the same heading are not in that section of Item 7.
        docs = store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": ACME})
        paths = {chunk_id(ACME, "7", j): "NOTE 14: INCOME TAXES" for j in (3, 7, 12)}
        paths[chunk_id(ACME, "7", 9)] = "NOTE 14: INCOME TAXES AND OTHER MATTERS"
        paths[chunk_id(ACME, "1A", 5)] = "NOTE 14: INCOME TAXES"
        for d in docs:
            if d.id in paths:
                d.meta["section_path"] = [f"Item {d.meta['item']}.", paths[d.id]]
        store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        section = {"section": "NOTE 14: INCOME TAXES", "score": 0.3, "count": 9, "total": 20, "k": 2}
        retriever = DualTreeRetriever(
            document_store=store, beam_width=1, candidates_per_item=1, flat_candidates_per_item=0, section_candidates=0
        )
        plain = [{"filing_id": ACME, "item": "7", "k": 1}]
        base = retriever.run(query="taxes", query_embedding=one_hot(7), budgets=plain)
        out = retriever.run(query="taxes", query_embedding=one_hot(7), budgets=[{**plain[0], "sections": [section]}])
        reached = {d.id for d in base["documents"]}
        # The section's k = 2 closest to the question (chunk 7 first, then by id) that the Item's search did not reach.
        expected = [cid for cid in (chunk_id(ACME, "7", j) for j in (7, 3, 12)) if cid not in reached][:2]
        added = [d for d in out["documents"] if d.meta["retrieval"]["mode"] == "section"]
        assert [d.id for d in added] == expected and expected
        info = added[0].meta["retrieval"]
        assert (info["section"], info["item"], info["flam_score"]) == ("NOTE 14: INCOME TAXES", "7", 0.3)
        assert added[0].meta["budget_k"] == 1 and added[0].score == 0.0
        assert {d.id for d in out["documents"]} == reached | set(expected)
        assert out["trace"]["sections"]["routed"] == [
            {
                "filing_id": ACME,
                "item": "7",
                "section": "NOTE 14: INCOME TAXES",
                "score": 0.3,
                "k": 2,
                "added": expected,
            }
        ]
        assert base["trace"]["sections"] == {}  # nothing routed, lexicon headings off: nothing added

    def test_best_chunks_of_the_concepts_items_join_the_candidates(self, store):
        # "major customers" is reported in a 10-K's Items 1, 1A and 8; the budgets name Item 7 only.
        docs = store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": ACME})
        for d in docs:
            d.meta["form"] = "10-K"
        store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        budgets = [{"filing_id": ACME, "item": "7", "k": 2}]
        question = "Who are the major customers?"
        retriever = DualTreeRetriever(document_store=store, section_candidates=0, intent_item_candidates=2)
        out = retriever.run(query=question, query_embedding=one_hot(4), budgets=budgets)
        added = [d for d in out["documents"] if d.meta["retrieval"]["mode"] == "intent_item"]
        # Item 1A's two best by BM25 + cosine: the chunk the question points at first (Items 1 and 8 have no chunks).
        assert [d.id for d in added][:1] == [chunk_id(ACME, "1A", 4)] and len(added) == 2
        assert all(d.meta["item"] == "1A" and d.score == 0.0 for d in added)
        assert out["trace"]["intent_items"] == [{"filing_id": ACME, "item": "1A", "added": [d.id for d in added]}]
        off = DualTreeRetriever(document_store=store, section_candidates=0).run(
            query=question, query_embedding=one_hot(4), budgets=budgets
        )
        assert all(d.meta["item"] == "7" for d in off["documents"]) and "intent_items" not in off["trace"]

    def test_chunks_under_the_filings_best_matching_headings_join_the_candidates(self, store):
        docs = store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": ACME})
        headings = {chunk_id(ACME, "1A", j): "Warranty Reserves" for j in (2, 13)}
        headings[chunk_id(ACME, "1A", 6)] = "Inventory Valuation"
        for d in docs:
            if d.meta["node_type"] == "chunk":
                d.meta["section_path"] = [f"Item {d.meta['item']}.", headings.get(d.id, "General")]
        store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        budgets = [{"filing_id": ACME, "item": "7", "k": 1}]
        retriever = DualTreeRetriever(
            document_store=store, section_candidates=0, heading_candidates=1, headings_per_question=1
        )
        out = retriever.run(query="How did warranty reserves change?", query_embedding=one_hot(13), budgets=budgets)
        added = [d for d in out["documents"] if d.meta["retrieval"]["mode"] == "heading"]
        # The one heading sharing the question's words; under it, the chunk closest to the question.
        assert [d.id for d in added] == [chunk_id(ACME, "1A", 13)]
        assert added[0].meta["retrieval"]["section"] == "Warranty Reserves"
        assert out["trace"]["headings"][0]["heading"] == "Warranty Reserves"

    def test_best_chunks_of_the_whole_filing_join_the_candidates(self, store):
        budgets = [{"filing_id": ACME, "item": "7", "k": 1}]
        retriever = DualTreeRetriever(
            document_store=store, section_candidates=0, filing_flat_candidates=2, flat_candidates_per_item=0
        )
        out = retriever.run(query="pension", query_embedding=one_hot(5), budgets=budgets)
        added = [d for d in out["documents"] if d.meta["retrieval"]["mode"] == "filing_flat"]
        assert chunk_id(ACME, "1A", 5) in {d.id for d in added} and len(added) == 2
        assert out["trace"]["filing_flat"] == [d.id for d in added]
        # Every candidate knows its place in the filing (chunk ids sort in filing order).
        positions = {d.id: d.meta["retrieval"]["position"] for d in out["documents"]}
        assert all(0.0 <= v <= 1.0 for v in positions.values())
        assert positions[chunk_id(ACME, "1A", 5)] < positions[chunk_id(ACME, "7", 0)]

    def test_the_pages_around_the_first_candidates_join_the_candidates(self, store):
        docs = store.filter_documents({"field": "meta.filing_id", "operator": "==", "value": ACME})
        for d in docs:
            if d.meta["node_type"] == "chunk":
                d.meta["modality"] = "text"  # a discussion running over the pages
        store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        budgets = [{"filing_id": ACME, "item": "7", "k": 1}]
        settings = {"section_candidates": 0, "flat_candidates_per_item": 0, "candidates_per_item": 1}
        off = DualTreeRetriever(document_store=store, **settings).run(
            query="pension", query_embedding=one_hot(5), budgets=budgets
        )
        on = DualTreeRetriever(document_store=store, neighbour_candidates=1, **settings).run(
            query="pension", query_embedding=one_hot(5), budgets=budgets
        )
        first = off["documents"][0]
        added = [d for d in on["documents"] if d.meta["retrieval"]["mode"] == "neighbour"]
        # chunk j sits on page j + 1 of its Item: the first candidate's pages before and after, under its heading
        j = int(first.id.rsplit("-", 1)[-1])
        assert [d.id for d in added] == [chunk_id(ACME, "7", j - 1), chunk_id(ACME, "7", j + 1)]
        assert {d.meta["retrieval"]["of"] for d in added} == {first.id}
        assert on["trace"]["neighbours"] == [d.id for d in added] and "neighbours" not in off["trace"]

    def test_input_documents_not_mutated(self, store):
        before = store.filter_documents({"field": "id", "operator": "==", "value": chunk_id(ACME, "7", 5)})[0]
        DualTreeRetriever(document_store=store).run(
            query="pension", query_embedding=one_hot(5), budgets=[{"filing_id": ACME, "item": "7", "k": 1}]
        )
        after = store.filter_documents({"field": "id", "operator": "==", "value": chunk_id(ACME, "7", 5)})[0]
        assert "retrieval" not in after.meta and after.meta == before.meta and after.score is None

    def test_item_without_tree_is_searched_flat(self, store):
        r = DualTreeRetriever(document_store=store)
        out = r.run(query="pension", query_embedding=one_hot(5), budgets=[{"filing_id": ACME, "item": "1A", "k": 1}])
        assert out["trace"]["items"][0]["mode"] == "flat"
        assert out["documents"][0].id == chunk_id(ACME, "1A", 5)
        assert out["documents"][0].meta["retrieval"]["trees"] == []

    def test_filters_choose_filings_and_all_items(self, store):
        r = DualTreeRetriever(document_store=store, top_k=2)
        flt = {"field": "meta.filing_id", "operator": "in", "value": [ACME]}
        out = r.run(query="pension", query_embedding=one_hot(5), filters=flt)
        assert {d.meta["filing_id"] for d in out["documents"]} == {ACME}
        assert {(t["item"], t["mode"]) for t in out["trace"]["items"]} == {("7", "dual_tree"), ("1A", "flat")}
        assert {d.meta["budget_k"] for d in out["documents"]} == {2}

    def test_filters_on_filing_fields_use_filing_nodes(self, store):
        out = DualTreeRetriever(document_store=store).run(
            query="pension",
            query_embedding=one_hot(5),
            filters={"field": "meta.index_run", "operator": "==", "value": "run-1"},
        )
        assert {d.meta["filing_id"] for d in out["documents"]} == {ACME, BETA}

    def test_filters_restrict_returned_chunks(self, store):
        out = DualTreeRetriever(document_store=store).run(
            query="pension",
            query_embedding=one_hot(5),
            budgets=[{"filing_id": ACME, "item": "7", "k": 3}],
            filters={"field": "meta.modality", "operator": "==", "value": "table"},
        )
        assert out["documents"] and {d.meta["modality"] for d in out["documents"]} == {"table"}

    def test_ablation_switches(self, store):
        budgets = [{"filing_id": ACME, "item": "7", "k": 1}]
        # words point at chunk 5, the vector at chunk 14
        runs = {
            (s, q): DualTreeRetriever(
                document_store=store, beam_width=1, use_summary_tree=s, use_question_tree=q, flat_candidates_per_item=0
            ).run(query="pension", query_embedding=one_hot(14), budgets=budgets)
            for s in (True, False)
            for q in (True, False)
        }
        modes = {key: out["trace"]["items"][0]["mode"] for key, out in runs.items()}
        assert modes == {
            (True, True): "dual_tree",
            (True, False): "summary_tree",
            (False, True): "question_tree",
            (False, False): "flat",
        }
        ids = {key: {d.id for d in out["documents"]} for key, out in runs.items()}
        assert chunk_id(ACME, "7", 5) in ids[(True, False)] and chunk_id(ACME, "7", 14) not in ids[(True, False)]
        assert chunk_id(ACME, "7", 14) in ids[(False, True)] and chunk_id(ACME, "7", 5) not in ids[(False, True)]
        assert {chunk_id(ACME, "7", 5), chunk_id(ACME, "7", 14)} <= ids[(True, True)]
        assert len(ids[(False, False)]) == 10  # flat: max(candidates_per_item, 3k) of all 16 chunks

    def test_flat_candidates_recover_what_the_beam_pruned(self, store):
        budgets = [{"filing_id": ACME, "item": "7", "k": 1}]
        # The summary beam follows the words to chunk 5; the vector points at chunk 14, which it prunes.
        r = DualTreeRetriever(document_store=store, beam_width=1, use_question_tree=False, flat_candidates_per_item=2)
        out = r.run(query="pension", query_embedding=one_hot(14), budgets=budgets)
        by_id = {d.id: d for d in out["documents"]}
        assert chunk_id(ACME, "7", 5) in by_id and by_id[chunk_id(ACME, "7", 5)].meta["retrieval"]["trees"]
        flat = by_id[chunk_id(ACME, "7", 14)]
        assert flat.meta["retrieval"]["trees"] == []
        # Turns: the trees' best, then the best flat match the beam pruned.
        assert [d.id for d in out["documents"]][:2] == [chunk_id(ACME, "7", 5), chunk_id(ACME, "7", 14)]

    def test_cache_hit_on_second_query(self, store):
        calls = count_filter_calls(store)
        r = DualTreeRetriever(document_store=store)
        budgets = [{"filing_id": ACME, "item": "7", "k": 2}]
        first = r.run(query="pension", query_embedding=one_hot(5), budgets=budgets)
        assert len(calls) == 1 and first["trace"]["cache"]["loaded"] == [ACME]
        second = r.run(query="cash", query_embedding=one_hot(9), budgets=budgets)
        assert len(calls) == 1 and second["trace"]["cache"]["hits"] == [ACME]
        assert second["documents"][0].id == chunk_id(ACME, "7", 9)
        # two uncached filings are fetched with one call
        r.run(query="cash", query_embedding=one_hot(9), budgets=[*budgets, {"filing_id": BETA, "item": "7", "k": 2}])
        assert len(calls) == 2 and calls[-1] == {"field": "meta.filing_id", "operator": "==", "value": BETA}

    def test_lru_eviction(self, store):
        calls = count_filter_calls(store)
        r = DualTreeRetriever(document_store=store, cache_size=1)
        for fid in (ACME, BETA, ACME):
            r.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": fid, "item": "7", "k": 1}])
        assert len(calls) == 3

    def test_new_index_run_reloads(self, store):
        calls = count_filter_calls(store)
        # InMemoryDocumentStore has no get_documents_by_id: give it one so the freshness probe runs
        store.get_documents_by_id = lambda ids: [store.storage[i] for i in ids if i in store.storage]  # type: ignore[attr-defined]  # added for the test
        r = DualTreeRetriever(document_store=store)
        budgets = [{"filing_id": ACME, "item": "7", "k": 1}]
        r.run(query="cash", query_embedding=one_hot(9), budgets=budgets)
        r.run(query="cash", query_embedding=one_hot(9), budgets=budgets)
        assert len(calls) == 1
        store.write_documents([filing_node(ACME, run="run-2")], policy=DuplicatePolicy.OVERWRITE)
        out = r.run(query="cash", query_embedding=one_hot(9), budgets=budgets)
        assert len(calls) == 2 and out["trace"]["cache"]["stale"] == [ACME]
        r.run(query="cash", query_embedding=one_hot(9), budgets=budgets)
        assert len(calls) == 2

    def test_only_the_filing_nodes_run_is_read_during_a_reindex(self, store):
        """A re-index under way: some chunk ids already hold the new run (different text), the filing node still
        names the old one (FilingWriter writes it last). The retriever keeps to the filing node's run."""
        newer = [
            replace(d, content=f"{d.content} rewritten", meta={**d.meta, "index_run": "run-2"})
            for d in item_documents(ACME, "7")[:8]
            if d.meta["node_type"] == "chunk"
        ]
        extra = Document(
            id=chunk_id(ACME, "7", 99), content="cash cash cash", embedding=one_hot(9),
            meta={"filing_id": ACME, "item": "7", "index_run": "run-2", "node_type": "chunk", "page_numbers": [99]},
        )  # fmt: skip
        store.write_documents([*newer, extra], policy=DuplicatePolicy.OVERWRITE)
        r = DualTreeRetriever(document_store=store, flat_candidates_per_item=5)
        out = r.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": ACME, "item": "7", "k": 5}])
        runs = {d.meta["index_run"] for d in out["documents"]}
        assert runs == {"run-1"} and extra.id not in {d.id for d in out["documents"]}
        assert all("rewritten" not in d.content for d in out["documents"])

    def test_nothing_routed_searches_nothing(self, store):
        """An empty budget list (FlamRouter had no filing: the scope found none) is not "every filing"."""
        r = DualTreeRetriever(document_store=store)
        assert r.run(query="cash", query_embedding=one_hot(9), budgets=[])["documents"] == []
        assert r.run(query="cash", query_embedding=one_hot(9))["documents"]  # no budgets at all: every filing

    def test_preload_fills_cache_in_one_fetch(self, store):
        calls = count_filter_calls(store)
        r = DualTreeRetriever(document_store=store)
        assert sorted(r.preload()) == [ACME, BETA]
        assert len(calls) == 2  # filing nodes, then all nodes of both filings at once
        out = r.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": BETA, "item": "7", "k": 1}])
        assert len(calls) == 2 and out["trace"]["cache"]["hits"] == [BETA]

    def test_index_run_hint_in_budget(self, store):
        calls = count_filter_calls(store)
        r = DualTreeRetriever(document_store=store)
        for run in ("run-1", "run-1", "run-2"):
            r.run(
                query="cash",
                query_embedding=one_hot(9),
                budgets=[{"filing_id": ACME, "item": "7", "k": 1, "index_run": run}],
            )
        assert len(calls) == 2

    def test_unknown_filing_and_item_are_traced(self, store):
        out = DualTreeRetriever(document_store=store).run(
            query="cash",
            query_embedding=one_hot(9),
            budgets=[{"filing_id": "NOPE", "item": "7", "k": 1}, {"filing_id": ACME, "item": "8", "k": 1}],
        )
        assert out["documents"] == []
        assert [t["mode"] for t in out["trace"]["items"]] == ["missing", "missing"]

    def test_error_when_chunk_embeddings_missing(self):
        s = InMemoryDocumentStore(index=f"dtr-{uuid.uuid4().hex}")
        s.write_documents([filing_node(ACME), *item_documents(ACME, "7", embed=False)])
        r = DualTreeRetriever(document_store=s)
        with pytest.raises(ValueError, match="return_embedding=True"):
            r.run(query="cash", query_embedding=one_hot(9), budgets=[{"filing_id": ACME, "item": "7", "k": 1}])
        release_store(s)

    def test_error_when_store_does_not_return_embeddings(self):
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        s = QdrantDocumentStore(location=":memory:", index=f"dtr{uuid.uuid4().hex}", embedding_dim=DIM)
        with pytest.raises(ValueError, match="return_embedding=True"):
            DualTreeRetriever(document_store=s).warm_up()
        release_store(s)

    def test_warm_up_is_idempotent(self, store):
        r = DualTreeRetriever(document_store=store)
        r.warm_up()
        bound = r._store
        r.warm_up()
        assert r._store is bound

    def test_pipeline_with_text_embedder_and_round_trip(self, store):
        pipe = Pipeline()
        pipe.add_component("embedder", MockTextEmbedder(embedding=one_hot(5)))
        pipe.add_component("retriever", DualTreeRetriever(document_store=store, top_k=1))
        pipe.connect("embedder.embedding", "retriever.query_embedding")
        data = {
            "embedder": {"text": "pension"},
            "retriever": {"query": "pension", "filters": {"field": "meta.filing_id", "operator": "==", "value": BETA}},
        }
        result = pipe.run(data)
        assert result["retriever"]["documents"][0].id == chunk_id(BETA, "7", 5)
        restored = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
        assert restored.to_dict() == pipe.to_dict()
        again = restored.run(data)  # the restored InMemoryDocumentStore shares the original's storage (same index)
        assert [d.id for d in again["retriever"]["documents"]] == [d.id for d in result["retriever"]["documents"]]

    @pytest.mark.integration
    def test_qdrant_store(self):
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        s = QdrantDocumentStore(
            location=":memory:", index=f"dtr{uuid.uuid4().hex}", embedding_dim=DIM, return_embedding=True
        )
        s.write_documents([filing_node(ACME), *item_documents(ACME, "7"), *item_documents(ACME, "1A", False)])
        r = DualTreeRetriever(document_store=s)
        budgets = [{"filing_id": ACME, "item": "7", "k": 2}, {"filing_id": ACME, "item": "1A", "k": 2}]
        first = r.run(query="pension", query_embedding=one_hot(5), budgets=budgets)
        assert first["documents"][0].id in {chunk_id(ACME, "7", 5), chunk_id(ACME, "1A", 5)}
        assert [t["mode"] for t in first["trace"]["items"]] == ["dual_tree", "flat"]
        second = r.run(query="pension", query_embedding=one_hot(5), budgets=budgets)
        assert second["trace"]["cache"]["hits"] == [ACME]
        s.write_documents([filing_node(ACME, run="run-2")], policy=DuplicatePolicy.OVERWRITE)
        third = r.run(query="pension", query_embedding=one_hot(5), budgets=budgets)
        assert third["trace"]["cache"]["stale"] == [ACME]
        release_store(s)


@pytest.mark.parametrize(
    "question",
    [
        "What were capital expenditures in the cash flow statement?",  # named statement: blocks join
        "How large was capex?",  # implied statement
        "What about litigation?",  # no statement; headings of the contingencies note
        "How did the effective tax rate change?",  # headings of the income-tax note
    ],
)
def test_same_candidates_with_the_query_analyzers_analysis(store, monkeypatch, question):
    from haystack_fin.components.query_analyzer import QueryAnalyzer
    from haystack_fin.core.retrieval import question_analysis, tree_search
    from haystack_fin.core.retrieval.bm25 import content_terms

    tagged = store.filter_documents({"field": "id", "operator": "==", "value": chunk_id(ACME, "1A", 9)})[0]
    tagged.meta["statement"] = "cash_flow_statement"
    noted = store.filter_documents({"field": "id", "operator": "==", "value": chunk_id(ACME, "1A", 4)})[0]
    noted.meta["section_path"] = ["Item 8", "NOTE 9: INCOME TAXES"]
    legal = store.filter_documents({"field": "id", "operator": "==", "value": chunk_id(ACME, "1A", 12)})[0]
    legal.meta["section_path"] = ["Item 8", "NOTE 11: COMMITMENTS AND CONTINGENCIES"]
    store.write_documents([tagged, noted, legal], policy=DuplicatePolicy.OVERWRITE)
    budgets = [{"filing_id": ACME, "item": "7", "k": 2}]

    def run(**extra):
        out = DualTreeRetriever(document_store=store).run(
            query=question, query_embedding=one_hot(1), budgets=budgets, **extra
        )
        trace = out["trace"]
        return [(d.id, d.score, d.meta["retrieval"]) for d in out["documents"]], trace["statements"], trace["sections"]

    alone = run()
    analysis = QueryAnalyzer().run(query=question)["analysis"]

    def not_again(*_args):
        raise AssertionError("the question was analysed again")

    def terms_of_chunks_only(text):
        if text == question:
            not_again()
        return content_terms(text)

    monkeypatch.setattr(question_analysis, "analyze_question", not_again)
    monkeypatch.setattr(tree_search, "content_terms", terms_of_chunks_only)  # the BM25 query's terms
    assert run(analysis=analysis) == alone
