import copy
import json
import logging

import numpy as np
import pytest
from haystack import Document, Pipeline, component
from haystack.components.embedders import MockDocumentEmbedder
from haystack.components.generators.chat import MockChatGenerator
from haystack.components.retrievers import AutoMergingRetriever
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from haystack_fin.components.document_embedder import FinDocumentEmbedder
from haystack_fin.components.filing_writer import FilingWriter
from haystack_fin.components.tree_builder import TreeBuilder

DIM = 16
SENTENCES = [
    "Revenues increased 23% in 2015 due to growth in paid memberships and higher prices.",
    "Marketing expenses increased primarily due to advertising in new international markets.",
    "Capital expenditures for property and equipment were $91 million in the year.",
    "Cash provided by operating activities decreased because of content payments.",
    "The effective tax rate was 14% compared to 18% in the prior year.",
]


def make_chunks(filing_id: str = "acme-10k-2015", items: dict[str, int] | None = None, seed: int = 0) -> list[Document]:
    """Chunks shaped like FilingSplitter output, with clustered synthetic embeddings (one topic per 6 chunks)."""
    items = items or {"7": 30, "1A": 12, "3": 1}
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(10, DIM))
    chunks: list[Document] = []
    for item, n in items.items():
        for i in range(n):
            index = len(chunks)
            topic = i // 6
            meta = {
                "filing_id": filing_id,
                "company": "Acme Corp",
                "form": "10-K",
                "period": "FY2015",
                "fiscal_year": 2015,
                "source_path": "acme.pdf",
                "node_type": "chunk",
                "item": item,
                "item_title": f"Title {item}",
                "part": "II",
                "section_path": [f"Item {item}. Title {item}", f"Heading {topic}"],
                "page_numbers": [10 + index // 3],
                "modality": "text",
                "table_id": None,
                "chunk_index": index,
                "index_run": "run-1",
                "context": f"Acme Corp 10-K FY2015 | Item {item}. Title {item}",
            }
            content = f"Topic {topic} part {i}. {SENTENCES[topic % 5]} {SENTENCES[(topic + i) % 5]}"
            if item == "7" and i == 0:
                meta.update(modality="table", table_id=f"{filing_id}#table-0001")
                meta["table"] = {
                    "columns": ["", "Year ended December 31, 2015", "Year ended December 31, 2014"],
                    "rows": [
                        {"label": "Revenues", "values": [None, 6779.5, 5504.7], "is_context": False},
                        {"label": "Costs:", "values": [None, None, None], "is_context": False},
                        {"label": "Net income (1)", "values": [None, 122.6, 266.8], "is_context": False},
                    ],
                }
                content = "| | 2015 | 2014 |\n| --- | --- | --- |\n| Revenues | 6,779.5 | 5,504.7 |"
            embedding = topics[topic] + 0.05 * rng.normal(size=DIM)
            chunks.append(
                Document(id=f"{filing_id}#chunk-{index:05d}", content=content, meta=meta, embedding=embedding.tolist())
            )
    return chunks


def builder(**kwargs) -> TreeBuilder:
    kwargs.setdefault("embedder", MockDocumentEmbedder(dimension=DIM))
    kwargs.setdefault("reducer", "pca")
    kwargs.setdefault("question_tree", True)  # the dual-tree structure; the default without a model is tested below
    return TreeBuilder(**kwargs)


def tree_nodes(documents: list[Document], node_type: str | None = None) -> list[Document]:
    types = {node_type} if node_type else {"summary", "question"}
    return [d for d in documents if d.meta.get("node_type") in types]


GOOD_REPLY = json.dumps({"summary": "LLM summary of the node.", "questions": ["What was revenue?", "Why?", "How?"]})


class TestTreeBuilder:
    def test_init_defaults(self):
        tb = TreeBuilder()
        assert isinstance(tb.embedder, FinDocumentEmbedder)
        assert tb.embedder.embedding_backend is None  # nothing loaded before warm_up
        assert tb.reducer == "pca" and tb.chat_generator is None and tb.embed_summaries is False

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"reducer": "tsne"},
            {"max_cluster_size": 1},
            {"soft_threshold": 1.5},
            {"max_summary_words": 5},
            {"max_questions": 0},
            {"max_prompt_chars": 10},
        ],
    )
    def test_init_rejects_bad_values(self, kwargs):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            builder(**kwargs)

    def test_to_dict(self):
        data = builder(chat_generator=MockChatGenerator(responses=GOOD_REPLY), max_cluster_size=6).to_dict()
        assert data["type"] == "haystack_fin.components.tree_builder.TreeBuilder"
        params = data["init_parameters"]
        assert params["embedder"]["type"].endswith("MockDocumentEmbedder")
        assert params["chat_generator"]["type"].endswith("MockChatGenerator")
        assert params["max_cluster_size"] == 6 and params["reducer"] == "pca"

    def test_from_dict(self):
        original = builder(chat_generator=MockChatGenerator(responses=GOOD_REPLY), embed_summaries=True)
        restored = TreeBuilder.from_dict(copy.deepcopy(original.to_dict()))
        assert isinstance(restored.embedder, MockDocumentEmbedder) and restored.embedder.dimension == DIM
        assert isinstance(restored.chat_generator, MockChatGenerator)
        assert restored.embed_summaries is True
        assert restored.to_dict() == original.to_dict()

    @pytest.mark.parametrize("with_llm", [False, True])
    def test_pipeline_yaml_round_trip(self, with_llm):
        pipe = Pipeline()
        kwargs = {"chat_generator": MockChatGenerator(responses=GOOD_REPLY)} if with_llm else {"embedder": None}
        pipe.add_component("trees", builder(**kwargs))
        loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
        assert loaded.to_dict() == pipe.to_dict()

    def test_run_in_pipeline(self):
        pipe = Pipeline()
        pipe.add_component("trees", builder())
        result = pipe.run({"trees": {"documents": make_chunks()}})["trees"]
        assert result["n_tree_nodes"] == len(tree_nodes(result["documents"])) > 0

    def test_node_ids_and_meta(self):
        chunks = make_chunks()
        result = builder().run(documents=chunks)
        docs = {d.id: d for d in result["documents"]}
        nodes = tree_nodes(result["documents"])
        assert result["n_tree_nodes"] == len(nodes)
        assert len(docs) == len(result["documents"])  # ids are unique
        for node in nodes:
            meta = node.meta
            kind = "s" if meta["node_type"] == "summary" else "q"
            assert node.id == (
                f"acme-10k-2015#run-1/tree-{meta['item']}-{kind}{meta['__level']}-{node.id.rsplit('-', 1)[1]}"
            )
            assert docs[meta["twin_id"]].meta["twin_id"] == node.id
            item_chunk = next(c for c in chunks if c.meta["item"] == meta["item"])
            for key in ("filing_id", "company", "form", "period", "fiscal_year", "item", "item_title", "index_run"):
                assert meta[key] == item_chunk.meta[key]
            assert meta["context"] == item_chunk.meta["context"]
            assert meta["section_path"] == [f"Item {meta['item']}. Title {meta['item']}"]
            assert meta["modality"] == "text" and meta["index_run"] == "run-1"
            leaves = [docs[i] for i in meta["leaf_ids"]]
            assert all(leaf.meta["node_type"] == "chunk" and leaf.meta["item"] == meta["item"] for leaf in leaves)
            assert meta["page_numbers"] == sorted({p for leaf in leaves for p in leaf.meta["page_numbers"]})
            if meta["__parent_id"] is None:
                assert meta["__level"] == 0
            else:
                parent = docs[meta["__parent_id"]]
                assert parent.meta["node_type"] == meta["node_type"]
                assert parent.meta["__level"] == meta["__level"] - 1
                assert node.id in parent.meta["__children_ids"]
            children = [docs[c] for c in meta["__children_ids"]]
            assert children
            child_types = {c.meta["node_type"] for c in children}
            assert child_types in ({"chunk"}, {meta["node_type"]})
            if child_types == {"chunk"}:
                assert all(node.id.replace("-q", "-s") in c.meta["tree_parent_ids"] for c in children)
            else:
                assert all(c.meta["__parent_id"] == node.id for c in children)
            assert (node.embedding is not None) == (meta["node_type"] == "question")

    def test_every_chunk_reachable_from_its_item_root(self):
        result = builder().run(documents=make_chunks())
        docs = {d.id: d for d in result["documents"]}
        roots = [d for d in tree_nodes(result["documents"]) if d.meta["__parent_id"] is None]
        assert sorted(r.id for r in roots) == sorted(
            f"acme-10k-2015#run-1/tree-{item}-{kind}0-0" for item in ("7", "1A", "3") for kind in ("s", "q")
        )
        for root in roots:
            reached, frontier = set(), [root.id]
            while frontier:
                node = docs[frontier.pop()]
                if node.meta["node_type"] == "chunk":
                    reached.add(node.id)
                else:
                    frontier.extend(node.meta["__children_ids"])
            assert reached == set(root.meta["leaf_ids"])
            assert reached == {d.id for d in result["documents"] if d.meta.get("item") == root.meta["item"]} - {
                n.id for n in tree_nodes(result["documents"])
            }

    def test_twin_trees_have_identical_topology(self):
        nodes = tree_nodes(builder().run(documents=make_chunks())["documents"])
        summaries = {n.id: n.meta for n in nodes if n.meta["node_type"] == "summary"}
        questions = {n.id: n.meta for n in nodes if n.meta["node_type"] == "question"}
        assert len(summaries) == len(questions)

        def to_summary_id(node_id):
            return node_id.replace("#tree-", "#TREE-").replace("-q", "-s").replace("#TREE-", "#tree-")

        for qid, q in questions.items():
            s = summaries[q["twin_id"]]
            assert q["twin_id"] == to_summary_id(qid)
            assert s["__level"] == q["__level"] and s["leaf_ids"] == q["leaf_ids"]
            assert [to_summary_id(c) for c in q["__children_ids"]] == s["__children_ids"]
            assert (q["__parent_id"] is None and s["__parent_id"] is None) or to_summary_id(q["__parent_id"]) == s[
                "__parent_id"
            ]

    def test_chunks_are_copied_with_tree_parents(self):
        chunks = make_chunks()
        before = [copy.deepcopy(c.meta) for c in chunks]
        result = builder().run(documents=chunks)
        assert [c.meta for c in chunks] == before  # inputs untouched
        out_chunks = [d for d in result["documents"] if d.meta["node_type"] == "chunk"]
        assert [c.id for c in out_chunks] == [c.id for c in chunks]
        docs = {d.id: d for d in result["documents"]}
        for chunk in out_chunks:
            parents = chunk.meta["tree_parent_ids"]
            assert chunk.meta["__parent_id"] == parents[0]
            assert all(
                docs[p].meta["node_type"] == "summary" and chunk.id in docs[p].meta["__children_ids"] for p in parents
            )
            assert chunk.meta["__level"] == docs[parents[0]].meta["__level"] + 1
            assert chunk.embedding is not None

    def test_small_item_gets_a_root_over_its_chunks(self):
        nodes = tree_nodes(builder().run(documents=make_chunks())["documents"])
        item3 = [n for n in nodes if n.meta["item"] == "3"]
        assert [n.id for n in item3] == ["acme-10k-2015#run-1/tree-3-s0-0", "acme-10k-2015#run-1/tree-3-q0-0"]
        assert item3[0].meta["__children_ids"] == item3[1].meta["__children_ids"] == ["acme-10k-2015#chunk-00042"]

    def test_contents_bounded_and_deterministic(self):
        first = builder(max_summary_words=40, max_questions=3).run(documents=make_chunks())["documents"]
        second = builder(max_summary_words=40, max_questions=3).run(documents=make_chunks())["documents"]
        assert [(d.id, d.content, d.meta) for d in first] == [(d.id, d.content, d.meta) for d in second]
        for node in tree_nodes(first):
            assert node.content
            if node.meta["node_type"] == "summary":
                assert len(node.content.split()) <= 40 and node.meta["generated_by"] == "extractive"
            else:
                assert 1 <= len(node.content.splitlines()) <= 3 and node.meta["generated_by"] == "template"
                assert all(q.endswith("?") for q in node.content.splitlines())

    def test_table_rows_become_questions(self):
        nodes = tree_nodes(builder().run(documents=make_chunks())["documents"], "question")
        parent = next(n for n in nodes if "acme-10k-2015#chunk-00000" in n.meta["__children_ids"])
        assert "What was Revenues in 2015?" in parent.content
        assert "How did Revenues change from 2014 to 2015?" in parent.content

    def test_several_filings_and_passthrough(self):
        filing_node = Document(id="acme#filing", content="Acme", meta={"node_type": "filing", "filing_id": "acme"})
        docs = [*make_chunks("a-10k", {"7": 10}), filing_node, *make_chunks("b-10k", {"7": 10}, seed=1)]
        result = builder().run(documents=docs)
        assert result["documents"][10] is filing_node
        roots = [d.id for d in tree_nodes(result["documents"]) if d.meta["__parent_id"] is None]
        assert sorted(roots) == [
            "a-10k#run-1/tree-7-q0-0",
            "a-10k#run-1/tree-7-s0-0",
            "b-10k#run-1/tree-7-q0-0",
            "b-10k#run-1/tree-7-s0-0",
        ]

    def test_embed_summaries(self):
        nodes = tree_nodes(builder(embed_summaries=True).run(documents=make_chunks())["documents"])
        assert all(n.embedding is not None and len(n.embedding) == DIM for n in nodes)

    def test_chunk_without_embedding_is_an_error(self):
        chunks = make_chunks()
        chunks[3] = Document(id=chunks[3].id, content=chunks[3].content, meta=chunks[3].meta)
        with pytest.raises(ValueError, match="no embedding"):
            builder().run(documents=chunks)

    def test_no_chunks(self):
        assert builder().run(documents=[]) == {"documents": [], "n_tree_nodes": 0}

    def test_warm_up_is_idempotent(self):
        tb = builder(progress_bar=True)
        tb.warm_up()
        lexicon = tb._lexicon
        tb.warm_up()
        assert tb._lexicon is lexicon

    def test_llm_good_reply(self):
        seen: list[str] = []

        def reply(messages: list[ChatMessage]) -> str:
            seen.append(messages[-1].text)
            return GOOD_REPLY

        result = builder(chat_generator=MockChatGenerator(response_fn=reply)).run(documents=make_chunks())
        nodes = tree_nodes(result["documents"])
        assert len(seen) == len(nodes) // 2  # one call per node pair
        assert "Acme Corp 10-K FY2015, Item 7. Title 7" in seen[0]
        assert any("[1] LLM summary of the node." in prompt for prompt in seen)  # upper nodes read their children
        for node in nodes:
            assert node.meta["generated_by"] == "llm"
            expected = (
                "LLM summary of the node." if node.meta["node_type"] == "summary" else "What was revenue?\nWhy?\nHow?"
            )
            assert node.content == expected

    def test_malformed_reply_falls_back_for_that_node_only(self, caplog):
        generator = MockChatGenerator(responses=["this is not JSON", GOOD_REPLY, '{"summary": ""}'])
        with caplog.at_level(logging.WARNING):
            result = builder(chat_generator=generator).run(documents=make_chunks())
        summaries = tree_nodes(result["documents"], "summary")
        sources = [n.meta["generated_by"] for n in summaries]
        assert "llm" in sources and "extractive" in sources
        fallback = next(n for n in summaries if n.meta["generated_by"] == "extractive")
        assert fallback.content and fallback.content != "LLM summary of the node."
        assert "Unusable chat reply" in caplog.text

    def test_partial_reply_keeps_the_usable_half(self):
        generator = MockChatGenerator(responses='{"summary": "Only a summary."}')
        nodes = tree_nodes(builder(chat_generator=generator).run(documents=make_chunks())["documents"])
        for node in nodes:
            if node.meta["node_type"] == "summary":
                assert (node.content, node.meta["generated_by"]) == ("Only a summary.", "llm")
            else:
                assert node.meta["generated_by"] == "template" and node.content.endswith("?")

    def test_generator_exception_falls_back(self, caplog):
        def down(messages):
            raise ConnectionError("Failed to connect to Ollama")

        with caplog.at_level(logging.WARNING):
            result = builder(chat_generator=MockChatGenerator(response_fn=down)).run(documents=make_chunks())
        nodes = tree_nodes(result["documents"])
        assert nodes and all(n.meta["generated_by"] in ("extractive", "template") for n in nodes)
        assert "Failed to connect" in caplog.text

    def test_auto_merging_retriever_merges_chunks_into_summary_nodes(self):
        result = builder().run(documents=make_chunks())
        store = InMemoryDocumentStore()
        store.write_documents(result["documents"])
        docs = {d.id: d for d in result["documents"]}
        # A bottom summary node all of whose chunks name it as their main parent, as a retriever would hand them over.
        bottom = next(
            d
            for d in tree_nodes(result["documents"], "summary")
            if all(docs[c].meta.get("__parent_id") == d.id for c in d.meta["__children_ids"])
            and len(d.meta["__children_ids"]) > 1
        )
        matched = [docs[c] for c in bottom.meta["__children_ids"]]
        merged = AutoMergingRetriever(store, threshold=0.5).run(documents=matched)["documents"]
        ancestors, node = set(), bottom
        while node is not None:
            ancestors.add(node.id)
            node = docs.get(node.meta["__parent_id"]) if node.meta["__parent_id"] else None
        assert merged and {d.id for d in merged} <= ancestors


