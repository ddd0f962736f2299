"""What every parser returns, the one error users see, the page map, and what a section heading looks like."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field


class ParseError(ValueError):
    """The file cannot be read as a document; the message is shown to the user."""


@dataclass(frozen=True)
class ParsedDocument:
    format: str
    text: str
    #: character offset at which each page (PDF) or section (other formats) starts; sorted, first is 0
    page_starts: list[int]
    #: a label per entry of page_starts: the printed page label for PDFs ("iv", "12"), the heading
    #: for sections ("Chapter 3. The Storm"); same length as page_starts
    page_labels: list[str] = field(default_factory=list)
    #: the document's own title (PDF metadata, <title>, first heading), if it has one
    title: str | None = None

    @property
    def page_unit(self) -> str:
        return page_unit(self.format)


def page_unit(fmt: str) -> str:
    """What the entries of the page map are: printed pages for PDF, headed sections otherwise."""
    return "page" if fmt == "pdf" else "section"


def page_of(page_starts: list[int], char_offset: int) -> int:
    """1-based page (or section) holding `char_offset`. Never below 1, never decreasing in the offset."""
    return max(1, bisect_right(page_starts, char_offset))


def pages_label(first: int, last: int, unit: str = "page", labels: list[str] | None = None) -> str:
    """Where a chunk came from: "page 3", "pages 3–4", or for sections their headings too:
    "section 2: Chapter 1", "sections 2–3: Chapter 1 – Chapter 2". A PDF's pages by the numbers printed on them
    where its page labels say so, their place in the file after: "page 81 (page 98 of the PDF)"."""
    span = f"{unit} {first}" if first == last else f"{unit}s {first}–{last}"
    if unit == "page":
        return printed_pages(first, last, labels)
    if not labels or last > len(labels) or {labels[first - 1], labels[last - 1]} == {"Start"}:
        return span
    names = labels[first - 1] if first == last else f"{labels[first - 1]} – {labels[last - 1]}"
    return f"{span}: {names}"


def printed_pages(first: int, last: int, labels: list[str] | None = None) -> str:
    """PDF pages `first`–`last` (1-based places in the file) as the reader finds them: by the labels printed on
    them (pypdf's page labels: "iv", "81"), with their place in the file where a label differs from it; by the
    place alone where there are no labels.

    >>> printed_pages(98, 98, [str(i - 17) for i in range(1, 120)]), printed_pages(2, 3, ["i", "1", "2"])
    ('page 81 (page 98 of the PDF)', 'pages 1–2 (pages 2–3 of the PDF)')
    >>> printed_pages(4, 4, [str(i) for i in range(1, 9)]), printed_pages(4, 5, None)
    ('page 4', 'pages 4–5')
    """
    span = f"page {first}" if first == last else f"pages {first}–{last}"
    if not labels or not 1 <= first <= last <= len(labels):
        return span
    if (labels[first - 1], labels[last - 1]) == (str(first), str(last)):  # printed as placed: nothing to add
        return span
    printed = f"page {labels[first - 1]}" if first == last else f"pages {labels[first - 1]}–{labels[last - 1]}"
    return f"{printed} ({span} of the PDF)"


# A chapter-like heading in plain text (and in a plain DOCX, EPUB or HTML paragraph: app/documents/rich.py):
# a paragraph of one short line such as "Chapter 3", "LETTER IV", "Part First.", "Chapter I. The Bertolini",
# "ARTICLE 7 - TERM", "PREFACE", "12. GOVERNING LAW" or a lone Roman numeral ("IV.").
_NUMBER = (
    r"(?:\d{1,4}|[IVXLCivxlc]{1,8}|(?i:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve))"
)
TXT_HEADING = re.compile(
    r"(?i:chapter|letter|part|book|volume|section|article|act|scene|stave|canto)[ \t]+"
    + _NUMBER
    + r"\.?(?:[ \t]*[-:.\u2013\u2014]?[ \t]+\S.{0,80})?"
    r"|(?i:prologue|epilogue|preface|foreword|introduction|appendix|conclusion|contents)\.?"
    r"|[IVXLC]{1,8}\.?"
    r"|\d{1,3}(?:\.\d{1,3})*\.?[ \t]+[A-Z][A-Z ,&'-]{2,60}"
)
#: a heading is one line of at most this many characters
MAX_HEADING_CHARS = 120


def is_heading(paragraph: str) -> bool:
    """Whether a paragraph is a chapter-like heading (TXT_HEADING) that starts a section: in plain text, and in
    a plain DOCX, EPUB or HTML paragraph (app/documents/rich.py)."""
    return (
        len(paragraph) <= MAX_HEADING_CHARS and "\n" not in paragraph and TXT_HEADING.fullmatch(paragraph) is not None
    )
