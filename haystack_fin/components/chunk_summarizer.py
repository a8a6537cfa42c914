import base64
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage, ImageContent
from haystack.utils import deserialize_chatgenerator_inplace

from haystack_fin.core import schema
from haystack_fin.core.ingest.llm_summaries import parse_summary, render_region_png, summary_prompt
from haystack_fin.core.schema import Modality
from haystack_fin.core.validation import check_int

logger = logging.getLogger(__name__)


@component
class ChunkSummarizer:
    """Adds a chat model's short summary to table and image chunks, for their embedding (optional indexing step).

    Each chunk of the chosen modalities gets ``meta["llm_summary"]`` (``schema.LLM_SUMMARY``) from any Haystack chat
    generator (for example ``OllamaChatGenerator``); with ``images=True`` an image chunk of a PDF also sends the
    rendered figure region, for a vision model. Add ``llm_summary`` to the embedder's ``meta_fields_to_embed`` so
    the summary is embedded with the chunk. A generator error or an unusable reply (empty, too short, a refusal)
    leaves that chunk without a summary: it keeps its template summary and Markdown, and the batch goes on. Other
    chunks pass through unchanged.

    Usage example:
    ```python
    from haystack import Document
    from haystack.components.generators.chat import MockChatGenerator
    from haystack_fin.components.chunk_summarizer import ChunkSummarizer

    generator = MockChatGenerator(responses="Revenue by segment for FY2022 and FY2021.")
    summarizer = ChunkSummarizer(chat_generator=generator)
    table = Document(content="| Segment | 2022 |", meta={"modality": "table", "company": "Best Buy"})
    summarizer.run(documents=[table])["documents"][0].meta["llm_summary"]
    ```
    """

    def __init__(
        self,
        chat_generator: Any,
        modalities: list[str] | None = None,
        images: bool = False,
        max_words: int = 80,
        max_prompt_chars: int = 6000,
    ) -> None:
        """
        :param chat_generator: a Haystack chat generator (``run(messages=[ChatMessage])`` returning ``replies``).
        :param modalities: which chunks to summarize (default ``["table", "image"]``).
        :param images: send the figure region of an image chunk (PDF only) as an image, for a vision model.
        :param max_words: summary length cap (words), asked in the prompt and enforced on the reply.
        :param max_prompt_chars: at most this much of the chunk's text goes into the prompt.
        """
        chosen = ["table", "image"] if modalities is None else list(modalities)
        known = {m.value for m in Modality}
        if not chosen or any(m not in known for m in chosen):
            raise ValueError(f"modalities must be a non-empty list of {sorted(known)}, got {modalities!r}")
        check_int("max_words", max_words)
        check_int("max_prompt_chars", max_prompt_chars)
        if not callable(getattr(chat_generator, "run", None)):
            raise TypeError(f"chat_generator must be a Haystack chat generator, got {type(chat_generator).__name__}")
        self.chat_generator = chat_generator
        self.modalities = chosen
        self.images = images
        self.max_words = max_words
        self.max_prompt_chars = max_prompt_chars
        self._warm = False

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            chat_generator=component_to_dict(self.chat_generator, "chat_generator"),
            modalities=list(self.modalities),
            images=self.images,
            max_words=self.max_words,
            max_prompt_chars=self.max_prompt_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ChunkSummarizer":
        deserialize_chatgenerator_inplace(data["init_parameters"], key="chat_generator")
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Warm up the chat generator (a Pipeline does not warm nested components); idempotent."""
        if not self._warm and hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        self._warm = True

    def _message(self, doc: Document) -> ChatMessage:
        meta = doc.meta
        modality = str(meta.get(schema.MODALITY) or "")
        source = " ".join(str(meta.get(k) or "") for k in (schema.COMPANY, schema.FORM, schema.PERIOD)).strip()
        prompt = summary_prompt(modality, doc.content or "", source, self.max_words, self.max_prompt_chars)
        png = None
        if self.images and modality == Modality.IMAGE.value:
            pages = meta.get(schema.PAGE_NUMBERS) or []
            bbox = meta.get(schema.BBOX)
            if pages and isinstance(bbox, list):
                png = render_region_png(str(meta.get(schema.SOURCE_PATH) or ""), int(pages[0]), bbox)
        if png is None:
            return ChatMessage.from_user(prompt)
        image = ImageContent(base64_image=base64.b64encode(png).decode("ascii"), mime_type="image/png")
        return ChatMessage.from_user(content_parts=[prompt, image])

    @component.output_types(documents=list[Document], summarized=int, failed=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """
        Summarize the chunks of the chosen modalities.

        :param documents: chunks (other node types and modalities pass through unchanged).
        :returns: ``documents`` (new Documents where a summary was added, in the same order), ``summarized`` and
            ``failed`` counts.
        """
        self.warm_up()
        out: list[Document] = []
        summarized = failed = 0
        for doc in documents:
            if doc.meta.get(schema.NODE_TYPE, schema.NodeType.CHUNK.value) != schema.NodeType.CHUNK.value or (
                doc.meta.get(schema.MODALITY) not in self.modalities
            ):
                out.append(doc)
                continue
            try:
                replies = self.chat_generator.run(messages=[self._message(doc)])["replies"]
                summary = parse_summary(replies[0].text or "" if replies else "", self.max_words)
            except Exception as error:  # a generator failure degrades this chunk only
                logger.warning("Chat generator failed on chunk {id} ({error}); no summary", id=doc.id, error=error)
                summary = None
            if summary is None:
                failed += 1
                out.append(doc)
                continue
            summarized += 1
            out.append(replace(doc, meta={**doc.meta, schema.LLM_SUMMARY: summary}))
        return {"documents": out, "summarized": summarized, "failed": failed}
