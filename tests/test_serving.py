"""Serving: request validation, the answer pipeline over Ollama's wire protocol (a local stub), ``haystack-fin serve``
errors, and (integration) a Hayhooks server on 127.0.0.1 answering ``/run``, ``/v1/chat/completions`` and
``/status`` against a store indexed from the Best Buy 10-Q fixture."""

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline
from helpers.ollama_stub import INVENTED, OllamaStub

from haystack_fin.cli import main
from haystack_fin.pipeline_loader import ALLOWED_MODULES, GENERATION_COMPONENTS, pipeline_dict
from haystack_fin.serving import (
    MAX_QUESTION_CHARS,
    PIPELINE_NAME,
    QDRANT_URL_ENV,
    STORE_ENV,
    RequestError,
    ServingConfig,
    hayhooks_command,
    ollama_reachable,
    render_chat,
    server_environ,
    validate_question,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
QUESTION = "What was Best Buy's total revenue in the second quarter of fiscal 2024?"

TABLE = Document(
    id="BBY#chunk-00059",
    content=(
        "Reportable segment and product category revenue information was as follows ($ in millions):\n"
        "$ in millions\n\n| | Three Months Ended July 29, 2023 | Three Months Ended July 30, 2022 |\n"
        "| --- | --- | --- |\n| Domestic | 8,890 | 9,569 |\n| Total revenue | 9,583 | 10,329 |"
    ),
    meta={"filing_id": "BBY", "company": "BEST BUY CO., INC.", "form": "10-Q", "period": "Q2 FY2024",
          "item": "I-1", "page_numbers": [13], "modality": "table", "table_id": "BBY#table-0022"},
)  # fmt: skip


@pytest.mark.parametrize(
    ("question", "k", "status", "message"),
    [
        ("", 5, 422, "question is empty"),
        ("   \n ", 5, 422, "question is empty"),
        ("x" * 10_000, 5, 413, "question is 10,000 characters; the limit is 2,000"),
        ("revenue?", 0, 422, "k must be an integer from 1 to 50, got 0"),
        ("revenue?", True, 422, "k must be an integer from 1 to 50, got True"),
        (None, 5, 422, "question must be a string"),
    ],
)
def test_bad_requests_are_refused_with_one_line(question, k, status, message):
    with pytest.raises(RequestError) as info:
        validate_question(question, k)
    assert (info.value.status, str(info.value)) == (status, message)


def test_good_question_is_normalized():
    assert validate_question("  What was\nrevenue? ", 3) == ("What was revenue?", 3)
    assert len(validate_question("y" * MAX_QUESTION_CHARS)[0]) == MAX_QUESTION_CHARS


def _generation_part(url: str, model: str | None = None) -> Pipeline:
    """query.yaml's generation components as shipped (gate, prompt builder, OllamaChatGenerator, answer builder,
    checker) and their connections, the generator pointed at ``url``: the part after the window, without a store."""
    data = pipeline_dict("query")
    names = set(GENERATION_COMPONENTS)
    components = {n: data["components"][n] for n in GENERATION_COMPONENTS}
    components["llm"]["init_parameters"].update({"url": url, **({"model": model} if model else {})})
    connections = [
        c for c in data["connections"] if c["sender"].split(".")[0] in names and c["receiver"].split(".")[0] in names
    ]
    assert {"sender": "answer_builder.answers", "receiver": "checker.answers"} in connections
    return Pipeline.from_dict({"components": components, "connections": connections}, allowed_modules=ALLOWED_MODULES)


def _generation_inputs(docs: list[Document], generate: bool | None = None) -> dict[str, Any]:
    # In query.yaml the window feeds gate, answer_builder and checker; here the test does.
    gate = {"documents": docs, **({} if generate is None else {"generate": generate})}
    return {
        "gate": gate,
        "prompt_builder": {"query": QUESTION},
        "answer_builder": {"query": QUESTION, "documents": docs},
        "checker": {"documents": docs},
    }


def test_query_yaml_generation_over_the_ollama_wire_protocol():
    """The YAML's gate, prompt builder, OllamaChatGenerator (pointed at the stub) and answer builder, then its
    checker: the stub's copied figure is supported by the table cell, its invented one is not."""
    with OllamaStub() as stub:
        out = _generation_part(stub.url, "m:1").run(_generation_inputs([TABLE]))
        (request,) = stub.requests
    assert request["model"] == "m:1" and "[1] BEST BUY CO., INC. 10-Q" in request["messages"][-1]["content"]
    assert "Copy every number exactly" in request["messages"][0]["content"]
    answer = out["checker"]["answers"][0]
    assert answer.data == f"The reported figure is 8,890 [1]. The stub also invents {INVENTED} [1]."
    (citation,) = answer.meta["citations"]
    assert citation["numbers"][0]["label"] == "Domestic" and citation["table_id"] == "BBY#table-0022"
    assert [u["text"] for u in answer.meta["unsupported_numbers"]] == [INVENTED]


@pytest.mark.parametrize(("docs", "generate"), [([TABLE], False), ([], None)], ids=["generate-false", "no-passage"])
def test_closed_gate_calls_no_generator(docs, generate):
    with OllamaStub() as stub:
        out = _generation_part(stub.url).run(_generation_inputs(docs, generate))
        assert stub.requests == []
    assert out == {"gate": {"skipped": True}}  # no answer and no error: the caller reports the passages


def test_server_environment_carries_store_allowlist_and_offline_model():
    env = server_environ(
        ServingConfig(store="/data/idx", ollama_url="http://o:1"),
        {"HAYSTACK_DESERIALIZATION_ALLOWLIST": "mine.*", QDRANT_URL_ENV: "http://stale:6333"},
    )
    assert env[STORE_ENV] == "/data/idx" and QDRANT_URL_ENV not in env  # a stale variable never reaches the server
    assert env["HAYSTACK_DESERIALIZATION_ALLOWLIST"] == "mine.*,haystack_fin.*"
    assert env["HF_HUB_OFFLINE"] == "1" and env["HAYHOOKS_STARTUP_DEPLOY_STRATEGY"] == "sequential"


def test_serve_without_a_store_is_one_error_line(tmp_path, capsys):
    assert main(["serve", "--store", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "missing" in err[0]


def test_wrapper_folder_is_where_hayhooks_looks():
    # Hayhooks deploys every first-level folder of --pipelines-dir holding pipeline_wrapper.py, named after it.
    assert (REPO / "pipelines" / PIPELINE_NAME / "pipeline_wrapper.py").is_file()
    assert hayhooks_command("127.0.0.1", 9, REPO / "pipelines")[3:] == [
        "run", "--host", "127.0.0.1", "--port", "9", "--pipelines-dir", str(REPO / "pipelines"),
    ]  # fmt: skip
    assert hayhooks_command("127.0.0.1", 9, REPO / "pipelines", mcp=True)[3:6] == ["mcp", "run", "--host"]


# ---------------------------------------------------------------------------------------------------------------
# A real server
# ---------------------------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(url: str, body: Any = None, raw: bytes | None = None, timeout: float = 60) -> tuple[int, bytes]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture(scope="module")
def bestbuy_store(tmp_path_factory) -> str:
    import pymupdf

    from haystack_fin.pipeline_loader import load_pipeline

    folder = tmp_path_factory.mktemp("serving")
    # The cover, contents and statements (pp. 1-7) and the revenue and segment notes (pp. 12-14) of the fixture:
    # indexing all 30 pages takes about twice as long and this test has a one-minute budget.
    source, subset = pymupdf.open(FIXTURE), pymupdf.open()
    for first, last in ((0, 6), (11, 13)):
        subset.insert_pdf(source, from_page=first, to_page=last)
    subset.save(folder / "bestbuy-10q-subset.pdf")
    store = str(folder / "idx")
    indexing = load_pipeline("indexing", store_path=store)
    try:
        indexing.run({"converter": {"sources": [str(folder / "bestbuy-10q-subset.pdf")], "meta": {"filing_id": "BBY"}}})
    finally:
        indexing.close()
    return store


@contextlib.contextmanager
def _serving(store: str, log: Path, ollama_url: str, ready: Callable[[str], bool], *extra: str) -> Iterator[str]:
    """``haystack-fin serve`` (``extra``: e.g. ``--mcp``) on a free 127.0.0.1 port; yields the base URL once
    ``ready(base)`` holds, and stops the server after the block."""
    port = _free_port()
    command = [sys.executable, "-m", "haystack_fin.cli", "serve", "--store", store, "--port", str(port), *extra]
    command += ["--ollama-url", ollama_url]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}, cwd=REPO)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if ready(base):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"server not ready after 90 s: {log.read_text()[-2000:]}")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _rest_ready(base: str) -> bool:
    status, body = _request(f"{base}/status", timeout=2)
    return status == 200 and PIPELINE_NAME in json.loads(body)["pipelines"]


