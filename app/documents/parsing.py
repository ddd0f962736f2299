"""Text extraction with a page map. The format is decided by the bytes, not the filename.

`parse(data)` runs the parser in this process: call it only on trusted bytes (tests, tools).
Uploads go through `app.documents.sandbox.parse_untrusted`, which runs `parse` in a child
process with memory, CPU and wall-clock limits.

Formats: PDF with pypdf (one page-map entry per page, labelled with the PDF's printed page
labels); DOCX, EPUB, HTML and Markdown with `unstructured` (app/documents/rich.py; one
entry per headed section); plain text is decoded and normalised here (a parser would add nothing),
with sections at chapter-like headings.
"""

from __future__ import annotations

import io
import re

from app.documents.base import TXT_HEADING, ParsedDocument, ParseError, is_heading, page_of, page_unit  # noqa: F401 (re-exported)
from app.documents.detect import ZIP_LIMITS, ZipLimits, decode_text, detect_format
from app.documents.normalise import TextBuilder, normalise

NO_TEXT_PDF = (
    "the PDF has no text layer (a scan or image-only PDF?); OCR is not supported, upload a PDF with selectable text"
)
FORMAT_NAMES = {"pdf": "PDF", "docx": "DOCX", "epub": "EPUB", "html": "HTML", "md": "Markdown", "txt": "text"}


def parse(data: bytes, limits: ZipLimits = ZIP_LIMITS) -> ParsedDocument:
    """The document's text and page map, or ParseError with a message for the user. Only
    MemoryError escapes otherwise (the sandbox turns it into a ParseError about the memory limit)."""
    fmt = detect_format(data, limits)
    try:
        if fmt == "pdf":
            parsed = _parse_pdf(data)
        elif fmt == "txt":
            parsed = parse_txt(data)
        else:
            from app.documents.rich import parse_rich

            parsed = parse_rich(fmt, data)
    except (ParseError, MemoryError, SystemError):  # SystemError: see sandbox._serve_child
        raise
    except RecursionError as exc:
        raise ParseError(
            f"the {FORMAT_NAMES[fmt]} file is damaged or unreadable: its structure nests too deeply"
        ) from exc
    except Exception as exc:
        raise ParseError(
            f"the {FORMAT_NAMES[fmt]} file is damaged or unreadable ({type(exc).__name__}: {exc})"[:500]
        ) from exc
    if not parsed.text.strip():
        raise ParseError(NO_TEXT_PDF if fmt == "pdf" else "no text could be extracted: the file has no readable text")
    return parsed


def parse_txt(data: bytes) -> ParsedDocument:
    text = normalise(decode_text(data))
    starts, labels = [0], ["Start"]
    offset = 0
    for block in text.split("\n\n"):
        if is_heading(block):
            if offset == 0:
                labels[0] = block
            elif starts[-1] != offset:
                starts.append(offset)
                labels.append(block)
        offset += len(block) + 2
    return ParsedDocument("txt", text, starts, labels)


def _parse_pdf(data: bytes) -> ParsedDocument:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            # Many PDFs are encrypted only to restrict printing, with an empty open password.
            try:
                opened = reader.decrypt("")
            except (DependencyError, NotImplementedError) as exc:
                raise ParseError(f"the PDF uses an encryption this server cannot open ({exc})") from exc
            if not opened:
                raise ParseError("the PDF is password-protected; upload an unprotected copy")
        n_pages = len(reader.pages)
        labels = _page_labels(reader, n_pages)
        b = TextBuilder()
        for i, page in enumerate(reader.pages):
            b.new_page(labels[i])
            b.add(page.extract_text() or "")
        title = (reader.metadata or {}).get("/Title") if reader.metadata else None
    except ParseError:
        raise
    except FileNotDecryptedError as exc:
        raise ParseError("the PDF is password-protected; upload an unprotected copy") from exc
    except LimitReachedError as exc:
        raise ParseError(f"the PDF contains a stream too large to decompress (a PDF bomb?): {exc}") from exc
    except RecursionError as exc:
        raise ParseError("the PDF is damaged or unreadable: its structure nests too deeply") from exc
    except (
        PyPdfError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        AssertionError,
        ZeroDivisionError,
        OverflowError,
        UnicodeError,
        OSError,
    ) as exc:
        raise ParseError(f"the PDF is damaged or unreadable: {exc}"[:500]) from exc
    text, starts, page_labels = b.result()
    if n_pages == 0:
        raise ParseError("the PDF has no pages")
    return ParsedDocument("pdf", text, starts, page_labels, _pdf_title(title))


def _page_labels(reader, n_pages: int) -> list[str]:
    try:
        labels = list(reader.page_labels)
        if len(labels) == n_pages and all(isinstance(x, str) and 0 < len(x) <= 40 for x in labels):
            return labels
    except Exception:
        pass
    return [str(i + 1) for i in range(n_pages)]


def _pdf_title(title: object) -> str | None:
    if not isinstance(title, str):
        return None
    title = normalise(title).replace("\n", " ")
    # Word and other converters write their own names and file names here.
    if not (3 <= len(title) <= 300) or re.match(
        r"(?i)(microsoft word|untitled|document\d*$)|.*\.(docx?|pdf|rtf)$", title
    ):
        return None
    return title
