"""benchmarks/bench_scale.py: cloning a filing into a look-alike distractor (no model, no store)."""

import json

from haystack import Document
from helpers.benchmark_modules import load_benchmark

from haystack_fin.core import schema

bench = load_benchmark("bench_scale")
FID = "BESTBUY_2019_10K"
HEAD = "BEST BUY CO., INC. 10-K FY2019"


def _filing() -> list[Document]:
    base = {
        schema.FILING_ID: FID,
        schema.COMPANY: "BEST BUY CO., INC.",
        schema.FORM: "10-K",
        schema.PERIOD: "FY2019",
        schema.FISCAL_YEAR: 2019,
        schema.PERIOD_END: "2019-02-02",
        schema.SOURCE_PATH: "/data/BESTBUY_2019_10K.pdf",
    }
    chunk_a, chunk_b = schema.chunk_id(FID, 0), schema.chunk_id(FID, 1)
    summary = schema.tree_node_id(FID, "8", "s", 1, 0)
    return [
        Document(
            id=schema.filing_node_id(FID),
            content=f"{HEAD}\nItem 8: Financial Statements",
            meta={**base, schema.NODE_TYPE: "filing", schema.N_PAGES: 90},
            embedding=[0.1] * 4,
        ),
        Document(
            id=chunk_a,
            content="Revenue in fiscal 2019 was $42,879 million.",
            meta={
                **base,
                schema.NODE_TYPE: "chunk",
                schema.TABLE_ID: schema.table_id(FID, 3),
                schema.TREE_PARENT_ID: summary,
                schema.TREE_PARENT_IDS: [summary],
                schema.CONTEXT: f"{HEAD} | Item 8",
                schema.PAGE_NUMBERS: [75],
                # Stored graph meta (FilingSplitter graph_meta, JSON strings): entity rows, edges naming chunk ids.
                schema.GRAPH_ENTITIES: json.dumps([["metric", "revenue", "Revenue", 0], ["period", "FY2019", "", 11]]),
                schema.GRAPH_EDGES: json.dumps(
                    [dict(source=chunk_a, target=chunk_b, type="table", kind="caption", confidence=0.85)]
                ),
            },
            embedding=[0.2, 0.3, 0.4, 0.5],
        ),
        Document(
            id=chunk_b,
            content="Second chunk.",
            meta={**base, schema.NODE_TYPE: "chunk", schema.TREE_PARENT_ID: summary},
            embedding=[0.5, 0.4, 0.3, 0.2],
        ),
        Document(
            id=summary,
            content="summary",
            meta={
                **base,
                schema.NODE_TYPE: "summary",
                schema.TREE_CHILDREN_IDS: [chunk_a, chunk_b],
                schema.LEAF_IDS: [chunk_a, chunk_b],
                schema.TWIN_ID: schema.tree_node_id(FID, "8", "q", 1, 0),
            },
            embedding=[0.9, 0.1, 0.0, 0.0],
        ),
    ]


def test_clone_rewrites_ids_and_meta_and_keeps_vectors():
    nodes = _filing()
    spec = bench.clone_spec(FID, "10-K", 2019, 1)
    clones = bench.clone_filing(nodes, spec)

    assert len(clones) == len(nodes)
    assert len({c.id for c in clones}) == len(clones)
    assert all(schema.filing_id_of(c.id) == spec.filing_id for c in clones)
    assert {c.id for c in clones}.isdisjoint(n.id for n in nodes)
    for node, clone in zip(nodes, clones, strict=True):
        assert clone.embedding == node.embedding
        assert clone.meta[schema.FILING_ID] == spec.filing_id
        assert clone.meta[schema.COMPANY] == spec.company != node.meta[schema.COMPANY]
        assert clone.meta[schema.TICKER] == spec.ticker
        assert clone.meta[schema.FISCAL_YEAR] == 2019 + spec.year_shift
        assert clone.meta[schema.PERIOD] == f"FY{2019 + spec.year_shift}"
        assert clone.meta[schema.PERIOD_END] == f"{2019 + spec.year_shift}-02-02"
        assert FID not in clone.meta[schema.SOURCE_PATH]
        # No meta value still names the source filing (ids, parents, children, twins, tables, context).
        assert FID not in repr(clone.meta)
    chunk = clones[1]
    assert chunk.content == nodes[1].content  # chunk text is copied: same passage, other company
    assert chunk.meta[schema.TABLE_ID] == schema.table_id(spec.filing_id, 3)
    assert chunk.meta[schema.CONTEXT].startswith(f"{spec.company} 10-K FY{2019 + spec.year_shift} | ")
    assert clones[0].content.startswith(f"{spec.company} 10-K FY{2019 + spec.year_shift}\n")
    assert clones[3].meta[schema.LEAF_IDS] == [clones[1].id, clones[2].id]
    # The stored graph edges name the clone's chunks; the entities (read from the copied text) are copied.
    (edge,), (source_edge,) = json.loads(chunk.meta[schema.GRAPH_EDGES]), json.loads(nodes[1].meta[schema.GRAPH_EDGES])
    assert (edge["source"], edge["target"]) == (clones[1].id, clones[2].id)
    assert {k: v for k, v in edge.items() if k not in ("source", "target")} == {
        k: v for k, v in source_edge.items() if k not in ("source", "target")
    }
    assert chunk.meta[schema.GRAPH_ENTITIES] == nodes[1].meta[schema.GRAPH_ENTITIES]
    assert nodes[1].meta[schema.FILING_ID] == FID  # the source is not changed


def test_distractors_have_unique_filing_ids_across_cycles():
    by_filing = {FID: _filing()}
    n = len(bench.COMPANIES) * 2 + 3  # past one cycle of names: same company, another year
    clones = list(bench.distractors(by_filing, n))
    fids = [c[0].meta[schema.FILING_ID] for c in clones]
    assert len(set(fids)) == n
    periods = {(c[0].meta[schema.COMPANY], c[0].meta[schema.PERIOD]) for c in clones}
    assert len(periods) == n
    ids = [d.id for c in clones for d in c]
    assert len(set(ids)) == len(ids)


def test_shift_years_handles_leap_day():
    assert bench.shift_years("2020-02-29", -1) == "2019-02-28"
    assert bench.shift_years("FY2024 Q2", -3) == "FY2021 Q2"


def test_write_clone_and_reload_through_an_edge_source(tmp_path):
    """The source index may be a Qdrant Edge folder (the default store): detected, read back whole from a copy."""
    source = tmp_path / "src"
    store = bench._open_store("edge", source, recreate=True)
    padded = [Document(id=d.id, content=d.content, meta=d.meta, embedding=d.embedding + [0.0] * (bench.DIM - 4))
              for d in _filing()]  # fmt: skip
    store.write_documents(padded)
    bench._close_store(store)
    assert bench.source_backend(source) == "edge"
    assert bench.source_backend(tmp_path / "nothing-here") == "local"
    work = tmp_path / "work"
    work.mkdir()
    by_filing = bench.load_source(source, work)
    assert sorted(by_filing) == [FID] and len(by_filing[FID]) == 4
    assert not (work / "source-copy").exists()  # the copy is removed, the source untouched