@pytest.fixture(scope="module")
def server(bestbuy_store, tmp_path_factory):
    """``haystack-fin serve`` on a free 127.0.0.1 port with the Ollama stub; yields (base URL, stub)."""
    log = tmp_path_factory.mktemp("serving-log") / "server.log"
    with OllamaStub() as stub, _serving(bestbuy_store, log, stub.url, _rest_ready) as base:
        yield base, stub


@pytest.mark.integration
def test_run_endpoint_answers_with_checked_citations(server):
    base, stub = server
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 3, "explain": True})
    assert status == 200, body
    result = json.loads(body)["result"]
    assert result["generation"] == "ollama" and len(result["passages"]) == 3
    assert all(p["filing_id"] == "BBY" and p["pages"] for p in result["passages"])
    assert result["citations"] and result["citations"][0]["filing_id"] == "BBY"
    found = result["citations"][0]["numbers"][0]
    assert found["source"] in ("table_cell", "table_text") and found["cell"]
    assert [u["text"] for u in result["unsupported_numbers"]] == [INVENTED]
    assert result["trace"]["scope"] is not None
    assert stub.requests, "the answer went through the Ollama wire protocol"


@pytest.mark.integration
def test_chat_completions_cite_sources_streaming_and_not(server):
    base, _ = server
    messages = [{"role": "user", "content": QUESTION}]
    status, body = _request(f"{base}/v1/chat/completions", {"model": PIPELINE_NAME, "messages": messages})
    assert status == 200, body
    text = json.loads(body)["choices"][0]["message"]["content"]
    # the stub cites the first passage holding a table row, whichever rank that passage has
    assert re.search(r"Sources:\n\[\d+\] BEST BUY CO\., INC\. 10-Q", text), text
    assert f"Numbers not found in the cited passages (check them): {INVENTED}" in text

    status, body = _request(
        f"{base}/v1/chat/completions", {"model": PIPELINE_NAME, "messages": messages, "stream": True}
    )
    assert status == 200
    frames = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: {")]
    streamed = "".join(f["choices"][0]["delta"].get("content") or "" for f in frames)
    assert len(frames) > 5  # token by token, not one block
    assert streamed == text


@pytest.mark.integration
def test_status_and_bad_requests_leave_the_server_up(server):
    base, _ = server
    status, body = _request(f"{base}/status")
    deployment = next(d for d in json.loads(body)["deployments"] if d["name"] == PIPELINE_NAME)
    assert {"run_api", "chat_completion", "mcp_eligible"} <= set(deployment["capabilities"])
    cases = [
        ({"question": ""}, None, 422, "question is empty"),
        ({"question": "x" * 10_000}, None, 413, "question is 10,000 characters; the limit is 2,000"),
        (None, b"not json", 422, "JSON decode error"),
    ]
    for body_json, raw, want_status, message in cases:
        status, body = _request(f"{base}/{PIPELINE_NAME}/run", body_json, raw)
        assert status == want_status and message in body.decode(), body
    status, _ = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "k": 1})
    assert status == 200


