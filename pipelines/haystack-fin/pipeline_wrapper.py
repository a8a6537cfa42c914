"""Hayhooks 2.x wrapper: haystack-fin's query pipeline as ``/haystack-fin/run``, ``/v1/chat/completions`` (model
``haystack-fin``) and an MCP tool.

The folder is named ``haystack-fin``, not ``haystack_fin``: Hayhooks loads it as a package under the folder's name,
which would shadow (and on undeploy unload) the ``haystack_fin`` package. Configured by the environment
(``haystack_fin/serving.py``): set ``HAYSTACK_FIN_STORE`` or ``HAYSTACK_FIN_QDRANT_URL``, then
``hayhooks run --pipelines-dir pipelines`` (it skips query.yaml and indexing.yaml there: no inputs declared), or
use ``haystack-fin serve --store DIR``, which sets the rest (offline model, allowlist, sequential start).
"""

from collections.abc import Generator
from typing import Any

from fastapi import HTTPException
from hayhooks import BasePipelineWrapper, get_last_user_message

from haystack_fin.serving import FinService, RequestError, ServingConfig


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        # Warm once here (model, store, filing caches): every request after start-up runs warm.
        self.service = FinService(ServingConfig.from_env())
        self.service.warm_up()
        self.pipeline = self.service.runner.pipe

    def run_api(
        self, question: str, filing_ids: list[str] | None = None, k: int = 5, explain: bool = False
    ) -> dict[str, Any]:
        """Answer a question about the indexed SEC filings (10-K, 10-Q, 8-K) with cited passages.

        Returns the passages (filing, Item, pages, table id), and when Ollama is reachable a generated answer whose
        numbers are checked against the passages it cites (citations, unsupported_numbers).

        Args:
            question: the question, e.g. "What was Best Buy's revenue in Q2 FY2024?"
            filing_ids: restrict to these indexed filing ids (default: chosen from the question)
            k: number of passages (1-50)
            explain: include the retrieval trace (scope, Item routing, tree paths)
        """
        try:
            return self.service.ask(question, filing_ids, k, explain)
        except RequestError as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None

    def run_chat_completion(self, model: str, messages: list[dict], body: dict) -> str | Generator:
        question = get_last_user_message(messages)
        try:
            return self.service.chat(question or "", stream=bool(body.get("stream")))
        except RequestError as exc:
            raise HTTPException(status_code=exc.status, detail=str(exc)) from None
