"""Store and argument errors of the CLI: one line on stderr naming the store, exit 1 (2 for argument errors), and
the store intact afterwards. Stores are built directly (no embedding model), so these are unit tests."""

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from haystack import Document
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

from haystack_fin.cli import main
from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore

IN_USE = (
    "in use by another process (embedded Qdrant allows one client per folder; use a Qdrant server for "
    "concurrent access)"
)


def _store(path: Path, dim: int = 384, index: str = "haystack_fin") -> QdrantEdgeDocumentStore:
    """A store of the shipped default kind (Qdrant Edge)."""
    return QdrantEdgeDocumentStore(path=str(path), index=index, embedding_dim=dim)


def _local_store(path: Path, dim: int = 384, index: str = "haystack_fin") -> QdrantDocumentStore:
    """qdrant-client local mode: ``--store-backend local``, and what haystack-fin wrote before Edge."""
    return QdrantDocumentStore(path=str(path), index=index, embedding_dim=dim, progress_bar=False)


def _filing_node(filing_id: str, n_items: int = 3, dim: int = 384) -> Document:
    items = [
        {"item": f"S{i}", "title": f"Section {i}", "part": None, "start_page": i, "end_page": i, "n_chunks": 1}
        for i in range(1, n_items + 1)
    ]
    meta = {
        "node_type": "filing",
        "filing_id": filing_id,
        "company": "Acme",
        "form": "10-K",
        "period": "FY2024",
        "n_pages": n_items,
        "items": items,
        "n_chunks_by_modality": {"text": n_items, "table": 0, "image": 0},
    }
    return Document(id=f"{filing_id}#filing", content="Acme 10-K", meta=meta, embedding=[1.0] + [0.0] * (dim - 1))


@pytest.fixture
def store_dir(tmp_path) -> Path:
    """A Qdrant Edge store (the default kind) holding two filing nodes."""
    path = tmp_path / "idx"
    store = _store(path)
    store.write_documents([_filing_node("acme-a"), _filing_node("acme-b")])
    store.close()
    return path


def _count(path: Path) -> int:
    store = _store(path)
    try:
        return store.count_documents()
    finally:
        store.close()


_HOLDER = textwrap.dedent(
    """
    import sys
    from haystack_fin.document_stores.qdrant_edge import QdrantEdgeDocumentStore
    store = QdrantEdgeDocumentStore(path=sys.argv[1], index="haystack_fin", embedding_dim=384)
    store.count_documents()
    print("holding", flush=True)
    sys.stdin.read()
    store.close()
    """
)