def test_evidence_only_chat_answer_states_the_reason():
    passage = {"text": "Total revenue 9,583", "company": "BEST BUY CO., INC.", "form": "10-Q", "period": "Q2 FY2024",
               "filing_id": "BBY", "item": "I-1", "pages": [13], "table_id": None}  # fmt: skip
    out = {"answer": None, "generation": "skipped: Ollama not reachable at http://127.0.0.1:9", "passages": [passage]}
    text = render_chat(out)
    assert text.startswith("No generated answer (skipped: Ollama not reachable at http://127.0.0.1:9)")
    assert "[1] Total revenue 9,583" in text and "[1] BEST BUY CO., INC. 10-Q Q2 FY2024 (BBY), Item I-1, p. 13" in text


@pytest.mark.integration
def test_live_ollama_answer_is_checked():
    """Against a real Ollama server with the YAML's model, when one is reachable (none is on this machine)."""
    config = ServingConfig.from_env()
    url = config.ollama_url or pipeline_dict("query")["components"]["llm"]["init_parameters"]["url"]
    if not ollama_reachable(url):
        pytest.skip(f"no Ollama server at {url}")
    out = _generation_part(url, config.ollama_model).run(_generation_inputs([TABLE]))
    answer = out["checker"]["answers"][0]
    assert answer.data.strip()
    assert isinstance(answer.meta["citations"], list) and isinstance(answer.meta["unsupported_numbers"], list)


