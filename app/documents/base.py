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
