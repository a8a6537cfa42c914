import numpy as np
import pytest

from haystack_fin.core.ingest.clustering import TreeTopology, build_tree_topology
from haystack_fin.core.ingest.node_texts import (
    clean_row_label,
    extractive_summary,
    markdown_row_labels,
    metric_terms,
    parse_node_reply,
    rank_term_concepts,
    salient_terms,
    table_periods,
    template_questions,
    term_mentions,
)
from haystack_fin.core.lexicon import Lexicon


def blobs(n_blobs: int = 6, per_blob: int = 12, dim: int = 32, spread: float = 0.1, seed: int = 0) -> np.ndarray:
    """Well separated clusters of points, blob by blob (so leaf i belongs to blob i // per_blob)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_blobs, dim))
    return np.concatenate([c + spread * rng.normal(size=(per_blob, dim)) for c in centers])


def assert_valid_tree(topology: TreeTopology, n_leaves: int, max_cluster_size: int) -> None:
    assert topology.n_leaves == n_leaves
    assert len(topology.levels[0]) == 1
    root = topology.root
    assert root.parent is None and root.level == 0 and root.leaves == tuple(range(n_leaves))
    for depth, level in enumerate(topology.levels):
        assert [node.index for node in level] == list(range(len(level)))
        for node in level:
            assert node.level == depth
            assert 1 <= len(node.children) <= max_cluster_size
            assert list(node.leaves) == sorted(set(node.leaves))
            if depth == topology.bottom_level:
                assert set(node.children) == set(node.leaves)
            else:
                below = topology.levels[depth + 1]
                assert set(node.leaves) == {leaf for c in node.children for leaf in below[c].leaves}
                for child in node.children:
                    assert below[child].parent == node.index
            if depth > 0:
                assert node.index in topology.levels[depth - 1][node.parent].children
    if topology.depth > 1:  # upper levels are a strict tree: every node is the child of exactly one parent
        for depth in range(1, topology.depth):
            children = [c for node in topology.levels[depth - 1] for c in node.children]
            assert sorted(children) == list(range(len(topology.levels[depth])))
    # Every leaf is reachable from the root, and its parents are exactly the bottom nodes holding it.
    bottom = topology.levels[-1]
    for leaf in range(n_leaves):
        parents = topology.leaf_parents[leaf]
        assert parents and len(set(parents)) == len(parents)
        assert {j for j, node in enumerate(bottom) if leaf in node.children} == set(parents)


class TestBuildTreeTopology:
    @pytest.mark.parametrize("reducer", ["pca", "none"])
    def test_invariants_on_blobs(self, reducer):
        vectors = blobs()
        topology = build_tree_topology(vectors, max_cluster_size=8, reducer=reducer)
        assert_valid_tree(topology, len(vectors), 8)
        assert topology.depth >= 2

    def test_bottom_nodes_do_not_mix_separated_blobs(self):
        topology = build_tree_topology(blobs(spread=0.05), reducer="pca")
        for node in topology.levels[-1]:
            assert len({leaf // 12 for leaf in node.children}) == 1

    def test_deterministic(self):
        vectors = blobs(n_blobs=5, per_blob=15, seed=3)
        first = build_tree_topology(vectors, reducer="pca")
        assert build_tree_topology(vectors.copy(), reducer="pca") == first
        assert build_tree_topology(vectors.tolist(), reducer="pca") == first

    @pytest.mark.parametrize("n", [1, 2, 6, 8])
    def test_small_item_gets_single_root_over_leaves(self, n):
        topology = build_tree_topology(blobs(n_blobs=1, per_blob=n), max_cluster_size=8)
        assert topology.depth == 1
        assert topology.root.children == tuple(range(n))
        assert topology.leaf_parents == tuple((0,) for _ in range(n))

    def test_max_cluster_size_bounds_fan_out(self):
        vectors = blobs(n_blobs=4, per_blob=20, seed=1)
        topology = build_tree_topology(vectors, max_cluster_size=4, reducer="pca")
        assert_valid_tree(topology, len(vectors), 4)
        assert topology.depth >= 3

    def test_identical_embeddings_fall_back_to_document_order(self):
        vectors = np.ones((30, 8))
        topology = build_tree_topology(vectors, max_cluster_size=8, reducer="pca")
        assert_valid_tree(topology, 30, 8)
        assert all(
            list(node.children) == list(range(node.children[0], node.children[-1] + 1)) for node in topology.levels[-1]
        )

    def test_nodes_numbered_in_document_order(self):
        topology = build_tree_topology(blobs(), reducer="pca")
        for level in topology.levels:
            firsts = [node.leaves[0] for node in level]
            assert firsts == sorted(firsts)

    def test_soft_membership_puts_overlap_leaves_under_two_parents(self):
        # Two overlapping topics on an arc: leaves between them are likely under either.
        rng = np.random.default_rng(0)
        angles = np.concatenate([rng.normal(0.0, 0.15, 40), rng.normal(0.5, 0.15, 40)])
        vectors = np.stack([np.cos(angles), np.sin(angles), np.zeros_like(angles)], axis=1)
        topology = build_tree_topology(vectors, max_cluster_size=8, reducer="none", soft_threshold=0.1)
        assert_valid_tree(topology, 80, 8)
        soft = [leaf for leaf, parents in enumerate(topology.leaf_parents) if len(parents) > 1]
        assert soft and all(len(topology.leaf_parents[leaf]) == 2 for leaf in soft)
        assert all(0.15 < angles[leaf] < 0.65 for leaf in soft)  # between the two topics, not in their cores
        for kwargs in ({"max_memberships": 1}, {"soft_threshold": 1.0}):
            hard = build_tree_topology(vectors, max_cluster_size=8, reducer="none", **kwargs)
            assert_valid_tree(hard, 80, 8)
            assert all(len(parents) == 1 for parents in hard.leaf_parents)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"reducer": "tsne"}, "reducer"),
            ({"max_cluster_size": 1}, "max_cluster_size"),
            ({"soft_threshold": 0.0}, "soft_threshold"),
            ({"max_memberships": 0}, "max_memberships"),
        ],
    )
    def test_rejects_bad_parameters(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            build_tree_topology(blobs(), **kwargs)

    def test_rejects_bad_embeddings(self):
        with pytest.raises(ValueError, match="non-empty"):
            build_tree_topology(np.zeros((0, 4)))
        with pytest.raises(ValueError, match="NaN"):
            build_tree_topology(np.full((10, 4), np.nan))

    @pytest.mark.integration
    def test_umap_reducer(self):
        vectors = blobs(n_blobs=5, per_blob=12, dim=64, seed=2)  # 60 points: above the PCA-only threshold of 30
        topology = build_tree_topology(vectors, reducer="umap")
        assert_valid_tree(topology, 60, 8)
        assert build_tree_topology(vectors, reducer="umap") == topology


TABLE_TEXT = """Consolidated Statements of Operations
| | 2015 | 2014 |
| --- | --- | --- |
| Revenues | 6,779,511 | 5,504,656 |
| Net income (1) | 122,641 | 266,799 |
| Earnings per share: | | |"""

PROSE = [
    "Revenues increased 23% in 2015 due to growth in paid memberships. Net income decreased because of higher "
    "content amortization. The Company expects streaming revenue to grow further.",
    "Paid memberships grew by 17 million across the international segment. Marketing expenses increased due to "
    "advertising in new markets. Short.",
    "Capital expenditures for property and equipment were $91 million in 2015. The increase in capital expenditures "
    "reflects investments in our new headquarters.",
]


class TestExtractiveSummary:
    def test_bounded_and_deterministic(self):
        texts = PROSE * 5
        embeddings = np.random.default_rng(0).normal(size=(len(texts), 16))
        summary = extractive_summary(texts, embeddings, max_words=40, lexicon=Lexicon.load_default())
        assert len(summary.split()) <= 40
        assert summary == extractive_summary(texts, embeddings, max_words=40, lexicon=Lexicon.load_default())

    def test_prefers_sentences_of_central_chunks(self):
        embeddings = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
        summary = extractive_summary(PROSE, embeddings, max_sentences=1)
        assert summary.splitlines()[0] in " ".join(PROSE[:2])

    def test_one_sentence_per_chunk_before_a_second(self):
        summary = extractive_summary(PROSE, None, max_sentences=3, max_words=200)
        sentences = summary.splitlines()[0]
        assert sum(s in sentences for s in ("Revenues increased", "Net income decreased", "The Company expects")) <= 1

    def test_key_terms_and_table_rows(self):
        summary = extractive_summary([*PROSE, TABLE_TEXT], None, lexicon=Lexicon.load_default())
        lines = summary.splitlines()
        assert lines[-2].startswith("Key terms: ")
        assert "capital expenditures" in lines[-2]
        assert lines[-1] == "Table rows: Revenues; Net income; Earnings per share."
        assert "|" not in lines[0]

    def test_given_terms_and_labels_win(self):
        summary = extractive_summary(PROSE, None, terms=["free cash flow"], row_labels=["Total assets"])
        assert summary.splitlines()[-2:] == ["Key terms: free cash flow.", "Table rows: Total assets."]

    def test_overlapping_chunks_do_not_repeat_sentences(self):
        summary = extractive_summary([PROSE[0], PROSE[0]], None, max_sentences=4, max_words=200)
        assert summary.count("Revenues increased 23%") == 1

    def test_edge_cases(self):
        assert extractive_summary([], None) == ""
        assert extractive_summary(["12,345 67"], None) == "12,345 67"
        long_sentence = "The company " + " ".join(["reported"] * 200) + " results."
        assert len(extractive_summary([long_sentence], None, max_words=30).split()) <= 30
        tiny = extractive_summary([*PROSE, TABLE_TEXT], None, lexicon=Lexicon.load_default(), max_words=5)
        assert 0 < len(tiny.split()) <= 5


class TestTemplateQuestions:
    def test_row_label_period_and_change_questions(self):
        questions = template_questions(
            [TABLE_TEXT],
            [["Item 8. Financial Statements", "Consolidated Statements of Operations"]],
            ["Revenues", "Net income (1)"],
            ["revenue"],
            ["2015", "2014"],
        )
        assert questions == [
            "What was Revenues in 2015?",
            "What does Consolidated Statements of Operations say about revenue?",
            "How did Revenues change from 2014 to 2015?",
            "What was Net income in 2015?",
            "What does Consolidated Statements of Operations say?",
        ]

    def test_bounded_and_deterministic(self):
        args = ([""], [["Item 7. MD&A", "Liquidity"]], [f"Row {i}" for i in range(20)], [f"t{i}" for i in range(9)], [])
        questions = template_questions(*args, max_questions=5)
        assert len(questions) == 5 and len(set(questions)) == 5
        assert template_questions(*args, max_questions=5) == questions

    def test_change_question_only_for_metrics(self):
        paths = [["Item 3. Legal Proceedings"]]
        topics = template_questions(["text"], paths, [], ["legal proceedings"], ["FY2015"])
        assert not any(q.startswith("How did") for q in topics)
        metrics = template_questions(["text"], paths, [], ["legal proceedings", "capex"], ["FY2015"], metrics=["capex"])
        assert "How did capex change in FY2015?" in metrics

    def test_sentence_headings_fall_back_to_item_label(self):
        paths = [["Item 1A. Risk Factors", "If we fail to retain members, our business will suffer."]]
        assert template_questions(["x"], paths, [], ["competition"], [])[0] == (
            "What does Item 1A. Risk Factors say about competition?"
        )

    def test_periods_from_texts_when_none_given(self):
        questions = template_questions(["In 2019 and 2019 and 2018"], [["Item 7"]], ["Revenue"], [], [])
        assert questions[0] == "What was Revenue in 2019?"
        assert "How did Revenue change from 2018 to 2019?" in questions

    def test_nothing_to_ask_about(self):
        assert template_questions([""], [], [], [], []) == ["What does this section say?"]


class TestHelpers:
    def test_markdown_row_labels(self):
        assert markdown_row_labels(TABLE_TEXT) == ["Revenues", "Net income", "Earnings per share"]
        assert markdown_row_labels("no table here") == []

    def test_clean_row_label(self):
        assert clean_row_label("  Net income (2) ") == "Net income"
        assert clean_row_label("Current assets:") == "Current assets"
        assert clean_row_label("2015") == ""
        assert len(clean_row_label(" ".join(["word"] * 30)).split()) <= 10

    def test_table_periods(self):
        columns = ["", "Year ended December 31, 2014", "Year ended December 31, 2015", "2013"]
        assert table_periods(columns) == ["2015", "2014", "2013"]

    def test_terms(self):
        lexicon = Lexicon.load_default()
        texts = ["Revenues grew. Revenue was up.", "Capital expenditures rose. Legal proceedings are pending."]
        concepts = rank_term_concepts([term_mentions(t, lexicon) for t in texts])
        assert concepts[0][0] == "revenue"
        assert salient_terms(texts, lexicon)[0] in ("revenue", "revenues")
        metrics = metric_terms(concepts, lexicon)
        assert "capital expenditures" in metrics and "legal proceedings" not in metrics


class TestParseNodeReply:
    def test_plain_json(self):
        reply = '{"summary": "Revenue rose 23%.", "questions": ["What was revenue?", "Why did it rise?"]}'
        assert parse_node_reply(reply) == ("Revenue rose 23%.", ["What was revenue?", "Why did it rise?"])

    def test_fences_reasoning_and_prose_around(self):
        reply = '<think>hmm</think>Sure!\n```json\n{"summary": "S.", "questions": ["1. Q one?", "- Q two?"]}\n```'
        assert parse_node_reply(reply) == ("S.", ["Q one?", "Q two?"])

    def test_questions_as_string_and_bounds(self):
        reply = '{"summary": "' + " ".join(["w"] * 50) + '", "questions": "A?\\nB?\\nC?\\nD?"}'
        summary, questions = parse_node_reply(reply, max_words=10, max_questions=3)
        assert len(summary.split()) == 10 and questions == ["A?", "B?", "C?"]

    @pytest.mark.parametrize(
        "reply",
        ["", "no json at all", "{broken", "[1, 2]", '{"summary": 3, "questions": [1, 2]}', '{"summary": " "}'],
    )
    def test_unusable_replies(self, reply):
        assert parse_node_reply(reply) == (None, None)

    def test_partial_reply(self):
        assert parse_node_reply('{"summary": "Only a summary."}') == ("Only a summary.", None)
