"""AnswerChecker: cited passages and unsupported numbers attached to generated answers (``core/answers.py``)."""

from dataclasses import replace
from typing import Any

from haystack import Document, GeneratedAnswer, component

from haystack_fin.core.answers import Passage, check_answer

CITATIONS = "citations"
UNSUPPORTED_NUMBERS = "unsupported_numbers"
INVALID_REFS = "invalid_refs"


@component
class AnswerChecker:
    """Looks up every number of each answer in the passages the answer cites ([n] = the n-th prompt document).

    Place it after ``AnswerBuilder``: it adds ``meta["citations"]`` (passage -> filing, Item, pages, table id and the
    cells or text where the answer's numbers were found), ``meta["unsupported_numbers"]`` (numbers found in no cited
    passage) and ``meta["invalid_refs"]`` (markers past the last passage) to each answer.

    Pass ``documents``, the list the prompt numbered, whenever you can: ``AnswerBuilder`` keeps only the referenced
    documents by default, so their positions in ``answer.documents`` are not the prompt's numbers. Without
    ``documents`` the checker rebuilds the numbering from each document's ``meta["source_index"]`` (set by
    ``AnswerBuilder``).

    Usage example:
    ```python
    from haystack import Document, Pipeline
    from haystack.components.builders import AnswerBuilder
    from haystack.components.generators.chat import MockChatGenerator
    from haystack.dataclasses import ChatMessage

    from haystack_fin.components.answer_checker import AnswerChecker

    docs = [Document(content="Total revenue was $9,583 million.", meta={"filing_id": "BBY", "item": "I-1",
                                                                          "page_numbers": [13]})]
    pipe = Pipeline()
    pipe.add_component("llm", MockChatGenerator(responses="Revenue was $9.6 billion [1], up 12% [1]."))
    pipe.add_component("answer_builder", AnswerBuilder(reference_pattern=r"\\[(\\d+)\\]"))
    pipe.add_component("checker", AnswerChecker())
    pipe.connect("llm.replies", "answer_builder.replies")
    pipe.connect("answer_builder.answers", "checker.answers")
    out = pipe.run({"llm": {"messages": [ChatMessage.from_user("Revenue?")]},
                    "answer_builder": {"query": "Revenue?", "documents": docs}, "checker": {"documents": docs}})
    answer = out["checker"]["answers"][0]
    answer.meta["citations"][0]["pages"]                   # [13]
    [u["text"] for u in answer.meta["unsupported_numbers"]]  # ["12%"]
    ```
    """

    @component.output_types(answers=list[GeneratedAnswer])
    def run(self, answers: list[GeneratedAnswer], documents: list[Document] | None = None) -> dict[str, Any]:
        """
        :param answers: generated answers (``AnswerBuilder.answers``).
        :param documents: the documents in the order the prompt numbered them; default: rebuilt from each
            answer's documents and their ``source_index``.
        :returns: ``answers``, copies of the inputs with the check in their meta.
        """
        checked: list[GeneratedAnswer] = []
        for answer in answers:
            numbered = documents if documents is not None else _numbered(answer.documents)
            passages = [
                Passage(doc.content or "", doc.meta, doc.id) if doc is not None else Passage("", {}, None)
                for doc in numbered
            ]
            check = check_answer(answer.data or "", passages).to_dict()
            meta = {
                **answer.meta,
                CITATIONS: check["citations"],
                UNSUPPORTED_NUMBERS: check["unsupported_numbers"],
                INVALID_REFS: check["invalid_refs"],
            }
            checked.append(replace(answer, meta=meta))
        return {"answers": checked}


def _numbered(documents: list[Document]) -> list[Document | None]:
    """Documents at their prompt positions (``source_index``, 1-based); gaps are None (uncited, not returned)."""
    if not documents or any("source_index" not in d.meta for d in documents):
        return list(documents)
    size = max(int(d.meta["source_index"]) for d in documents)
    slots: list[Document | None] = [None] * size
    for doc in documents:
        slots[int(doc.meta["source_index"]) - 1] = doc
    return slots
