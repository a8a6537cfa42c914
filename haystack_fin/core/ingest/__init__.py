"""Indexing-side algorithms: parsing (PDF, HTML, OCR), page cleanup, SEC Items, metadata, chunks, table blocks."""