def test_output_is_accepted_by_filing_writer():
    result = builder().run(documents=make_chunks())
    store = InMemoryDocumentStore()
    written = FilingWriter(document_store=store).run(documents=result["documents"])
    assert written["documents_written"] == len(result["documents"]) == store.count_documents()


@component
class _CountingEmbedder:
    """A document embedder that records its calls (batched embedding check)."""

    def __init__(self) -> None:
        self.calls = 0

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        self.calls += 1
        return MockDocumentEmbedder(dimension=DIM).run(documents=documents)


def test_question_nodes_embedded_in_one_call():
    embedder = _CountingEmbedder()
    TreeBuilder(embedder=embedder, reducer="pca", question_tree=True).run(documents=make_chunks())
    assert embedder.calls == 1


def test_without_a_model_the_default_builds_the_summary_tree_only():
    embedder = _CountingEmbedder()
    tb = TreeBuilder(embedder=embedder, reducer="pca")
    assert tb.question_tree is None and not tb.builds_question_tree
    result = tb.run(documents=make_chunks())
    assert embedder.calls == 0  # nothing to embed: summaries are searched with BM25
    summaries = tree_nodes(result["documents"], "summary")
    assert summaries and not tree_nodes(result["documents"], "question")
    assert all(node.meta["twin_id"] is None and node.embedding is None for node in summaries)
    # the same topology as with the question tree: the summary tree does not depend on it
    full = builder(embedder=MockDocumentEmbedder(dimension=DIM)).run(documents=make_chunks())
    assert [(n.id, n.meta["__children_ids"]) for n in summaries] == [
        (n.id, n.meta["__children_ids"]) for n in tree_nodes(full["documents"], "summary")
    ]
    # with a chat generator the questions are the LLM's, and the tree is built
    assert TreeBuilder(embedder=embedder, chat_generator=object()).builds_question_tree
    assert not TreeBuilder(embedder=embedder, chat_generator=object(), question_tree=False).builds_question_tree


@pytest.mark.integration
def test_default_embedder_embeds_question_nodes():
    result = TreeBuilder(reducer="pca", question_tree=True).run(documents=make_chunks(items={"7": 12}))
    questions = tree_nodes(result["documents"], "question")
    assert questions and all(len(q.embedding) == 384 for q in questions)
