"""Text normalisation shared by every format, and the builder that lays out a document's text
with its page (or section) map.

`normalise` is idempotent (normalise(normalise(x)) == normalise(x), a property test checks it),
keeps the reading order (it never moves text, it only rewrites characters and whitespace), and
joins a word hyphenated across a line end ("exam-\\nple" -> "example"). It does:

1. line ends: CRLF, CR and the Unicode line/paragraph separators become "\\n";
2. a soft hyphen at a line end joins the two halves; other soft hyphens are dropped;
3. characters: ligatures (ﬁ ﬂ ﬀ ...) spelled out, exotic spaces and tabs made plain spaces,
   control and zero-width characters removed, then Unicode NFC (composed accents);
4. whitespace: runs of spaces become one, lines are stripped;
5. a hard hyphen at a line end between a letter and a lower-case letter is removed with the line
   end (capitalised continuations such as "Anglo-\\nSaxon" keep the hyphen; a compound broken at a
   line end, "well-\\nknown", becomes "wellknown": the usual trade-off without a dictionary);
6. three or more line ends become a paragraph break (two); leading/trailing blank space goes.
"""

from __future__ import annotations

import re
import unicodedata

_LINE_BREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_SOFT_HYPHEN_BREAK = re.compile(r"\u00ad[ \t]*\n[ \t]*")

_TRANSLATE: dict[int, str | None] = {
    0xFB00: "ff",
    0xFB01: "fi",
    0xFB02: "fl",
    0xFB03: "ffi",
    0xFB04: "ffl",
    0xFB05: "st",
    0xFB06: "st",
    0x00AD: None,  # soft hyphen (line-end ones were handled before)
    0x200B: None,
    0x2060: None,
    0xFEFF: None,  # zero-width space, word joiner, stray BOM
    0x00A0: " ",
    0x1680: " ",
    0x202F: " ",
    0x205F: " ",
    0x3000: " ",
    0x09: " ",
    **{cp: " " for cp in range(0x2000, 0x200B)},
    # other C0/C1 controls carry no text (\n is kept: it is the line end)
    **{cp: None for cp in [*range(0x00, 0x09), *range(0x0E, 0x1C), 0x1F, 0x7F, *range(0x80, 0xA0)]},
}
# 0x0A (\n) must survive; the line-break characters above were mapped to \n before translation.
_TRANSLATE.pop(0x0A, None)

_SPACES = re.compile(r" {2,}")
# a hyphen (ASCII or U+2010) at a line end, after a letter and before a lower-case letter
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])[-\u2010]\n(?=([^\W\d_]))")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalise(text: str) -> str:
    text = _LINE_BREAKS.sub("\n", text)
    text = _SOFT_HYPHEN_BREAK.sub("", text)
    text = unicodedata.normalize("NFC", text.translate(_TRANSLATE))
    text = "\n".join(_SPACES.sub(" ", line).strip(" ") for line in text.split("\n"))
    text = _HYPHEN_BREAK.sub(lambda m: "" if m.group(1).islower() else m.group(0), text)
    return _BLANK_LINES.sub("\n\n", text).strip("\n ")


class TextBuilder:
    """Lays out blocks of text (pages, paragraphs, headings) separated by blank lines, and records
    at which character each page or section starts.

    >>> b = TextBuilder()
    >>> b.new_page("1"); b.add("First  page."); b.new_page("2"); b.add("Second\\r\\npage.")
    >>> b.text, b.page_starts, b.page_labels
    ('First page.\\n\\nSecond\\npage.', [0, 13], ['1', '2'])
    """

    SEPARATOR = "\n\n"

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self.page_starts: list[int] = []
        self.page_labels: list[str] = []

    def _next_offset(self) -> int:
        return self._length + (len(self.SEPARATOR) if self._parts else 0)

    def new_page(self, label: str) -> None:
        """Start a page or section at the next block; an empty page keeps its place in the map."""
        self.page_starts.append(self._next_offset() if self._parts else 0)
        self.page_labels.append(label)

    def add(self, raw: str) -> None:
        block = normalise(raw)
        if not block:
            return
        if self._parts:
            self._parts.append(self.SEPARATOR)
            self._length += len(self.SEPARATOR)
        self._parts.append(block)
        self._length += len(block)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def result(self, default_label: str = "1") -> tuple[str, list[int], list[str]]:
        """(text, page_starts, page_labels); starts are clamped to the text (trailing empty pages)."""
        text = self.text
        starts = [min(s, len(text)) for s in self.page_starts] or [0]
        labels = self.page_labels or [default_label]
        return text, starts, labels
