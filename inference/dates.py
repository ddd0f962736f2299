"""Dates as contracts and readers write them ("10/30/17", "the 30th day of October, 2017", CUAD's blanks "[]"),
compared by meaning. The strict verifier (training/verifier.py) scores dates with them, and the agent
(`MemoryAgent.answer`) checks that a date it answers is one its final memory holds."""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple


class Day(NamedTuple):
    """A date as written, parts unknown where CUAD writes "[]": month and day None, year "" or the digits
    known ("19" of 19[]). A prediction's date fits a gold's when it agrees on every part the gold knows."""

    month: int | None
    day: int | None
    year: str

    def fits(self, gold: Day) -> bool:
        return gold.month in (None, self.month) and gold.day in (None, self.day) and self.year.startswith(gold.year)

    def as_specific(self, gold: Day) -> bool:
        """Says every part the gold says: a rival candidate when it does not fit."""
        return (
            (gold.month is None or self.month is not None)
            and (gold.day is None or self.day is not None)
            and len(self.year) >= len(gold.year)
        )


_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = rf"(?P<month>{'|'.join(m[:3] + f'(?:{m[3:]})?' for m in _MONTHS)})\.?"
_MONTH_NUMBER = {m[:3]: n for n, m in enumerate(_MONTHS, 1)}
_DAY, _YEAR = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?", r"(?P<year>\d{4}|\d{2})"
_SLOT = r"(?:\d|\[\])"  # a digit, or CUAD's blank
_DATE_FORMS = [
    re.compile(form, re.IGNORECASE)
    for form in (  # most specific first: a match hides those inside it
        # 4/3/[]
        rf"(?<![\w/\[\]])(?P<month>{_SLOT}{{1,2}})/(?P<day>{_SLOT}{{1,2}})/(?P<year>{_SLOT}{{1,4}})(?![\w/\[\]])",
        rf"\b{_MONTH} {_DAY},? {_YEAR}\b",  # October 30, 2017
        rf"\b(?:the )?{_DAY}(?: day)?(?: of)? {_MONTH},? {_YEAR}\b",  # 30 October 2017, the 30th day of October, 2017
        rf"\b{_MONTH},? (?:of )?(?P<year>\d{{4}})\b",  # October 2017
        r"(?<![\w/])(?P<year>(?:19|20)\d\d)(?![\w/])",  # 2017
    )
]


def _day(m: re.Match[str]) -> Day | None:
    """The date a match of one of `_DATE_FORMS` writes; None for no such day (February 30, 13/30/17)."""
    parts = m.groupdict()
    month, day, year = parts.get("month"), parts.get("day"), parts["year"]
    if month and not month.isdigit() and "[" not in month:
        month = str(_MONTH_NUMBER[month[:3].lower()])
    if "[" in year:
        year = year.split("[")[0]  # the digits before the first blank
    elif len(year) == 2:
        year = str(int(year) + (2000 if int(year) < 50 else 1900))
    elif len(year) != 4:
        return None
    said = Day(int(month) if month and month.isdigit() else None, int(day) if day and day.isdigit() else None, year)
    try:
        date(int(year) if len(year) == 4 else 2000, said.month or 1, said.day or 1)  # 2000: February 29 exists
    except ValueError:
        return None
    return said


def date_mentions(text: str) -> list[Day]:
    """The dates written in `text`, in the forms contracts and readers use, in order; a two-digit year is
    20YY below 50, else 19YY.

    >>> date_mentions("made 10/30/17, effective the 1st day of Nov. 2017 until 2 March 2020")
    [Day(month=10, day=30, year='2017'), Day(month=11, day=1, year='2017'), Day(month=3, day=2, year='2020')]
    >>> date_mentions("13/30/17 or 1116"), date_mentions("[ ]/[ ]/20[ ], or in May 2009")
    ([], [Day(month=None, day=None, year='20'), Day(month=5, day=None, year='2009')])
    """
    return [day for _, day in dates_written(text)]


def dates_written(text: str) -> list[tuple[str, Day]]:
    """Each date of `date_mentions` with the words that write it (CUAD's blanks as `[]`).

    >>> dates_written("entered into as of the 14th day of May, 1999 (the Effective Date)")
    [('the 14th day of May, 1999', Day(month=5, day=14, year='1999'))]
    """
    text = re.sub(r"\[\s*\]", "[]", text)
    taken: list[tuple[int, int, Day | None]] = []
    for form in _DATE_FORMS:
        for m in form.finditer(text):
            if not any(a < m.end() and m.start() < b for a, b, _ in taken):
                taken.append((m.start(), m.end(), _day(m)))
    return [(text[a:b], d) for a, b, d in sorted(taken, key=lambda t: t[0]) if d]


def as_date(text: str) -> Day | None:
    """The date `text` is, when it is one date and nothing else ("10/30/17", "October 30, 2017.", "[]/[]/2009")."""
    text = re.sub(r"\[\s*\]", "[]", text.strip().rstrip("."))
    return next((_day(m) for form in _DATE_FORMS if (m := form.fullmatch(text))), None)


def dates_not_in(text: str, memory: str) -> list[Day]:
    """The dates `text` names that `memory` does not, by meaning (either may say less: "2017" holds 10/30/17).

    >>> dates_not_in("12/15/18", "This Agreement forms the basis for a working relationship.")
    [Day(month=12, day=15, year='2018')]
    >>> dates_not_in("October 30, 2017", "Signed 10/30/17."), dates_not_in("March 18, 2021", "until March 18.2021")
    ([], [])
    """
    held = date_mentions(memory)
    return [d for d in date_mentions(text) if not any(m.fits(d) or d.fits(m) for m in held)]
