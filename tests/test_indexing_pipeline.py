import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from haystack import Pipeline

from haystack_fin.cli import filing_profiles, main
from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
from haystack_fin.pipeline_loader import ALLOWED_MODULES, load_pipeline, pipeline_dict, pipelines_dir

INDEXING_YAML = pipelines_dir() / "indexing.yaml"


def test_yaml_loads_with_pipeline_load_and_round_trips():
    with open(INDEXING_YAML) as fp:
        pipe = Pipeline.load(fp, allowed_modules=ALLOWED_MODULES)
    assert set(pipe.to_dict()["components"]) == {"converter", "splitter", "embedder", "tree_builder", "writer"}
    again = Pipeline.loads(pipe.dumps(), allowed_modules=ALLOWED_MODULES).to_dict()
    assert again["components"] == pipe.to_dict()["components"]
    as_set = lambda d: {(c["sender"], c["receiver"]) for c in d["connections"]}  # noqa: E731
    assert as_set(again) == as_set(pipe.to_dict())


def test_store_override_path_and_url(tmp_path):
    local = pipeline_dict("indexing", store_path=str(tmp_path / "idx"))
    store = local["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]
    assert store["path"] == str((tmp_path / "idx").resolve()) and "url" not in store
    server = pipeline_dict("indexing", qdrant_url="http://qdrant:6333")
    store = server["components"]["writer"]["init_parameters"]["document_store"]["init_parameters"]
    assert store["url"] == "http://qdrant:6333" and "path" not in store
    assert store["recreate_index"] is False


def _store(path: Path) -> QdrantEdgeDocumentStore:
    return QdrantEdgeDocumentStore(path=str(path), index="haystack_fin", embedding_dim=384)


@pytest.mark.integration
def test_index_twice_same_count_and_bad_files_reported(tmp_path, fixtures, capsys):
    store_dir = tmp_path / "idx"
    filing = fixtures / "pepsico-8k-2023-05-05.pdf"
    assert main(["index", str(filing), "--store", str(store_dir), "-q"]) == 0
    store = _store(store_dir)
    first = store.count_documents()
    store.close()
    assert main(["index", str(filing), "--store", str(store_dir), "-q"]) == 0
    store = _store(store_dir)
    assert store.count_documents() == first
    store.close()

    bad = tmp_path / "fake.pdf"
    bad.write_text("not a pdf")
    copy = tmp_path / "copy.pdf"
    shutil.copy(fixtures / "bestbuy-10q-2023-07-29.pdf", copy)
    capsys.readouterr()
    assert main(["index", str(bad), str(copy), "--store", str(store_dir), "-q"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {bad}: not a readable PDF (Failed to open stream)"]
    # the store is still usable and holds both good filings
    assert main(["inspect", "--store", str(store_dir), "--json"]) == 0
    profiles = json.loads(capsys.readouterr().out)
    # filing ids from the covers, not the file names
    assert [p["filing_id"] for p in profiles] == ["best-buy_10-Q_FY2024-Q2", "pepsico_8-K_2023-05-03"]
    assert profiles[0]["form"] == "10-Q"
    assert [it["item"] for it in profiles[0]["items"]][:3] == ["cover", "I-1", "I-2"]
    assert set(profiles[0]) == {
        "filing_id",
        "company",
        "form",
        "period",
        "source_path",
        "n_pages",
        "n_chunks_by_modality",
        "items",
        "skipped_pages",
        "unfinished_run",
    }
    assert (profiles[0]["skipped_pages"], profiles[0]["unfinished_run"]) == ([], None)


@pytest.mark.integration
def test_full_10k_end_to_end(tmp_path, fixtures):
    store_dir = tmp_path / "idx"
    pipe = load_pipeline("indexing", store_path=str(store_dir))
    result = pipe.run({"converter": {"sources": [str(fixtures / "netflix-10k-2015.pdf")]}})
    pipe.close()
    assert result["converter"]["failures"] == []
    written = result["writer"]["documents_written"]
    store = _store(store_dir)
    try:
        assert store.count_documents() == written
        (profile,) = filing_profiles(store)
        starts = {it["item"]: it["start_page"] for it in profile["items"]}
        # start pages checked by hand against the PDF's headings
        assert starts["1"] == 3 and starts["1A"] == 5 and starts["7"] == 19 and starts["7A"] == 31
        assert profile["n_pages"] == 72 and profile["company"] == "Netflix, Inc." and profile["period"] == "FY2015"
        nodes = store.filter_documents()
        by_type: dict[str, int] = {}
        for node in nodes:
            by_type[node.meta["node_type"]] = by_type.get(node.meta["node_type"], 0) + 1
        # the shipped YAML builds the summary tree only (question_tree: null and no chat generator)
        assert by_type["filing"] == 1 and by_type["summary"] > 0 and "question" not in by_type
        assert sum(by_type.values()) == written
        chunks = [n for n in nodes if n.meta["node_type"] == "chunk"]
        assert len(chunks) == sum(it["n_chunks"] for it in profile["items"])
        risk = [c for c in chunks if c.meta["item"] == "1A"]
        assert risk and all(5 <= p <= 13 for c in risk for p in c.meta["page_numbers"])
    finally:
        store.close()


@pytest.mark.integration
def test_ask_cli_cites_the_statement_page(tmp_path, fixtures, capsys):
    store_dir = str(tmp_path / "idx")
    assert main(["index", str(fixtures / "bestbuy-10q-2023-07-29.pdf"), "--store", store_dir, "-q"]) == 0
    question = "What were Best Buy's merchandise inventories at quarter end, per the balance sheet?"
    capsys.readouterr()
    assert main(["ask", question, "--store", store_dir, "--json", "--no-llm", "-k", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answer"] is None and len(out["passages"]) == 3
    # the provenance contract: filing, company, form, period, Item, section, pages, modality, table id
    assert set(out["passages"][0]) == {
        "id", "text", "filing_id", "company", "form", "period", "item", "section", "pages", "modality", "table_id",
        "score",
    }  # fmt: skip
    assert out["passages"][0]["form"] == "10-Q" and out["passages"][0]["table_id"]
    top = out["passages"][0]
    # The condensed balance sheet is printed on page 3, in Part I, Item 1.
    assert (top["item"], top["pages"], top["modality"]) == ("I-1", [3], "table") and "5,651" in top["text"]
    assert out["trace"]["retrieval"]["statements"]["asked"] == {"balance_sheet": 1.0}
    assert main(["ask", question, "--store", store_dir, "--no-llm", "--explain", "-k", "1"]) == 0
    printed = capsys.readouterr().out
    table = top["table_id"].rpartition("#")[2]
    where = f"Item I-1 > {top['section'][-1]}, p. 3 [table {table}]"
    cited = f"{top['company']} 10-Q {top['period']} ({top['filing_id']}), {where}"
    assert "Statements: balance_sheet 1.0 (" in printed and f"[1] {cited}\n" in printed
    assert "Fallback: tier " in printed  # the modality fallback's decision, whichever tier fired
    # The console script runs `ask` without torch (torch_free: the shipped query pipeline runs no torch model) and
    # gives the same passages as main() in this process, where torch is importable.
    probe = (
        "import runpy, sys; sys.argv = ['haystack-fin', *sys.argv[1:]]\n"
        "try:\n    runpy.run_module('haystack_fin.cli', run_name='__main__')\n"
        "finally:\n    print('torch:', sys.modules.get('torch', 'never imported'), file=sys.stderr)\n"
    )
    argv = [sys.executable, "-c", probe, "ask", question, "--store", store_dir, "--json", "--no-llm", "-k", "3"]
    child = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr
    assert "torch: None" in child.stderr
    assert [p["id"] for p in json.loads(child.stdout)["passages"]] == [p["id"] for p in out["passages"]]
