"""Rule-based verifiers: did the agent's final output answer the question?

Only the final answer is scored (MemAgent's outcome reward): the content of the last `\\boxed{}`
when there is one, else the whole output. Two rules on normalised text:

- `exact_match`: the prediction equals one of the gold answers;
- `sub_em`: a gold answer is contained in the prediction (the evaluation metric of DESIGN.md,
  forgiving for "the laws of Nevada" against "Nevada").

A gold answer that is a date (CUAD writes them M/D/YY) is compared as a date, in whatever form the
prediction writes it: "April 14th, 2020" answers 4/14/20; as text, punctuation gone, "1/1/16" would be
found inside "11/16/2020".

>>> reward(r"The memory says so. \\boxed{The State of Nevada}", ["Nevada"], "sub_em")
1.0
>>> reward(r"\\boxed{The State of Nevada}", ["Nevada"], "exact_match")
0.0
>>> reward(r"\\boxed{nevada.}", ["Nevada"], "exact_match")
1.0
"""

from __future__ import annotations

import re
import string
import unicodedata
from datetime import date
from typing import Literal, Sequence

from inference.agent import extract_boxed

Rule = Literal["exact_match", "sub_em"]
RULES: tuple[Rule, ...] = ("exact_match", "sub_em")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "“”‘’«»–—")

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")  # fmt: skip
_MONTH = rf"(?P<month>{'|'.join(m[:3] + f'(?:{m[3:]})?' for m in _MONTHS)})\.?"
_MONTH_NUMBER = {m[:3]: n for n, m in enumerate(_MONTHS, 1)}
_DAY, _YEAR = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?", r"(?P<year>\d{4}|\d{2})"
_DATE_FORMS = [re.compile(rf"\b{form}\b", re.IGNORECASE) for form in (
    rf"(?P<month>\d{{1,2}})/{_DAY}/{_YEAR}",  # 10/30/17, US order as CUAD writes it
    rf"{_MONTH} {_DAY},? {_YEAR}",  # October 30, 2017
    rf"(?:the )?{_DAY}(?: day)?(?: of)? {_MONTH},? {_YEAR}",  # 30 October 2017, the 30th day of October, 2017
)]  # fmt: skip


def _date(m: re.Match[str]) -> date | None:
    """The date a match of one of `_DATE_FORMS` writes; None for no such day (February 30)."""
    month = int(m["month"]) if m["month"].isdigit() else _MONTH_NUMBER[m["month"][:3].lower()]
    year = int(m["year"]) + (0 if len(m["year"]) == 4 else 2000 if int(m["year"]) < 50 else 1900)
    try:
        return date(year, month, int(m["day"]))
    except ValueError:
        return None


def dates_in(text: str) -> list[date]:
    """The calendar dates written in `text`, in the forms contracts and readers use; a two-digit year
    is 20YY below 50, else 19YY.

    >>> dates_in("made 10/30/17, effective the 1st day of Nov. 2017 until 2 March 2020")
    [datetime.date(2017, 10, 30), datetime.date(2017, 11, 1), datetime.date(2020, 3, 2)]
    >>> dates_in("13/30/17 or 1116")
    []
    """
    found = sorted((m.start(), _date(m)) for form in _DATE_FORMS for m in form.finditer(text))
    return [d for _, d in found if d]


def as_date(text: str) -> date | None:
    """The date `text` is, when it is one date and nothing else ("10/30/17", "October 30, 2017.")."""
    text = text.strip().rstrip(".")
    return next((_date(m) for form in _DATE_FORMS if (m := form.fullmatch(text))), None)


def normalize(text: str) -> str:
    """Lower case, NFKC, no punctuation, no articles, single spaces (SQuAD-style).

    >>> normalize("  The  State of New-York!  ")
    'state of newyork'
    """
    text = unicodedata.normalize("NFKC", text).lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def predicted_answer(output: str) -> str:
    """What the agent answered: its last boxed answer, else everything it wrote.

    >>> predicted_answer(r"I think \\boxed{42}.")
    '42'
    >>> predicted_answer("forty-two")
    'forty-two'
    """
    boxed = extract_boxed(output)
    return boxed if boxed is not None else output.strip()


def exact_match(prediction: str, golds: Sequence[str]) -> bool:
    """Equal after normalising.

    >>> exact_match("the Netherlands", ["Netherlands", "Holland"])
    True
    >>> exact_match("October 30th, 2017", ["10/30/17"]), exact_match("10/30/17 or 11/1/17", ["10/30/17"])
    (True, False)
    """
    p, said = normalize(prediction), as_date(prediction)
    return any(said == day if (day := as_date(g)) else p == normalize(g) for g in golds)


def sub_em(prediction: str, golds: Sequence[str]) -> bool:
    """A gold answer appears in the prediction, on normalised text (RULER's string match). Not the
    other way round: a prediction inside a gold would pay a partial answer in full (one of two codes,
    or a single shared word), which RL then learns to give.

    >>> sub_em("governed by the laws of Delaware", ["Delaware"])
    True
    >>> sub_em("9484490", ["1635316, 9484490"])
    False
    >>> sub_em("Delaware", ["the State of Delaware", "Delaware"])
    True
    >>> sub_em("", ["Delaware"])
    False
    >>> sub_em("made on the 30th day of October, 2017", ["10/30/17"]), sub_em("11/16/2020", ["1/1/16"])
    (True, False)
    """
    p = normalize(prediction)
    return bool(p) and any(day in dates_in(prediction) if (day := as_date(g)) else bool(n) and n in p
                           for g in golds for n in [normalize(g)])


def score(prediction: str, golds: Sequence[str], rule: Rule) -> bool:
    if rule == "exact_match":
        return exact_match(prediction, golds)
    if rule == "sub_em":
        return sub_em(prediction, golds)
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")


def reward(output: str, golds: Sequence[str], rule: Rule = "exact_match") -> float:
    """1.0 when the final output's answer is right under `rule`, else 0.0."""
    return float(score(predicted_answer(output), golds, rule))
