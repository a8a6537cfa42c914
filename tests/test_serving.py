"""Serving: request validation, the answer pipeline over Ollama's wire protocol (a local stub), ``haystack-fin serve``
errors, and (integration) a Hayhooks server on 127.0.0.1 answering ``/run``, ``/v1/chat/completions`` and
``/status`` against a store indexed from the Best Buy 10-Q fixture."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline
from helpers.ollama_stub import INVENTED, OllamaStub

from haystack_fin.cli import main
from haystack_fin.pipeline_loader import ALLOWED_MODULES, pipeline_dict
from haystack_fin.serving import (
    MAX_QUESTION_CHARS,
    PIPELINE_NAME,
    QDRANT_URL_ENV,
    STORE_ENV,
    RequestError,
    ServingConfig,
    answer_pipeline_dict,
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


def test_answer_pipeline_over_the_ollama_wire_protocol():
    """The YAML's prompt builder, OllamaChatGenerator (pointed at the stub by configuration) and answer builder, then
    the checker: the stub's copied figure is supported by the table cell, its invented one is not."""
    with OllamaStub() as stub:
        data = answer_pipeline_dict(pipeline_dict("query"), ServingConfig(ollama_url=stub.url, ollama_model="m:1"))
        pipe = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
        docs = [TABLE]
        out = pipe.run(
            {
                "prompt_builder": {"query": QUESTION, "documents": docs},
                "answer_builder": {"query": QUESTION, "documents": docs},
                "checker": {"documents": docs},
            }
        )
        (request,) = stub.requests
    assert request["model"] == "m:1" and "[1] BEST BUY CO., INC. 10-Q" in request["messages"][-1]["content"]
    answer = out["checker"]["answers"][0]
    assert answer.data == f"The reported figure is 8,890 [1]. The stub also invents {INVENTED} [1]."
    (citation,) = answer.meta["citations"]
    assert citation["numbers"][0]["label"] == "Domestic" and citation["table_id"] == "BBY#table-0022"
    assert [u["text"] for u in answer.meta["unsupported_numbers"]] == [INVENTED]


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


@pytest.fixture(scope="module")
def server(bestbuy_store, tmp_path_factory):
    """``haystack-fin serve`` on a free 127.0.0.1 port with the Ollama stub; yields (base URL, stub)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("serving-log") / "server.log"
    with OllamaStub() as stub, open(log, "wb") as out:
        command = [sys.executable, "-m", "haystack_fin.cli", "serve", "--store", bestbuy_store, "--port", str(port)]
        command += ["--ollama-url", stub.url]
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}, cwd=REPO)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    pytest.fail(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
                try:
                    status, body = _request(f"{base}/status", timeout=2)
                    if status == 200 and PIPELINE_NAME in json.loads(body)["pipelines"]:
                        break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                time.sleep(0.5)
            else:
                pytest.fail(f"server not ready after 90 s: {log.read_text()[-2000:]}")
            yield base, stub
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


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
    assert "Sources:\n[1] BEST BUY CO., INC. 10-Q" in text
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
    data = answer_pipeline_dict(pipeline_dict("query"), ServingConfig.from_env())
    url = data["components"]["llm"]["init_parameters"]["url"]
    if not ollama_reachable(url):
        pytest.skip(f"no Ollama server at {url}")
    pipe = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    docs = [TABLE]
    inputs = {"query": QUESTION, "documents": docs}
    out = pipe.run({"prompt_builder": inputs, "answer_builder": inputs, "checker": {"documents": docs}})
    answer = out["checker"]["answers"][0]
    assert answer.data.strip()
    assert isinstance(answer.meta["citations"], list) and isinstance(answer.meta["unsupported_numbers"], list)


@pytest.mark.integration
def test_what_is_not_there_is_said(server):
    base, _ = server
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": QUESTION, "filing_ids": ["BOGUS"]})
    assert (status, json.loads(body)["detail"]) == (404, "no indexed filing has id 'BOGUS'")
    status, body = _request(f"{base}/{PIPELINE_NAME}/run", {"question": "What was Apple's revenue in fiscal 2019?"})
    unmatched = {(u["kind"], u["text"]) for u in json.loads(body)["result"]["unmatched"]}
    assert status == 200 and {("company", "Apple"), ("period", "FY2019")} <= unmatched


@pytest.mark.integration
def test_ask_says_what_is_not_there(bestbuy_store, tmp_path, capsys):
    import shutil

    store = str(tmp_path / "idx")
    shutil.copytree(bestbuy_store, store)  # a copy: the served store is held by the server process
    assert main(["ask", QUESTION, "--store", store, "--filing", "BOGUS", "--no-llm"]) == 1
    assert capsys.readouterr().err.strip() == "error: no filing 'BOGUS' in the store"
    assert main(["ask", "What was Apple's revenue in fiscal 2019?", "--store", store, "--no-llm"]) == 0
    notes = capsys.readouterr().err.strip().splitlines()
    assert "note: not in the indexed filings: no indexed company is named 'Apple'" in notes[0]
    assert notes[1] == "note: not in the indexed filings: no indexed BEST BUY CO., INC. filing is for FY2019"
