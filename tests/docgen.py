"""Builds test documents: the Project Gutenberg books in ../shared/data/books as HTML, Markdown,
DOCX and EPUB, and small documents of every format from a list of (heading, paragraphs).

DOCX is written with python-docx (installed with `unstructured[docx]`); EPUB and HTML are written
here with the standard library (an EPUB is a ZIP of XHTML files with a manifest), so nothing beyond
the project's own dependencies is needed.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from html import escape
from pathlib import Path

from app.documents.base import TXT_HEADING
from app.documents.detect import decode_text
from training.tasks import DATA_DIR  # LONGREAD_SHARED_DATA, else ../shared/data beside the checkout

BOOKS = DATA_DIR / "books"
CONTRACTS = DATA_DIR / "contracts"
FORMATS = ("txt", "md", "html", "docx", "epub")


@dataclass(frozen=True)
class Book:
    title: str
    #: (heading or None for text before the first heading, paragraphs)
    sections: list[tuple[str | None, list[str]]]

    @property
    def paragraphs(self) -> list[str]:
        return [p for _, ps in self.sections for p in ps]


def read_gutenberg(path: Path) -> Book:
    """A Gutenberg plain-text book as sections of unwrapped paragraphs; chapter headings are
    one-line paragraphs that look like headings (the same rule the TXT parser uses)."""
    text = decode_text(path.read_bytes()).replace("\r\n", "\n")
    m = re.search(r"^Title:\s*(.+)$", text, re.MULTILINE)
    title = m.group(1).strip() if m else path.stem
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        lines = [line.strip() for line in block.split("\n")]
        if len(lines) == 1 and TXT_HEADING.fullmatch(lines[0]):
            sections.append((lines[0], []))
        else:
            sections[-1][1].append(" ".join(lines))
    return Book(title, [s for s in sections if s[0] or s[1]])


def books() -> dict[str, Book]:
    return {p.stem: read_gutenberg(p) for p in sorted(BOOKS.glob("pg*.txt"))}


def to_txt(book: Book) -> bytes:
    parts = []
    for heading, paragraphs in book.sections:
        if heading:
            parts.append(heading)
        parts.extend(paragraphs)
    return "\n\n".join(parts).encode("utf-8")


def to_markdown(book: Book) -> bytes:
    parts = [f"# {book.title}"]
    for heading, paragraphs in book.sections:
        if heading:
            parts.append(f"## {heading}")
        parts.extend(_md_escape(p) for p in paragraphs)
    return "\n\n".join(parts).encode("utf-8")


def _md_escape(p: str) -> str:
    # a paragraph that starts like a Markdown construct ("1. ", "- ", "#") stays a paragraph
    p = re.sub(r"([\\`*_\[\]<>])", r"\\\1", p)
    return re.sub(r"^(\d+)\.(\s)", r"\1\\.\2", re.sub(r"^([-+#>])", r"\\\1", p))


def _xhtml_body(heading: str | None, paragraphs: list[str], level: int = 2) -> str:
    out = [f"<h{level}>{escape(heading)}</h{level}>"] if heading else []
    out.extend(f"<p>{escape(p)}</p>" for p in paragraphs)
    return "\n".join(out)


def to_html(book: Book) -> bytes:
    body = "\n".join(_xhtml_body(h, ps) for h, ps in book.sections)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(book.title)}</title>'
        f"</head>\n<body>\n<h1>{escape(book.title)}</h1>\n{body}\n</body></html>\n"
    ).encode("utf-8")


def to_docx(book: Book, headings: str = "styles") -> bytes:
    """`headings`: "styles" marks the title and headings with Word's Title and Heading 1 styles;
    "bold" writes them as plain paragraphs set in bold, as documents without styles do."""
    import docx

    d = docx.Document()
    d.core_properties.title = book.title
    if headings == "bold":
        d.add_paragraph().add_run(book.title).bold = True
    else:
        d.add_heading(book.title, level=0)
    for heading, paragraphs in book.sections:
        if heading and headings == "bold":
            d.add_paragraph().add_run(heading).bold = True
        elif heading:
            d.add_heading(heading, level=1)
        for p in paragraphs:
            d.add_paragraph(p)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def to_epub(book: Book, extra_entries: int = 0) -> bytes:
    """A minimal valid EPUB 3: one XHTML file per section, in spine order. `extra_entries` adds
    that many tiny files (for the too-many-entries test)."""
    chapters = [(f"c{i:04d}.xhtml", h, ps) for i, (h, ps) in enumerate(book.sections)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # first and stored
        z.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
            '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
            "</rootfiles></container>",
        )
        manifest = "".join(
            f'<item id="c{i}" href="{name}" media-type="application/xhtml+xml"/>'
            for i, (name, _, _) in enumerate(chapters)
        )
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
        z.writestr(
            "OEBPS/content.opf",
            '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            f'<dc:identifier id="id">longread-test</dc:identifier><dc:title>{escape(book.title)}</dc:title>'
            "<dc:language>en</dc:language></metadata><manifest>"
            '<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
            f"{manifest}</manifest><spine>{spine}</spine></package>",
        )
        nav = "".join(f'<li><a href="{name}">{escape(h or "Start")}</a></li>' for name, h, _ in chapters)
        z.writestr("OEBPS/nav.xhtml", _xhtml_doc(book.title, f'<nav epub:type="toc"><ol>{nav}</ol></nav>'))
        for name, heading, paragraphs in chapters:
            z.writestr(f"OEBPS/{name}", _xhtml_doc(book.title, _xhtml_body(heading, paragraphs)))
        for i in range(extra_entries):
            z.writestr(f"OEBPS/extra/{i}.txt", "")
    return buf.getvalue()


def _xhtml_doc(title: str, body: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
        f'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>{escape(title)}</title></head>'
        f"<body>\n{body}\n</body></html>"
    )


CONVERTERS = {"txt": to_txt, "md": to_markdown, "html": to_html, "docx": to_docx, "epub": to_epub}


def convert(book: Book, fmt: str) -> bytes:
    return CONVERTERS[fmt](book)


def small_book(title: str = "The Lighthouse Keeper") -> Book:
    return Book(
        title,
        [
            (None, ["A short note before the first chapter."]),
            (
                "Chapter 1",
                [
                    "The keeper climbed the stairs every evening at dusk.",
                    "He lit the great lamp and watched the ships pass.",
                ],
            ),
            ("Chapter 2", ["One night a storm broke the glass.", "The lamp still burned."]),
            ("Chapter 3", ["In the morning the harbour master came to thank him."]),
        ],
    )