@pytest.mark.integration
def test_what_is_not_there_is_said(server):
    base, _ = server
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "filing_ids": ["BOGUS"]})
    assert (status, json.loads(body)["detail"]) == (404, "no indexed filing has id 'BOGUS'")
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": "What was Apple's revenue in fiscal 2019?"})
    result = json.loads(body)["result"]
    unmatched = {(u["kind"], u["text"]) for u in result["unmatched"]}
    assert status == 200 and {("company", "Apple"), ("period", "FY2019")} <= unmatched
    assert result["passages"] == [] and result["generation"] == "skipped: no passage found"
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": "What was Domestic segment revenue?", "k": 1})
    result = json.loads(body)["result"]
    assert status == 200 and result["unmatched"] == [] and result["passages"][0]["filing_id"] == "BBY"


@pytest.mark.integration
def test_ask_says_what_is_not_there(bestbuy_store, tmp_path, capsys):
    import shutil

    store = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store)  # a copy: the served store is held by the server process
    assert main(["ask", QUESTION, "--store", store, "--filing", "BOGUS", "--no-llm"]) == 1
    assert capsys.readouterr().err.strip() == "error: no filing 'BOGUS' in the store"
    from haystack_fin.core.retrieval.company_reference import edgartools_table

    assert main(["ask", "What was Apple's revenue in fiscal 2019?", "--store", store, "--no-llm"]) == 0
    captured = capsys.readouterr()
    notes = captured.err.strip().splitlines()
    if edgartools_table() is not None:  # the company reference table knows Apple: no filing, and it is named
        assert captured.out.startswith("No indexed filing matches: Apple Inc. (AAPL), a listed company, has no")
        assert "\n[1] " not in captured.out  # no other company's passages
        assert (
            notes[0] == "note: not in the indexed filings: Apple Inc. (AAPL), a listed company, has no indexed filing"
        )
    else:  # without it, "Apple" is a name nobody knows: the indexed filing is ranked, with the notice
        assert "note: not in the indexed filings: no indexed company is named 'Apple'" in notes[0]
        assert "\n[1] " in captured.out
    assert notes[1] == "note: not in the indexed filings: no indexed BEST BUY CO., INC. filing is for FY2019"


