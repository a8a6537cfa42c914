"""Prompt -> answer -> check: the shipped prompt and AnswerBuilder of pipelines/query.yaml with MockChatGenerator in
place of Ollama, then AnswerChecker. Passages are Best Buy 10-Q (quarter ended July 29, 2023) text, pp. 13 and 17."""

import copy

from haystack import Document, GeneratedAnswer, Pipeline
from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage

from haystack_fin.components.answer_checker import AnswerChecker
from haystack_fin.pipeline_loader import ALLOWED_MODULES, pipeline_dict

TABLE = Document(
    id="BBY#chunk-00059",
    content=(
        "Reportable segment and product category revenue information was as follows ($ in millions):\n"
        "$ in millions\n\n| | Three Months Ended July 29, 2023 | Three Months Ended July 30, 2022 |\n"
        "| --- | --- | --- |\n"
        "| Domestic | 8,890 | 9,569 |\n| International | 693 | 760 |\n| Total revenue | 9,583 | 10,329 |"
    ),
    meta={
        "filing_id": "BBY",
        "company": "BEST BUY CO., INC.",
        "form": "10-Q",
        "period": "Q2 FY2024",
        "item": "I-1",
        "page_numbers": [13],
        "modality": "table",
        "table_id": "BBY#table-0022",
    },
)
TEXT = Document(
    id="BBY#chunk-00086",
    content=(
        "Online revenue of $2.8 billion and $5.5 billion in the second quarter and first six months of fiscal 2024 "
        "decreased 7.1% and 9.7% on a comparable basis, respectively."
    ),
    meta={
        "filing_id": "BBY",
        "company": "BEST BUY CO., INC.",
        "form": "10-Q",
        "period": "Q2 FY2024",
        "item": "I-2",
        "page_numbers": [17],
        "modality": "text",
    },
)
QUESTION = "What was Best Buy's revenue in Q2 FY2024?"


def _answer(messages: list[ChatMessage]) -> str:
    """A model that answers from the prompt: it cites the passage that holds the total revenue row, copies it, and
    adds a number of its own (the kind of slip the checker is for)."""
    prompt = messages[-1].text or ""
    ref = next(line.split("]")[0].lstrip("[") for line in prompt.splitlines() if "(table)" in line)
    return f"Best Buy's revenue was $9,583 million [{ref}], or about $9.6 billion, up 3.4% [{ref}]."


def _pipeline(generator: MockChatGenerator) -> Pipeline:
    """The YAML's prompt builder and answer builder as shipped, the mock in place of the LLM, then the checker."""
    data = pipeline_dict("query")
    kept = {name: copy.deepcopy(data["components"][name]) for name in ("prompt_builder", "answer_builder")}
    pipe = Pipeline.from_dict({"components": kept, "connections": []}, allowed_modules=ALLOWED_MODULES)
    pipe.add_component("llm", generator)
    pipe.add_component("checker", AnswerChecker())
    pipe.connect("prompt_builder.prompt", "llm.messages")
    pipe.connect("llm.replies", "answer_builder.replies")
    pipe.connect("answer_builder.answers", "checker.answers")
    return pipe


def test_prompt_answer_check_path():
    pipe = _pipeline(MockChatGenerator(response_fn=_answer))
    docs = [TEXT, TABLE]
    out = pipe.run(
        {
            "prompt_builder": {"query": QUESTION, "documents": docs},
            "answer_builder": {"query": QUESTION, "documents": docs},
            "checker": {"documents": docs},
        }
    )
    answer = out["checker"]["answers"][0]
    assert answer.data.startswith("Best Buy's revenue was $9,583 million [2]")
    (citation,) = answer.meta["citations"]
    assert (citation["ref"], citation["filing_id"], citation["item"], citation["pages"]) == (2, "BBY", "I-1", [13])
    assert citation["table_id"] == "BBY#table-0022"
    assert {n["text"]: n["label"] for n in citation["numbers"]} == {
        "$9,583 million": "Total revenue",
        "$9.6 billion": "Total revenue",
    }
    assert [u["text"] for u in answer.meta["unsupported_numbers"]] == ["3.4%"]
    assert answer.meta["invalid_refs"] == []


def test_numbering_is_rebuilt_from_source_index_without_documents():
    # AnswerBuilder returns only the referenced document (the table, source_index 2): [2] must still be the table.
    pipe = _pipeline(MockChatGenerator(responses="Revenue was $9,583 million [2] and online $2.8 billion [1]."))
    docs = [TEXT, TABLE]
    pipe.get_component("answer_builder").return_only_referenced_documents = True
    out = pipe.run(
        {
            "prompt_builder": {"query": QUESTION, "documents": docs},
            "answer_builder": {"query": QUESTION, "documents": docs},
        }
    )
    answer = out["checker"]["answers"][0]
    assert answer.meta["unsupported_numbers"] == []
    assert [c["ref"] for c in answer.meta["citations"]] == [2, 1]


def test_answer_citing_a_missing_passage():
    answer = GeneratedAnswer(data="Revenue was $9,583 million [4].", query=QUESTION, documents=[], meta={})
    checked = AnswerChecker().run(answers=[answer], documents=[TEXT, TABLE])["answers"][0]
    assert checked.meta["invalid_refs"] == [4]
    assert checked.meta["unsupported_numbers"][0]["in_uncited"] == [2]


def test_serialization_round_trip():
    pipe = Pipeline()
    pipe.add_component("checker", AnswerChecker())
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=ALLOWED_MODULES)
    assert loaded.to_dict() == pipe.to_dict()
    assert isinstance(loaded.get_component("checker"), AnswerChecker)