@pytest.fixture
def held_store(store_dir):
    """``store_dir`` held by a client in another process for the duration of the test."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(store_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "holding"
        yield store_dir
    finally:
        proc.stdin.close()
        proc.wait(timeout=120)


def _err_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["inspect"],
        ["ask", "What was revenue?", "--no-llm"],
        ["index", "tests/fixtures/bestbuy-10q-2023-07-29.pdf", "-q"],
    ],
    ids=["inspect", "ask", "index"],
)
def test_store_in_use_by_another_process(held_store, argv, capsys):
    t0 = time.monotonic()
    assert main([*argv, "--store", str(held_store)]) == 1
    assert _err_lines(capsys) == [f"error: {held_store}: {IN_USE}"]
    assert time.monotonic() - t0 < 60  # before the filing was parsed or a model loaded


def test_store_in_use_by_another_client_of_this_process(store_dir, capsys):
    holder = _store(store_dir)
    holder.count_documents()
    try:
        assert main(["inspect", "--store", str(store_dir)]) == 1
        assert _err_lines(capsys) == [f"error: {store_dir}: {IN_USE}"]
        assert holder.count_documents() == 2  # the holder is undisturbed
    finally:
        holder.close()
    assert _count(store_dir) == 2


@pytest.mark.parametrize("argv", [["inspect"], ["ask", "What was revenue?", "--no-llm"]], ids=["inspect", "ask"])
def test_mistyped_store_is_not_created(tmp_path, argv, capsys):
    missing = tmp_path / "fin-idnex"
    assert main([*argv, "--store", str(missing)]) == 1
    assert _err_lines(capsys) == [f"error: {missing}: no such store"]
    assert not missing.exists()


def test_inspect_create_makes_an_empty_store(tmp_path, capsys):
    new = tmp_path / "new"
    assert main(["inspect", "--store", str(new), "--create", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert new.is_dir() and _count(new) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect"],
        ["ask", "What was revenue?", "--no-llm"],
        ["index", "tests/fixtures/bestbuy-10q-2023-07-29.pdf", "-q"],
        ["eval", "financebench", "--questions", "q.jsonl", "--pdfs", ".", "--out", "r.json"],
    ],
    ids=["inspect", "ask", "index", "eval"],
)
def test_store_that_is_a_file(tmp_path, argv, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("my notes")
    assert main([*argv, "--store", str(path)]) == 1
    assert _err_lines(capsys) == [f"error: {path}: is a file"]
    assert path.read_text() == "my notes"


def test_folder_that_is_not_a_store(tmp_path, capsys):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8")
    for argv in (["inspect"], ["index", "tests/fixtures/bestbuy-10q-2023-07-29.pdf", "-q"]):
        assert main([*argv, "--store", str(folder)]) == 1
        assert _err_lines(capsys) == [
            f"error: {folder}: not a haystack-fin store (no haystack_fin/edge_config.json: not a Qdrant Edge folder)"
        ]
    assert sorted(p.name for p in folder.iterdir()) == ["cat.jpg"]
    assert main(["inspect", "--store", str(folder), "--store-backend", "local"]) == 1
    assert _err_lines(capsys) == [
        f"error: {folder}: not a haystack-fin store (no meta.json: not an embedded Qdrant folder)"
    ]


@pytest.fixture
def local_store_dir(tmp_path) -> Path:
    """A qdrant-client local-mode store (the format of haystack-fin before Edge) holding two filing nodes."""
    path = tmp_path / "old-idx"
    store = _local_store(path)
    store.write_documents([_filing_node("acme-a"), _filing_node("acme-b")])
    store.close()
    return path


@pytest.mark.parametrize(
    "argv",
    [
        ["inspect"],
        ["ask", "What was revenue?", "--no-llm"],
        ["index", "tests/fixtures/bestbuy-10q-2023-07-29.pdf", "-q"],
    ],
    ids=["inspect", "ask", "index"],
)
def test_a_local_mode_store_gives_the_reindex_line(local_store_dir, argv, capsys):
    before = sorted(p.name for p in local_store_dir.iterdir())
    assert main([*argv, "--store", str(local_store_dir)]) == 1
    assert _err_lines(capsys) == [
        f"error: {local_store_dir}: not a haystack-fin Edge store (written by qdrant-client local mode or an older "
        "haystack-fin): re-index with `haystack-fin index ... --store NEW`, or pass --store-backend local"
    ]
    assert sorted(p.name for p in local_store_dir.iterdir()) == before  # nothing created next to the old data


def test_a_local_mode_store_is_read_with_store_backend_local(local_store_dir, capsys):
    assert main(["inspect", "--store", str(local_store_dir), "--store-backend", "local", "--json"]) == 0
    assert [p["filing_id"] for p in json.loads(capsys.readouterr().out)] == ["acme-a", "acme-b"]
    holder = _local_store(local_store_dir)
    holder.count_documents()
    try:  # local mode's own lock is still reported as such
        assert main(["inspect", "--store", str(local_store_dir), "--store-backend", "local"]) == 1
        assert _err_lines(capsys) == [f"error: {local_store_dir}: {IN_USE}"]
    finally:
        holder.close()


def test_an_edge_store_of_another_format_version_says_how_to_reindex(store_dir, capsys):
    record_file = store_dir / "haystack_fin" / "haystack_fin_store.json"
    record = json.loads(record_file.read_text())
    record_file.write_text(json.dumps({**record, "schema_version": 0, "created_by": "haystack-fin 0.0.1"}))
    assert main(["inspect", "--store", str(store_dir)]) == 1
    assert _err_lines(capsys) == [
        f"error: {store_dir}: written in store format 0 by haystack-fin 0.0.1, this haystack-fin reads format 1: "
        "re-index with `haystack-fin index ... --store NEW`"
    ]


def test_store_with_the_wrong_vector_size(tmp_path, capsys):
    path = tmp_path / "other"
    store = _store(path, dim=4)
    store.write_documents([_filing_node("x", dim=4)])
    store.close()
    for argv in (["inspect"], ["index", "tests/fixtures/bestbuy-10q-2023-07-29.pdf", "-q"]):
        assert main([*argv, "--store", str(path)]) == 1
        assert _err_lines(capsys) == [
            f"error: {path}: not a haystack-fin store (collection 'haystack_fin' has vectors of size 4, the "
            "pipeline's embedder makes 384)"
        ]
    store = _store(path, dim=4)
    assert store.count_documents() == 1
    store.close()


def test_store_without_the_collection(store_dir, capsys):
    assert main(["inspect", "--store", str(store_dir), "--index", "other"]) == 1
    assert _err_lines(capsys) == [
        f"error: {store_dir}: not a haystack-fin store (no collection 'other'; collections: 'haystack_fin')"
    ]
    assert main(["inspect", "--store", str(store_dir), "--json"]) == 0  # the store itself is fine
    assert [p["filing_id"] for p in json.loads(capsys.readouterr().out)] == ["acme-a", "acme-b"]
    assert _count(store_dir) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ask", "q", "-k", "0"], "argument -k: must be at least 1, got 0"),
        (["ask", "q", "-k", "-1"], "argument -k: must be at least 1, got -1"),
        (["ask", "q", "-k", "two"], "argument -k: expected a positive integer, got 'two'"),
        (["index", "x.pdf", "--timeout", "-1"], "argument --timeout: must be 0 (no limit) or a positive number"),
        (["index", "x.pdf", "--workers", "0"], "argument --workers: must be at least 1, got 0"),
        (["index", "x.pdf", "--meta", "company"], "argument --meta: expected key=value, got 'company'"),
        (
            ["eval", "financebench", "--questions", "q", "--pdfs", ".", "--out", "o", "--k", "5,0"],
            "argument --k: expected comma-separated positive integers",
        ),
        (
            ["eval", "financebench", "--questions", "q", "--pdfs", ".", "--out", "o", "--workers", "0"],
            "argument --workers: must be at least 1, got 0",
        ),
    ],
)
def test_argument_errors_are_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err.strip().splitlines()[-1] and "Traceback" not in err


def test_unexpected_error_is_one_line_and_a_traceback_with_v(tmp_path, capsys):
    argv = ["index", "tests/fixtures/bestbuy-10q-2023-07-29.pdf", "--store", str(tmp_path / "s")]
    missing = tmp_path / "nope.yaml"
    assert main([*argv, "--pipeline", str(missing)]) == 1
    assert _err_lines(capsys) == [f"error: FileNotFoundError: [Errno 2] No such file or directory: '{missing}'"]
    assert main(["-v", *argv, "--pipeline", str(missing)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.strip().endswith(f"No such file or directory: '{missing}'")


@pytest.mark.slow
def test_inspect_into_a_closed_pipe_exits_quietly(tmp_path):
    path = tmp_path / "big"
    store = _store(path)
    store.write_documents([_filing_node(f"filing-{i:03d}", n_items=40) for i in range(60)])  # ~1 MB of JSON
    store.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "haystack_fin.cli", "inspect", "--json", "--store", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().strip() == b"["
    proc.stdout.close()  # what `| head -1` does
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 141
    assert err.decode() == ""
    assert _count(path) == 60


def test_truncated_pdf_logs_one_line_and_no_traceback(fixtures, tmp_path, caplog):
    data = (fixtures / "netflix-10k-2015.pdf").read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(data[: len(data) // 10])  # PyMuPDF: RuntimeError "Invalid number of pages"
    with caplog.at_level("DEBUG", logger="haystack_fin"):
        result = FilingConverter().run(sources=[str(truncated)])
    (failure,) = result["failures"]
    assert failure["error"].startswith(f"{truncated}: unexpected RuntimeError")
    ours = [r for r in caplog.records if r.name.startswith("haystack_fin")]
    above_debug = [r for r in ours if r.levelname != "DEBUG"]
    assert [r.getMessage() for r in above_debug] == [f"Skipping {failure['error']}"]
    assert all(r.exc_info is None for r in above_debug)
    assert any(r.exc_info for r in ours if r.levelname == "DEBUG")  # the traceback, for -v


@pytest.mark.integration
def test_index_truncated_pdf_prints_one_line(fixtures, tmp_path):
    data = (fixtures / "netflix-10k-2015.pdf").read_bytes()
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(data[: len(data) // 10])
    proc = subprocess.run(
        [sys.executable, "-m", "haystack_fin.cli", "index", str(truncated), "--store", str(tmp_path / "s"), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"error: {truncated}: unexpected RuntimeError: code=7: Invalid number of pages"
    ]


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question_is_an_error_not_passages(tmp_path, question, capsys):
    assert main(["ask", question, "--store", str(tmp_path / "never-opened"), "--no-llm"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "error: the question is empty"
    assert not (tmp_path / "never-opened").exists()


def test_an_unreadable_alias_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "aliases.yaml"
    bad.write_text("- a list, not a mapping\n")
    assert main(["ask", "What was revenue?", "--store", str(tmp_path / "none"), "--aliases", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: an alias file maps a company")


def test_eval_without_a_filings_folder_is_one_line(tmp_path, capsys):
    argv = ["eval", "financebench", "--questions", "q.jsonl", "--out", str(tmp_path / "o.json")]
    assert main(argv) == 1
    assert _err_lines(capsys) == [
        "error: ValueError: name the folder(s) holding DOC_NAME.pdf / DOC_NAME.html with --filings DIR (or --pdfs DIR)"
    ]


def test_eval_reads_every_filings_and_pdfs_folder():
    from haystack_fin.cli import _filing_dirs, build_parser

    args = build_parser().parse_args(
        ["eval", "financebench", "--questions", "q", "--out", "o", "--filings", "a", "--pdfs", "p", "--filings", "b"]
    )
    assert _filing_dirs(args) == ["p", "a", "b"]
