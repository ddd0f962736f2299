"""DOCX, EPUB, HTML and Markdown through `unstructured`, fully offline.

Offline, and why this is safe to rely on:
- `unstructured` pings a telemetry endpoint on import and on every partition call unless
  DO_NOT_TRACK / SCARF_NO_ANALYTICS are set, and prints an advert unless UNSTRUCTURED_DISABLE_NOTICE=1:
  all three are set below, before the first import.
- Its only NLP step is `unstructured.nlp.tokenize` (spaCy; it downloads `en_core_web_sm` from
  GitHub the first time and imports torch through thinc, ~8 s). The partitioners we use call it
  only to guess whether a paragraph is "NarrativeText" or plain "Text" (a sentence count and a
  part-of-speech "has a verb" test). We do not use that distinction: headings come from markup
  (h1-h6, Word heading styles, Markdown #) and every text element is kept either way. So the
  module is replaced, before `unstructured` imports it, by a dependency-free stand-in with the same
  three functions (regex sentences and words, no part-of-speech tags). spaCy is never imported,
  nothing is downloaded, and the import costs ~2 s instead of ~11 s.
- EPUB goes through pandoc (the binary shipped in the `pypandoc-binary` wheel, so `pip install`
  brings it), which `unstructured` runs with `--sandbox` (no file or network access beyond the input).
- Language detection (langdetect) is switched off with `languages=[""]`: we do not use it.
tests/unit/test_parsing_offline.py proves it: every format parses with sockets refused, in this
process and in a fresh interpreter, and spaCy is never imported.
"""

from __future__ import annotations

import io
import os
import re
import sys
import tempfile
import types
from html import unescape
from pathlib import Path
from typing import Iterable

from app.documents.base import ParsedDocument, ParseError, is_heading
from app.documents.detect import decode_text
from app.documents.normalise import TextBuilder, normalise

OFFLINE_ENV = {"DO_NOT_TRACK": "1", "SCARF_NO_ANALYTICS": "1", "UNSTRUCTURED_DISABLE_NOTICE": "1"}
_TOKENIZE = "unstructured.nlp.tokenize"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+|[^\w\s]")
MAX_LABEL = 120
# Elements that repeat on every page or carry no reading text.
_SKIP = {"Header", "Footer", "PageBreak", "PageNumber", "Image"}


def _install_offline_nlp() -> None:
    """Stand in for unstructured.nlp.tokenize (see the module docstring)."""
    if _TOKENIZE in sys.modules and getattr(sys.modules[_TOKENIZE], "LONGREAD_OFFLINE", False):
        return
    stub = types.ModuleType(_TOKENIZE)
    stub.__doc__ = "Longread's offline stand-in for unstructured's spaCy tokenizer (app/documents/rich.py)."
    stub.LONGREAD_OFFLINE = True  # type: ignore[attr-defined]
    stub.sent_tokenize = lambda text: [s for s in _SENTENCE_END.split(text) if s]  # type: ignore[attr-defined]
    stub.word_tokenize = lambda text: _WORD.findall(text)  # type: ignore[attr-defined]
    stub.pos_tag = lambda text: [(w, "") for w in _WORD.findall(text)]  # type: ignore[attr-defined]
    sys.modules[_TOKENIZE] = stub