@pytest.mark.integration
def test_ask_prints_and_carries_the_check(bestbuy_store, tmp_path, capsys, monkeypatch):
    """``ask`` runs the one query pipeline: with the Ollama stub its answer, citations and unsupported numbers come
    out (text and --json); the passages are those of ``--no-llm`` (generation runs after the window)."""
    import shutil

    store = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store)
    assert main(["ask", QUESTION, "--store", store, "--no-llm", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert (
        plain["answer"] is None and plain["citations"] is None and plain["trace"]["generation"] == "skipped: --no-llm"
    )
    with OllamaStub() as stub:
        monkeypatch.setenv("HAYSTACK_FIN_OLLAMA_URL", stub.url)
        assert main(["ask", QUESTION, "--store", store, "--json"]) == 0
        checked = json.loads(capsys.readouterr().out)
        assert main(["ask", QUESTION, "--store", store, "--explain"]) == 0
        text = capsys.readouterr().out
    assert [p["id"] for p in checked["passages"]] == [p["id"] for p in plain["passages"]]
    assert checked["trace"]["generation"] == "ollama"
    assert checked["citations"][0]["filing_id"] == "BBY" and checked["citations"][0]["numbers"]
    assert [u["text"] for u in checked["unsupported_numbers"]] == [INVENTED]
    assert f"Numbers not found in the cited passages (check them): {INVENTED}" in text
    assert "Scope: scoped to BEST BUY CO., INC." in text and "Items (FLAM" in text and "Retrieved by:" in text


async def _call_mcp_tool(url: str, arguments: dict[str, Any]) -> tuple[list[Any], Any]:
    """List the tools of an MCP server over streamable HTTP and call haystack-fin's (the ``mcp`` package's client)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(url) as (read, write, _), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        return tools, await session.call_tool(PIPELINE_NAME, arguments)


@pytest.mark.integration
def test_mcp_tool_answers_with_cited_passages(bestbuy_store, tmp_path):
    """``haystack-fin serve --mcp``: Hayhooks' MCP server on 127.0.0.1; an MCP client lists the pipeline as a tool
    (run_api's signature as its schema) and calls it; the result carries cited passages and the number check."""
    pytest.importorskip("mcp")
    import shutil

    store = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store)  # the REST server of this module may hold the original

    def ready(base: str) -> bool:
        return _request(f"{base}/status", timeout=2)[0] == 200

    with OllamaStub() as stub, _serving(store, tmp_path / "mcp.log", stub.url, ready, "--mcp") as base:
        tools, result = asyncio.run(_call_mcp_tool(f"{base}/mcp", {"question": QUESTION, "k": 3}))
    tool = next(t for t in tools if t.name == PIPELINE_NAME)
    assert {"question", "filing_ids", "k", "explain"} <= set(tool.inputSchema["properties"])
    assert tool.inputSchema["required"] == ["question"] and "SEC filings" in (tool.description or "")
    assert not result.isError, result.content
    out = json.loads(result.content[0].text)
    assert len(out["passages"]) == 3 and all(p["filing_id"] == "BBY" and p["pages"] for p in out["passages"])
    assert out["generation"] == "ollama" and out["citations"][0]["filing_id"] == "BBY"
    assert [u["text"] for u in out["unsupported_numbers"]] == [INVENTED]


def _subset_pdf(folder: Path, ranges: tuple[tuple[int, int], ...], name: str) -> Path:
    import pymupdf

    source, subset = pymupdf.open(FIXTURE), pymupdf.open()
    for first, last in ranges:
        subset.insert_pdf(source, from_page=first, to_page=last)
    path = folder / name
    subset.save(path)
    return path


@pytest.mark.integration
def test_reindex_while_queries_run_never_mixes_runs(bestbuy_store, tmp_path):
    """A filing re-indexed while questions run against the warm query pipeline (one process, the store shared as a
    server's would be): every answer comes from one indexing run of the filing, old or new, never both, with no
    error; after the write, answers come from the new run without a restart."""
    import shutil
    import threading

    from haystack_fin.components.filing_writer import FilingWriter
    from haystack_fin.core import schema
    from haystack_fin.pipeline_loader import drop_components, load_pipeline
    from haystack_fin.query_runner import QueryRunner
    from haystack_fin.store_registry import shared_store

    store_dir = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store_dir)
    # The new version of the filing: two more pages of notes before the revenue note, so a new index_run, and the
    # chunk ids after them hold other text than before (a mix of runs would show in the passages' text).
    new_pdf = _subset_pdf(tmp_path, ((0, 6), (9, 13)), "bestbuy-10q-more.pdf")
    indexing = load_pipeline("indexing", store_path=store_dir, transform=lambda d: drop_components(d, ("writer",)))
    built = indexing.run(
        {"converter": {"sources": [str(new_pdf)], "meta": {"filing_id": "BBY"}}},
        include_outputs_from={"tree_builder", "splitter"},
    )
    new_nodes, filing_nodes = built["tree_builder"]["documents"], built["splitter"]["filing_nodes"]
    new_run = filing_nodes[0].meta[schema.INDEX_RUN]

    runner = QueryRunner(store_dir, generate=False)
    try:
        old_run = runner.run(QUESTION, k=3).passages[0].meta[schema.INDEX_RUN]
        assert old_run != new_run
        store = shared_store(runner.pipe.get_component("retriever").document_store)
        old_text = {d.id: d.content for d in store.filter_documents({"field": "meta.filing_id", "operator": "==",
                                                                      "value": "BBY"})}  # fmt: skip
        new_text = {d.id: d.content for d in [*new_nodes, *filing_nodes]}
        write = store.write_documents

        def slow_write(documents, policy=None):  # a write that takes a few seconds, as a large filing's does
            for start in range(0, len(documents), 8):
                write(documents[start : start + 8], policy=policy)
                time.sleep(0.1)
            return len(documents)

        store.write_documents = slow_write
        questions = [QUESTION, "What were the restructuring charges?", "What was the gross profit rate?"]
        results: list[tuple[str, list[Any]]] = []
        errors: list[BaseException] = []
        done = threading.Event()

        def ask_loop() -> None:
            n = n_after = 0
            while n_after < 3:  # until three questions were asked after the write
                when = "after" if done.is_set() else "during"  # when the question was asked
                n_after += when == "after"
                try:
                    results.append((when, runner.run(questions[n % 3], k=3).passages))
                except BaseException as exc:  # recorded, the loop goes on as a server would
                    errors.append(exc)
                n += 1

        thread = threading.Thread(target=ask_loop)
        thread.start()
        time.sleep(0.3)
        report = FilingWriter(document_store=store).run(documents=new_nodes, filing_nodes=filing_nodes)
        done.set()
        thread.join(timeout=120)
        store.write_documents = write
    finally:
        runner.close()
    assert not errors, errors
    assert report["documents_written"] == len(new_text)
    assert sum(1 for i, t in old_text.items() if i in new_text and new_text[i] != t) > 10  # ids whose text changed
    during = [passages for when, passages in results if when == "during"]
    assert len(during) >= 3, "questions ran while the filing was written"
    for _, passages in results:
        runs = {p.meta[schema.INDEX_RUN] for p in passages}
        assert len(runs) == 1, runs  # one run per answer
        text = old_text if runs == {old_run} else new_text
        for p in passages:  # the window's neighbours too: every chunk of the passage is that run's version
            for chunk_id in p.meta[schema.WINDOW]:
                assert " ".join(text[chunk_id].split())[:80] in " ".join(p.content.split()), chunk_id
    after = [passages for when, passages in results if when == "after"]
    assert after and {p.meta[schema.INDEX_RUN] for ps in after for p in ps} == {new_run}  # no restart needed
    assert {p.meta[schema.INDEX_RUN] for ps in during for p in ps} <= {old_run, new_run}
