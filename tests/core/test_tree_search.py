import numpy as np
import pytest

from haystack_fin.core.retrieval.tree_search import (
    RRF_K,
    IndexNode,
    ItemTree,
    beam_search,
    build_item_trees,
    flat_search,
    fuse_rankings,
    n_candidates_for,
)

FID = "ACME_2023_10K"
# One distinct financial word per chunk, so BM25 and one-hot vectors both point at a single chunk.
WORDS = [
    "revenue", "capex", "dividend", "goodwill", "lease", "pension", "inventory", "tax",
    "debt", "cash", "margin", "segment", "litigation", "warranty", "buyback", "impairment",
]  # fmt: skip
DIM = len(WORDS)


def one_hot(j: int) -> list[float]:
    vec = [0.05] * DIM  # small shared offset: no exactly-orthogonal ties everywhere
    vec[j] = 1.0
    return vec


def chunk_id(j: int) -> str:
    return f"{FID}#chunk-{j:05d}"


def node_id(kind: str, level: int, j: int, item: str = "7") -> str:
    return f"{FID}#tree-{item}-{kind}{level}-{j}"


def synthetic_nodes(item: str = "7", with_tree: bool = True, soft_extra: bool = False) -> list[IndexNode]:
    """16 chunks under a depth-3 tree: root -> 4 mid nodes -> 2 bottom nodes each -> 2 chunks each.

    Bottom node b holds chunks 2b, 2b+1; mid node m holds bottoms 2m, 2m+1 (chunks 4m..4m+3). With ``soft_extra``
    chunk 3 also hangs under bottom 2 (soft clustering: two parents).
    """
    nodes = [
        IndexNode(chunk_id(j), "chunk", item, f"The {WORDS[j]} discussion of the period.", embedding=one_hot(j))
        for j in range(16)
    ]
    if not with_tree:
        return nodes
    bottom_children = {b: [chunk_id(2 * b), chunk_id(2 * b + 1)] for b in range(8)}
    if soft_extra:
        bottom_children[2].append(chunk_id(3))
    leaves_of = {
        (2, b): [int(c.rsplit("-", 1)[1]) for c in bottom_children[b]] for b in range(8)
    }  # bottom -> chunk numbers
    for m in range(4):
        leaves_of[(1, m)] = sorted({j for b in (2 * m, 2 * m + 1) for j in leaves_of[(2, b)]})
    leaves_of[(0, 0)] = list(range(16))
    children = {(0, 0): [(1, m) for m in range(4)]}
    children.update({(1, m): [(2, 2 * m), (2, 2 * m + 1)] for m in range(4)})
    parent = {child: key for key, kids in children.items() for child in kids}
    for (level, j), leaves in leaves_of.items():
        for kind in ("s", "q"):
            kids = (
                [node_id(kind, *c, item=item) for c in children[(level, j)]] if level < 2 else list(bottom_children[j])
            )
            par = parent.get((level, j))
            emb = np.mean([one_hot(x) for x in leaves], axis=0).tolist() if kind == "q" else None
            text = (
                " ".join(f"The {WORDS[x]} discussion." for x in leaves)
                if kind == "s"
                else "\n".join(f"What about {WORDS[x]}?" for x in leaves)
            )
            nodes.append(
                IndexNode(
                    node_id(kind, level, j, item),
                    "summary" if kind == "s" else "question",
                    item,
                    text,
                    level=level,
                    parent_id=node_id(kind, *par, item=item) if par else None,
                    children_ids=tuple(kids),
                    embedding=emb,
                )
            )
    return nodes


@pytest.fixture
def tree() -> ItemTree:
    return build_item_trees(FID, synthetic_nodes())["7"]


class TestBuildItemTrees:
    def test_groups_by_item_and_finds_roots(self):
        nodes = synthetic_nodes("7") + synthetic_nodes("1A", with_tree=False)
        nodes.append(IndexNode(f"{FID}#filing", "filing", "", "ACME 10-K"))
        trees = build_item_trees(FID, nodes)
        assert set(trees) == {"7", "1A"}
        t7 = trees["7"]
        assert t7.summary_roots == [node_id("s", 0, 0)]
        assert t7.question_roots == [node_id("q", 0, 0)]
        assert t7.has_summary_tree and t7.has_question_tree
        assert t7.n_leaves == 16
        assert np.allclose(np.linalg.norm(t7.leaf_embeddings, axis=1), 1.0)
        assert not trees["1A"].has_summary_tree and not trees["1A"].has_question_tree

    def test_question_tree_without_vectors_is_unusable(self):
        nodes = [
            IndexNode(n.node_id, n.node_type, n.item, n.text, n.level, n.parent_id, n.children_ids, None)
            if n.node_type == "question"
            else n
            for n in synthetic_nodes()
        ]
        assert not build_item_trees(FID, nodes)["7"].has_question_tree