def prepare() -> None:
    """Make `unstructured` offline and import the partitioners (the parse sandbox preloads this)."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    _install_offline_nlp()
    import unstructured.partition.docx
    import unstructured.partition.epub
    import unstructured.partition.html
    import unstructured.partition.md  # noqa: F401


def parse_rich(fmt: str, data: bytes) -> ParsedDocument:
    prepare()
    if fmt == "html":
        text = _decode_html(data)
        from unstructured.partition.html import partition_html

        elements = partition_html(text=text, languages=[""])
        title = _html_title(text)
    elif fmt == "md":
        from unstructured.partition.md import partition_md

        elements = partition_md(text=decode_text(data), languages=[""])
        title = None
    elif fmt == "docx":
        from unstructured.partition.docx import partition_docx

        elements = partition_docx(
            file=io.BytesIO(data), languages=[""], include_page_breaks=False, infer_table_structure=False
        )
        title = _zip_title(data, "docProps/core.xml")
    elif fmt == "epub":
        elements = _partition_epub(data)
        title = _epub_title(data)
    else:
        raise ValueError(f"not a rich format: {fmt}")
    return build_sections(fmt, elements, title)


def build_sections(fmt: str, elements: Iterable, title: str | None) -> ParsedDocument:
    """Lay out elements in document order; every heading starts a section labelled with it.
    Headings with no text between them share one section ("Part One / Chapter I")."""
    b = TextBuilder()
    section_has_body = False
    first_heading = None
    for el in elements:
        kind = type(el).__name__
        text = (getattr(el, "text", "") or "").strip()
        if kind in _SKIP or not text:
            continue
        if kind == "Title" or (kind in _PLAIN and (_bold_heading(el, text) or is_heading(text))):
            label = normalise(text).replace("\n", " ")[:MAX_LABEL]
            first_heading = first_heading or label
            if b.page_labels and not section_has_body:
                b.page_labels[-1] = f"{b.page_labels[-1]} / {label}"[:MAX_LABEL]
            else:
                b.new_page(label)
            section_has_body = False
            b.add(text)
            continue
        if not b.page_labels:
            b.new_page("Start")
        b.add(f"- {text}" if kind == "ListItem" else text)
        section_has_body = True
    text, starts, labels = b.result(default_label="Start")
    if not text.strip():
        raise ParseError("no text could be extracted: the document has no readable text")
    return ParsedDocument(fmt, text, starts, labels, clean_title(title) or clean_title(first_heading))


_PLAIN = {"Text", "NarrativeText", "UncategorizedText"}
_BOLD_TAGS = {"b", "strong"}
_SPACE = re.compile(r"\s+")


def _bold_heading(el: object, text: str) -> bool:
    """A paragraph set wholly in bold that reads like a title ("CHAPTER 1", "12. Governing Law"):
    documents without heading styles (many DOCX files, contracts above all) mark headings this way.
    Short, at most 12 words, not ending like a clause (`,;:`), a sentence only if very short."""
    meta = getattr(el, "metadata", None)
    contents = getattr(meta, "emphasized_text_contents", None) or []
    tags = getattr(meta, "emphasized_text_tags", None) or []
    bold = "".join(c for c, t in zip(contents, tags) if t in _BOLD_TAGS)
    if not bold or _SPACE.sub("", bold) != _SPACE.sub("", text):
        return False
    words = len(text.split())
    return (
        len(text) <= MAX_LABEL
        and "\n" not in text
        and words <= 12
        and text[-1] not in ",;:"
        and (text[-1] not in ".!?" or words <= 5)
    )


def clean_title(title: str | None) -> str | None:
    if not title:
        return None
    title = normalise(unescape(title)).replace("\n", " ")
    return title[:300] if 1 < len(title) and title.lower() not in {"untitled", "document", "title"} else None


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _decode_html(data: bytes) -> str:
    if not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        m = _META_CHARSET.search(data[:4096])
        if m:
            try:
                return data.decode(m.group(1).decode("ascii"), errors="replace")
            except LookupError:
                pass
    return decode_text(data)


def _html_title(text: str) -> str | None:
    m = re.search(r"<title[^>]*>(.*?)</title>", text[:65536], re.IGNORECASE | re.DOTALL)
    return m.group(1) if m else None


def _zip_member(data: bytes, name: str, limit: int = 1024 * 1024) -> bytes | None:
    import zipfile
    import zlib

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z, z.open(name) as f:
            return f.read(limit)
    except (KeyError, zipfile.BadZipFile, zlib.error, OSError, ValueError, RuntimeError, NotImplementedError, EOFError):
        return None


def _dc_title(xml: bytes | None) -> str | None:
    m = re.search(rb"<dc:title[^>]*>(.*?)</dc:title>", xml or b"", re.DOTALL)
    return m.group(1).decode("utf-8", errors="replace") if m else None


def _zip_title(data: bytes, name: str) -> str | None:
    return _dc_title(_zip_member(data, name))


def _epub_title(data: bytes) -> str | None:
    container = _zip_member(data, "META-INF/container.xml") or b""
    m = re.search(rb'full-path\s*=\s*"([^"]+)"', container)
    return _dc_title(_zip_member(data, m.group(1).decode("utf-8", "replace"))) if m else None


def _partition_epub(data: bytes) -> list:
    from unstructured.partition.epub import partition_epub

    with tempfile.TemporaryDirectory(prefix="longread-epub-") as tmp:
        path = Path(tmp) / "book.epub"  # our name, never the client's
        path.write_bytes(data)
        try:
            return partition_epub(filename=str(path), languages=[""])
        except RuntimeError as exc:  # pandoc failed: unstructured wraps its stderr
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else "pandoc failed"
            raise ParseError(f"the EPUB is damaged or unreadable: {first[:300]}") from exc
