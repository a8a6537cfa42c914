"""The shipped query pipeline (``pipelines/query.yaml``) as one component with one question input."""

from typing import Any

from haystack import Pipeline, default_from_dict, default_to_dict, super_component

from haystack_fin.pipeline_loader import ALLOWED_MODULES
from haystack_fin.query_runner import QUESTION_INPUTS, query_pipeline_dict


@super_component
class FinQueryPipeline:
    """haystack-fin's query pipeline as a Haystack ``SuperComponent``: the question goes in once, cited passages (and,
    with ``generate=True``, a checked answer) come out.

    Inside it is ``pipelines/query.yaml`` (or a YAML of the same shape): question analysis, filing scope, FLAM
    routing, tree retrieval, graph expansion, two-stage reranking, passage windows and, when generating, the
    prompt, Ollama generator, answer builder and answer checker. Inputs: ``query``, ``top_k`` (passages returned),
    ``filing_ids`` (restrict retrieval to these indexed filings) and, with ``generate=True``, ``generate`` (False
    skips the LLM for one run). Outputs: ``documents`` (passages with provenance meta: filing, company, period, form,
    Item, section, pages, modality, table), ``scope`` (which filings the question was scoped to, and what it asks
    for that no indexed filing has) and, with ``generate=True``, ``answers`` (``meta["citations"]``,
    ``meta["unsupported_numbers"]``).

    Usage example:
    ```python
    from haystack_fin.components import FinQueryPipeline

    qa = FinQueryPipeline(store_path="./fin-index")
    qa.warm_up()
    result = qa.run(query="What was Best Buy's revenue in Q2 FY2024?", top_k=3)
    for doc in result["documents"]:
        print(doc.meta["filing_id"], doc.meta["item"], doc.meta["page_numbers"])
    ```
    It can also be a component of a larger pipeline (``pipe.add_component("fin", FinQueryPipeline(...))``).
    """

    def __init__(
        self,
        store_path: str | None = None,
        qdrant_url: str | None = None,
        index: str | None = None,
        pipeline: str = "query",
        generate: bool = False,
        ollama_url: str | None = None,
        ollama_model: str | None = None,
    ) -> None:
        """
        :param store_path: embedded store folder (default: the YAML's).
        :param qdrant_url: a Qdrant server's URL instead of an embedded folder.
        :param index: collection name (default: the YAML's).
        :param pipeline: "query" (the shipped YAML) or the path of a query YAML of the same shape.
        :param generate: keep the answer-generation components (an Ollama server; ``answers`` output).
        :param ollama_url: the generator's Ollama server (default: the YAML's).
        :param ollama_model: the generator's model (default: the YAML's).
        """
        self.store_path = store_path
        self.qdrant_url = qdrant_url
        self.index = index
        self.pipeline_name = pipeline
        self.generate = generate
        self.ollama_url = ollama_url
        self.ollama_model = ollama_model
        data = query_pipeline_dict(
            pipeline, store_path, qdrant_url, index, generate, ollama_url=ollama_url, ollama_model=ollama_model
        )
        self.pipeline = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
        open_inputs = self.pipeline.inputs()
        question = [
            f"{name}.{socket}" for name, socket in QUESTION_INPUTS.items() if socket in open_inputs.get(name, {})
        ]
        self.input_mapping = {"query": question, "top_k": ["window.top_k"], "filing_ids": ["scope.filing_ids"]}
        self.output_mapping = {"window.documents": "documents", "scope.scope": "scope"}
        if generate:
            self.input_mapping["generate"] = ["gate.generate"]
            self.output_mapping["checker.answers"] = "answers"

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            store_path=self.store_path,
            qdrant_url=self.qdrant_url,
            index=self.index,
            pipeline=self.pipeline_name,
            generate=self.generate,
            ollama_url=self.ollama_url,
            ollama_model=self.ollama_model,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FinQueryPipeline":
        return default_from_dict(cls, data)