class TestFusion:
    def test_rrf_scaled_to_one_for_first_in_both(self):
        fused = fuse_rankings(np.array([3.0, 1.0, 0.0]), np.array([0.9, 0.1, 0.5]))
        assert fused[0] == pytest.approx(1.0)
        # leaf 2: no shared term -> only its dense rank (2nd) counts
        assert fused[2] == pytest.approx((RRF_K + 1) / 2 / (RRF_K + 2))
        assert fused[0] > fused[1] and fused[0] > fused[2]

    def test_without_dense(self):
        fused = fuse_rankings(np.array([0.0, 2.0]), None)
        assert fused[0] == 0.0 and fused[1] == pytest.approx(0.5)

    def test_n_candidates(self):
        assert n_candidates_for(2, 10) == 10
        assert n_candidates_for(5, 10) == 15


class TestBeamSearch:
    @pytest.mark.parametrize("beam_width", [1, 2, 3])
    def test_beam_width_respected_per_level(self, tree, beam_width):
        result = beam_search(tree, "pension", one_hot(5), beam_width=beam_width, n_candidates=50)
        assert result.mode == "dual_tree"
        for kind in ("summary", "question"):
            visits = result.visits[kind]
            assert [v.depth for v in visits] == [0, 1, 2]
            assert all(len(v.kept) <= beam_width for v in visits)
            assert visits[0].scored == 1  # one root
            assert visits[1].scored == 4  # its 4 mid children
            assert visits[2].scored == 2 * min(beam_width, 4)  # 2 bottoms per kept mid node
            # every leaf under the kept bottom nodes, and nothing else
            assert result.leaves_reached[kind] == 2 * min(beam_width, 8)

    def test_follows_the_right_branch_and_records_paths(self, tree):
        result = beam_search(tree, "pension", one_hot(5), beam_width=1)
        top = result.candidates[0]
        assert top.leaf_id == chunk_id(5)
        assert top.trees == ("summary", "question")
        assert top.tree_paths["summary"] == [node_id("s", 0, 0), node_id("s", 1, 1), node_id("s", 2, 2), chunk_id(5)]
        assert top.tree_paths["question"] == [node_id("q", 0, 0), node_id("q", 1, 1), node_id("q", 2, 2), chunk_id(5)]
        assert top.score == pytest.approx(1.0)
        assert top.bm25_score > 0 and top.dense_score == pytest.approx(max(c.dense_score for c in result.candidates))

    def test_leaves_pooled_from_both_trees(self, tree):
        # The words point at chunk 5, the vector at chunk 14: each tree reaches a different branch.
        result = beam_search(tree, "pension", one_hot(14), beam_width=1)
        by_id = {c.leaf_id: c for c in result.candidates}
        assert set(by_id) == {chunk_id(4), chunk_id(5), chunk_id(14), chunk_id(15)}
        assert by_id[chunk_id(5)].trees == ("summary",)
        assert by_id[chunk_id(14)].trees == ("question",)
        assert set(by_id[chunk_id(14)].tree_paths) == {"question"}
        # both are scored by both signals regardless of which tree reached them
        assert by_id[chunk_id(14)].bm25_score == 0.0 and by_id[chunk_id(5)].dense_score is not None
        assert result.leaves_reached == {"summary": 2, "question": 2}

    def test_soft_clustered_leaf_takes_path_of_best_parent(self):
        tree = build_item_trees(FID, synthetic_nodes(soft_extra=True))["7"]
        result = beam_search(tree, "pension", one_hot(5), beam_width=1, use_question_tree=False)
        by_id = {c.leaf_id: c for c in result.candidates}
        assert by_id[chunk_id(3)].tree_paths["summary"][-2:] == [node_id("s", 2, 2), chunk_id(3)]

    def test_n_candidates_caps_output(self, tree):
        result = beam_search(tree, "pension", one_hot(5), beam_width=3, n_candidates=4)
        assert len(result.candidates) == 4
        scores = [c.score for c in result.candidates]
        assert scores == sorted(scores, reverse=True)

    def test_only_question_tree(self, tree):
        result = beam_search(tree, "pension", one_hot(14), beam_width=1, use_summary_tree=False)
        assert result.mode == "question_tree"
        assert set(result.visits) == {"question"}
        assert {c.leaf_id for c in result.candidates} == {chunk_id(14), chunk_id(15)}

    def test_only_summary_tree(self, tree):
        result = beam_search(tree, "pension", one_hot(14), beam_width=1, use_question_tree=False)
        assert result.mode == "summary_tree"
        assert {c.leaf_id for c in result.candidates} == {chunk_id(4), chunk_id(5)}

    def test_both_trees_off_is_flat(self, tree):
        result = beam_search(
            tree, "pension", one_hot(14), n_candidates=20, use_summary_tree=False, use_question_tree=False
        )
        assert result.mode == "flat" and result.visits == {}
        assert len(result.candidates) == 16
        assert all(c.trees == () and c.tree_paths == {} for c in result.candidates)

    def test_item_without_tree_falls_back_to_flat(self):
        tree = build_item_trees(FID, synthetic_nodes(with_tree=False))["7"]
        result = beam_search(tree, "pension", one_hot(5), n_candidates=5)
        assert result.mode == "flat" and "no tree" in (result.note or "")
        assert result.candidates[0].leaf_id == chunk_id(5)
        assert result.candidates[0].score == pytest.approx(1.0)
        assert len(result.candidates) == 5

    def test_query_terms_stand_for_the_query_text(self, tree):
        # A question analysis hands its terms over; they, not the text, are the BM25 query.
        given = beam_search(tree, "zzzz", one_hot(14), beam_width=1, use_question_tree=False, query_terms=["pension"])
        read = beam_search(tree, "pension", one_hot(14), beam_width=1, use_question_tree=False)
        assert [c.leaf_id for c in given.candidates] == [c.leaf_id for c in read.candidates]
        flat = flat_search(tree, "zzzz", None, n_candidates=1, query_terms=["pension"])
        assert flat.candidates[0].leaf_id == chunk_id(5)

    def test_plural_matches_singular(self, tree):
        # The one BM25's terms fold plurals, as the lexicon does.
        result = flat_search(tree, "pensions and dividends?", None, n_candidates=2)
        assert {c.leaf_id for c in result.candidates} == {chunk_id(2), chunk_id(5)}

    def test_summary_tree_skipped_without_lexical_signal(self, tree):
        result = beam_search(tree, "zzzz", one_hot(9), beam_width=1)
        assert result.mode == "question_tree"
        assert "vocabulary" in (result.note or "")
        assert result.candidates[0].leaf_id == chunk_id(9)

    def test_without_query_embedding_summary_tree_only(self, tree):
        result = beam_search(tree, "pension", None, beam_width=1)
        assert result.mode == "summary_tree"
        assert result.candidates[0].leaf_id == chunk_id(5)
        assert result.candidates[0].dense_score is None

    def test_allowed_leaves_restrict_output(self, tree):
        allowed = {chunk_id(4)}
        result = beam_search(tree, "pension", one_hot(5), beam_width=1, allowed_leaf_ids=allowed)
        assert [c.leaf_id for c in result.candidates] == [chunk_id(4)]
        flat = flat_search(tree, "pension", one_hot(5), allowed_leaf_ids=allowed)
        assert [c.leaf_id for c in flat.candidates] == [chunk_id(4)]

    def test_dimension_mismatch_is_an_error(self, tree):
        with pytest.raises(ValueError, match="dimension"):
            beam_search(tree, "pension", [1.0, 0.0, 0.0])

    def test_invalid_beam_width(self, tree):
        with pytest.raises(ValueError, match="beam_width"):
            beam_search(tree, "pension", one_hot(5), beam_width=0)

    def test_trace_is_json_friendly(self, tree):
        import json

        trace = beam_search(tree, "pension", one_hot(5)).trace()
        assert json.loads(json.dumps(trace))["visited"]["summary"][0]["kept"] == [node_id("s", 0, 0)]
