"""Text extraction with a page map. The format is decided by the bytes, not the filename."""

from __future__ import annotations

import io
from bisect import bisect_right
from dataclasses import dataclass


class ParseError(ValueError):
    """The file cannot be read as a document; the message is shown to the user."""


@dataclass(frozen=True)
class ParsedDocument:
    format: str
    text: str
    #: character offset at which each page starts (one entry for formats without pages)
    page_starts: list[int]


def detect_format(data: bytes) -> str:
    if data.startswith(b"%PDF-"):
        return "pdf"
    if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ParseError("unsupported file type: this looks like a binary file, not PDF or text")
    return "txt"


def parse(data: bytes) -> ParsedDocument:
    if not data:
        raise ParseError("the file is empty")
    fmt = detect_format(data)
    parsed = _parse_pdf(data) if fmt == "pdf" else _parse_txt(data)
    if not parsed.text.strip():
        hint = " (an image-only or scanned PDF? OCR is not supported)" if fmt == "pdf" else ""
        raise ParseError(f"no text could be extracted{hint}")
    return parsed


def page_of(page_starts: list[int], char_offset: int) -> int:
    """1-based page holding `char_offset`."""
    return max(1, bisect_right(page_starts, char_offset))


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse_txt(data: bytes) -> ParsedDocument:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            # Project Gutenberg and many older files are Windows-1252; latin-1 never fails.
            try:
                text = data.decode("cp1252")
            except UnicodeDecodeError:
                text = data.decode("latin-1")
    return ParsedDocument("txt", _normalise(text), [0])


def _parse_pdf(data: bytes) -> ParsedDocument:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("the PDF is encrypted; upload an unprotected copy")
        pages = [_normalise(page.extract_text() or "") for page in reader.pages]
    except ParseError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise ParseError(f"the PDF is damaged or unreadable: {exc}") from exc
    starts, parts, offset = [], [], 0
    for page in pages:
        starts.append(offset)
        parts.append(page)
        offset += len(page) + 2
    return ParsedDocument("pdf", "\n\n".join(parts), starts)
