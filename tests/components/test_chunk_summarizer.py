"""ChunkSummarizer: chat-model summaries of table and image chunks, read defensively, falling back per chunk."""

import base64
from pathlib import Path

import pytest
from haystack import Document, Pipeline, component
from haystack.components.generators.chat import MockChatGenerator
from haystack.dataclasses import ChatMessage, ImageContent

from haystack_fin.components.chunk_summarizer import ChunkSummarizer
from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema
from haystack_fin.core.ingest.llm_summaries import parse_summary
from haystack_fin.pipeline_loader import ALLOWED_MODULES

VERIZON = Path(__file__).parents[1] / "fixtures" / "verizon-10k-2021-p20-21-charts.pdf"
TABLE = Document(
    content="| (in millions) | 2023 | 2022 |\n|---|---|---|\n| Revenue | 9,583 | 10,329 |",
    meta={schema.NODE_TYPE: "chunk", schema.MODALITY: "table", schema.COMPANY: "Best Buy", schema.FORM: "10-Q"},
)
TEXT = Document(content="Revenue fell 7%.", meta={schema.NODE_TYPE: "chunk", schema.MODALITY: "text"})


@component
class RecordingGenerator:
    """A chat generator that records the messages it gets and replies from a list (or raises)."""

    def __init__(self, replies: list[str | Exception]) -> None:
        self.replies = list(replies)
        self.messages: list[ChatMessage] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        self.messages.extend(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return {"replies": [ChatMessage.from_assistant(reply)]}


def test_parse_summary_reads_replies_defensively():
    assert parse_summary("<think>the table...</think>```\nSummary: Quarterly revenue fell from $10.3bn.\n```") == (
        "Quarterly revenue fell from $10.3bn."
    )
    assert parse_summary("**Summary:** revenue by segment, FY2023 and FY2022, in millions", max_words=4) == (
        "revenue by segment, FY2023"
    )
    for bad in ("", "   ", "Revenue table.", "I'm sorry, I cannot see the image you refer to.", "```\n```"):
        assert parse_summary(bad) is None, bad


def test_tables_get_a_summary_other_chunks_pass_through():
    generator = RecordingGenerator(["Best Buy's quarterly revenue, 2023 against 2022, in millions of dollars."])
    result = ChunkSummarizer(chat_generator=generator).run(documents=[TEXT, TABLE])
    text, table = result["documents"]
    assert text is TEXT
    assert table.id == TABLE.id and table.content == TABLE.content
    assert table.meta[schema.LLM_SUMMARY] == "Best Buy's quarterly revenue, 2023 against 2022, in millions of dollars."
    assert schema.LLM_SUMMARY not in TABLE.meta  # the input is not mutated
    assert (result["summarized"], result["failed"]) == (1, 0)
    (message,) = generator.messages
    assert "| Revenue | 9,583 | 10,329 |" in message.text and "Best Buy 10-Q" in message.text


def test_a_failing_or_useless_reply_leaves_that_chunk_as_it_was_and_the_batch_goes_on():
    generator = RecordingGenerator([RuntimeError("model not found"), "I cannot help with that.", "A revenue table."])
    tables = [Document(content=f"| t{i} |", meta=dict(TABLE.meta)) for i in range(3)]
    result = ChunkSummarizer(chat_generator=generator).run(documents=tables)
    assert [schema.LLM_SUMMARY in d.meta for d in result["documents"]] == [False, False, False]
    assert (result["summarized"], result["failed"]) == (0, 3)


def test_a_vision_model_gets_the_rendered_chart_region():
    docs = FilingConverter(ocr=False).run(sources=[VERIZON])["documents"]
    chunks = FilingSplitter(term_stats=False, tag_statements=False, graph_meta=False).run(documents=docs)["documents"]
    chart = next(d for d in chunks if d.meta[schema.MODALITY] == "image")
    generator = RecordingGenerator(["Verizon's operating revenues for 2021 and 2020, in millions, rising."] * 2)
    ChunkSummarizer(chat_generator=generator, modalities=["image"], images=True).run(documents=[chart])
    (message,) = generator.messages
    (image,) = [part for part in message._content if isinstance(part, ImageContent)]
    assert base64.b64decode(image.base64_image)[:8] == b"\x89PNG\r\n\x1a\n" and image.mime_type == "image/png"
    assert chart.content[:200] in message.text
    # Without images=True (or for an HTML filing) the prompt is text only.
    ChunkSummarizer(chat_generator=generator, modalities=["image"]).run(documents=[chart])
    assert not any(isinstance(part, ImageContent) for part in generator.messages[1]._content)


def test_yaml_round_trip_and_validation():
    summarizer = ChunkSummarizer(chat_generator=MockChatGenerator(responses="A table of revenue by year."))
    pipe = Pipeline()
    pipe.add_component("summarizer", summarizer)
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=ALLOWED_MODULES).get_component("summarizer")
    assert loaded.to_dict() == summarizer.to_dict()
    assert loaded.run(documents=[TABLE])["documents"][0].meta[schema.LLM_SUMMARY] == "A table of revenue by year."
    with pytest.raises(ValueError, match="modalities"):
        ChunkSummarizer(chat_generator=summarizer.chat_generator, modalities=["video"])
    with pytest.raises(TypeError, match="chat generator"):
        ChunkSummarizer(chat_generator="ollama")


def test_the_shipped_embedder_embeds_the_summary_when_there_is_one():
    from haystack_fin.components.document_embedder import FinDocumentEmbedder
    from haystack_fin.pipeline_loader import pipeline_dict

    params = pipeline_dict("indexing")["components"]["embedder"]["init_parameters"]
    embedder = FinDocumentEmbedder(**params)  # no model is loaded before warm_up
    summary = "Best Buy's quarterly revenue, 2023 against 2022, in millions of dollars."
    summarized = ChunkSummarizer(chat_generator=RecordingGenerator([summary])).run(documents=[TABLE])["documents"][0]
    assert summary in embedder._text_to_embed(summarized)
    assert embedder._text_to_embed(TABLE) == TABLE.content  # no summary: the chunk embeds as before
