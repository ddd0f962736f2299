"""Rule-based verifiers: did the agent's final output answer the question? Used by the RL reward
(training/trainer.py) and the evaluation (training/evaluate.py), so a reader is trained on what it is judged by.

Only the final answer is scored (MemAgent's outcome reward): the content of the last `\\boxed{}`
when there is one, else the whole output. Two rules:

- `exact_match`: the prediction equals one of the gold answers (normalised text; dates by meaning);
- `sub_em`, the strict evaluation metric of DESIGN.md. What it asks depends on the gold's kind
  (`answer_kind`), read from the gold alone so that every caller (trainer, evaluation, a user's cases
  file) scores alike:
  - yes/no: the first "yes" or "no" of the prediction is the gold's;
  - parties (CUAD's `A ("a"); B ("b")`): every gold party is named (`party_recall`, one party at a time);
  - everything else: the gold appears inside the prediction at word boundaries (a gold listing items
    with ";" needs each item), dates compared by meaning: "April 14th, 2020" answers 4/14/20;
  - and nothing else of the gold's kind is offered beside it: an answer that lists several numbers
    (of the gold's unit), dates, states or countries, or names scores 0. Otherwise RL pays a reader to
    hedge: "9571278, 3799942, 11411111" for 3799942 earned full reward. Words of other kinds are fine:
    "The laws of the State of New York" answers "New York".

>>> reward(r"The memory says so. \\boxed{The State of Nevada}", ["Nevada"], "sub_em")
1.0
>>> reward(r"\\boxed{9571278, 3799942, 11411111}", ["3799942"], "sub_em")
0.0
>>> reward(r"\\boxed{The State of Nevada}", ["Nevada"], "exact_match"), reward(r"\\boxed{nevada.}", ["Nevada"])
(0.0, 1.0)
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal

from inference.agent import extract_boxed
from inference.contract_review import first_yes_no, normalize
from inference.dates import as_date, date_mentions

Rule = Literal["exact_match", "sub_em"]
RULES: tuple[Rule, ...] = ("exact_match", "sub_em")
Kind = Literal["yes/no", "date", "parties", "jurisdiction", "number", "name", "text"]


def _contains(text: str, part: str) -> bool:
    """`part` inside `text` at word boundaries, both normalised ("ohio" is not in "ohioan")."""
    return bool(part) and f" {part} " in f" {text} "


def predicted_answer(output: str) -> str:
    """What the agent answered: its last boxed answer, else everything it wrote.

    >>> predicted_answer(r"I think \\boxed{42}."), predicted_answer("forty-two")
    ('42', 'forty-two')
    """
    boxed = extract_boxed(output)
    return boxed if boxed is not None else output.strip()


def items(gold: str) -> list[str]:
    """The items of a gold that lists several with ";" (CUAD: "Texas; Singapore"), not splitting
    inside brackets, where a party's note may use one.

    >>> items('A ("a"); B (each a "Party"; together the "Parties")')
    ['A ("a")', 'B (each a "Party"; together the "Parties")']
    """
    if gold.startswith("(") and gold.endswith(")"):  # the whole answer in brackets
        gold = gold[1:-1]
    out, depth, start = [], 0, 0
    for i, c in enumerate(gold):
        depth += (c == "(") - (c == ")")
        if c == ";" and depth <= 0:
            out.append(gold[start:i])
            start = i + 1
    return [s.strip() for s in [*out, gold[start:]] if s.strip()]


# --- jurisdictions, numbers, names ----------------------------------------------------------------
US_STATES: tuple[str, ...] = (
    "Alabama",
    "Alaska",
    "Arizona",
    "Arkansas",
    "California",
    "Colorado",
    "Connecticut",
    "Delaware",
    "Florida",
    "Georgia",
    "Hawaii",
    "Idaho",
    "Illinois",
    "Indiana",
    "Iowa",
    "Kansas",
    "Kentucky",
    "Louisiana",
    "Maine",
    "Maryland",
    "Massachusetts",
    "Michigan",
    "Minnesota",
    "Mississippi",
    "Missouri",
    "Montana",
    "Nebraska",
    "Nevada",
    "New Hampshire",
    "New Jersey",
    "New Mexico",
    "New York",
    "North Carolina",
    "North Dakota",
    "Ohio",
    "Oklahoma",
    "Oregon",
    "Pennsylvania",
    "Rhode Island",
    "South Carolina",
    "South Dakota",
    "Tennessee",
    "Texas",
    "Utah",
    "Vermont",
    "Virginia",
    "Washington",
    "West Virginia",
    "Wisconsin",
    "Wyoming",
)
#: A country's states or provinces: naming the country beside one of them ("New York, USA") is no rival.
_REGIONS = {
    "United States": ", ".join((*US_STATES, "District of Columbia", "Puerto Rico")),
    "Canada": "Ontario, Quebec, British Columbia, Alberta, Manitoba, Saskatchewan, Nova Scotia, New Brunswick, "
    "Newfoundland and Labrador, Prince Edward Island",
    "Australia": "New South Wales, Victoria, Queensland, Western Australia, South Australia, Tasmania",
    "United Kingdom": "England, Wales, Scotland, Northern Ireland",
    "China": "Beijing, Shanghai, Hong Kong, Macau",
}
_COUNTRIES = (
    "Argentina, Austria, Bahamas, Belgium, Bermuda, Brazil, British Virgin Islands, Bulgaria, Cayman Islands, Chile, "
    "Colombia, Croatia, Cyprus, Czech Republic, Denmark, Egypt, Estonia, Finland, France, Germany, Greece, Hungary, "
    "Iceland, India, Indonesia, Ireland, Israel, Italy, Japan, Jersey, Kazakhstan, Kenya, Korea, Latvia, Lithuania, "
    "Luxembourg, Malaysia, Malta, Mexico, Monaco, Netherlands, New Zealand, Nigeria, Norway, Pakistan, Panama, "
    "Papua New Guinea, Peru, Philippines, Poland, Portugal, Romania, Russia, Saudi Arabia, Singapore, Slovakia, "
    "Slovenia, South Africa, Spain, Sweden, Switzerland, Taiwan, Thailand, Turkey, Ukraine, United Arab Emirates, "
    "Uruguay, Venezuela, Vietnam"
)
_ALIASES = {
    "United States": "USA, United States of America",
    "United Kingdom": "UK, Great Britain, Britain",
    "China": "PRC, People's Republic of China",
    "Korea": "South Korea, Republic of Korea",
}
_JURISDICTION: dict[str, str] = {}  # normalised name -> the jurisdiction it names
_PARENT: dict[str, str] = {}
for _country, _regions in [*_REGIONS.items(), *((c, "") for c in _COUNTRIES.split(", "))]:
    for _name in [_country, *_ALIASES.get(_country, "").split(", ")]:
        _JURISDICTION[normalize(_name)] = _country
    for _region in filter(None, _regions.split(", ")):
        _JURISDICTION[normalize(_region)] = _region
        _PARENT[_region] = _country
_JURISDICTIONS = re.compile(
    r"\b(" + "|".join(map(re.escape, sorted(filter(None, _JURISDICTION), key=len, reverse=True))) + r")\b"
)


def jurisdictions_in(text: str) -> set[str]:
    """The states and countries `text` names, the longest name first ("West Virginia" is not Virginia).

    >>> sorted(jurisdictions_in("the laws of the People's Republic of China and of West Virginia"))
    ['China', 'West Virginia']
    """
    return {_JURISDICTION[m] for m in _JURISDICTIONS.findall(normalize(text))}


_UNITS = {"day", "week", "month", "year", "hour", "minute", "business day"}
_NUMBER = re.compile(r"(?<![\w.,])(\d+(?:,\d{3})*(?:\.\d+)?)(?!\w)\)?\s*((?:business |calendar )?[a-z]+)?")


def numbers_in(text: str) -> set[tuple[str, str | None]]:
    """The numbers `text` writes, each with its unit when one follows ("(30) days" is 30 days).

    >>> sorted(numbers_in("thirty (30) days, then 1,000 units on the 2nd"), key=str)
    [('1000', None), ('30', 'day')]
    """
    found = set()
    for m in _NUMBER.finditer(unicodedata.normalize("NFKC", text).lower()):
        unit = re.sub(r"^calendar |s$", "", m[2] or "")
        found.add((m[1].replace(",", ""), unit if unit in _UNITS else None))
    return found


_PLACE_WORDS = {"state", "of", "province", "commonwealth", "republic", "law", "laws", "federal", "and", "country"}


def _is_place(text: str) -> bool:
    """Names a state or country and nothing else but words like "State of" ("Victoria, Australia")."""
    rest = _JURISDICTIONS.sub(" ", normalize(text)).split()
    return bool(jurisdictions_in(text)) and set(rest) <= _PLACE_WORDS


_CONNECTORS = {"of", "de", "du", "da", "di", "la", "le", "van", "von", "der", "den", "and", "&", "for", "the"}


def looks_like_name(text: str) -> bool:
    """A person's or company's name: at most six words, all capitalised but connectors, no digits.

    >>> looks_like_name("Bank of South Pacific Ltd."), looks_like_name("with Brisk fever"), looks_like_name("Room 12")
    (True, False, False)
    """
    words = [w for w in (w.strip(".,;:()[]\"'“”‘’!?") for w in text.split()) if w]
    if words and words[0].lower() == "the":
        words = words[1:]
    return (
        0 < len(words) <= 6
        and words[0][0].isupper()
        and not any(c.isdigit() for w in words for c in w)
        and all(w[0].isupper() or w.lower() in _CONNECTORS for w in words)
    )


def answer_kind(gold: str) -> Kind:
    """What kind of answer `gold` is, which decides what `sub_em` asks and what a rival candidate is.

    >>> [answer_kind(g) for g in ("No", "[]/[]/2009", 'Acme Inc. ("Acme"); Bolt LLC', "Texas; Belgium", "30 days")]
    ['yes/no', 'date', 'parties', 'jurisdiction', 'number']
    >>> answer_kind("Orlan Veskit"), answer_kind("perpetual")
    ('name', 'text')
    """
    parts = items(gold)
    if normalize(gold) in ("yes", "no"):
        return "yes/no"
    if any(as_date(p) for p in parts):
        return "date"
    if re.search(r"\([^()]*[\"“][^()]*\)", gold):  # a defined alias: `Acme Inc. ("Acme")`
        return "parties"
    if any(_is_place(p) for p in parts):
        return "jurisdiction"
    if any(numbers_in(p) and len(normalize(p).split()) <= 4 for p in parts):
        return "number"
    if len(parts) > 1:
        return "parties"
    return "name" if looks_like_name(gold) else "text"


def is_yes_no(golds: Sequence[str]) -> bool:
    """A yes/no question's golds: some, each Yes or No.

    >>> is_yes_no(["Yes"]), is_yes_no([" no. "]), is_yes_no([]), is_yes_no(["Yes", "Texas"])
    (True, True, False, False)
    """
    return bool(golds) and all(answer_kind(g) == "yes/no" for g in golds)


# --- parties ----------------------------------------------------------------------------------
_LEGAL = {
    "inc",
    "incorporated",
    "llc",
    "lc",
    "llp",
    "lp",
    "ltd",
    "limited",
    "corp",
    "corporation",
    "co",
    "company",
    "plc",
    "sa",
    "ag",
    "gmbh",
    "bv",
    "nv",
    "pty",
    "srl",
    "sarl",
    "spa",
    "ab",
    "pte",
    "gie",
    "kk",
}
_SMALL = {"of", "and", "for", "&"}
_NOTE = re.compile(r"\s*(?:individually|collectively|each|together|both|hereinafter)\b|\s*$", re.IGNORECASE)


def _party_key(name: str) -> str:
    """A party's name as `sub_em` looks for it: normalised, legal-form suffixes dropped."""
    words = normalize(name).split()
    while len(words) > 1 and words[-1] in _LEGAL:
        words.pop()
    return " ".join(words)


def _initials(name: str) -> set[str]:
    words = normalize(name).split()
    return {"".join(w[0] for w in ws) for ws in (words, [w for w in words if w not in _SMALL])}


def party_names(entry: str) -> tuple[str, ...]:
    """The normalised names that name one party of a CUAD Parties answer; () for a note or a blank party.

    Normalised: case, punctuation and ™ gone; a trailing legal form (Inc., LLC, Corp., Ltd., Co., S.A.,
    GmbH, ...) dropped, so "Acme" names "Acme, Inc."; a name before "d/b/a" or "./" and the one after
    are both the party's; a defined alias in quotes counts when it is the party's own word, part of its name
    or its initials ("NFLA" for National Football League Alumni), not a role any party could hold ("the Company").

    >>> party_names('Food For Athletes, Inc./Gridiron BioNutrients™ (collectively the "Company")')
    ('food for athletes', 'gridiron bionutrients')
    >>> party_names('National Football League Alumni, Inc ("NFLA")'), party_names('[] ("Licensee")')
    (('national football league alumni', 'nfla'), ())
    >>> party_names('Company and Consultant (individually, a “Party”; collectively, the “Parties”)')
    ()
    """
    entry = entry.strip().lstrip("(").strip()
    name = re.match(r"[^(\"“”]*", entry)[0]  # type: ignore[index]
    rest = entry[len(name) :]
    if _NOTE.match(name) or (" and " in name and "parties" in rest.lower()):
        return ()  # "A and B (collectively the "Parties")" restates the parties named before it
    name = re.sub(r",?\s+(?:on behalf of|and/or)\b.*", "", name, flags=re.IGNORECASE)
    names = re.split(r"\s*\bd/b/a\b\s*|(?<=\.)/", name, flags=re.IGNORECASE)
    keys = {k for n in names if (k := _party_key(n))}
    if not keys:
        return ()
    own = {w for k in keys for w in k.split()} - _LEGAL - _SMALL
    initials = set().union(*map(_initials, [*names, *keys]))
    for alias in map(normalize, re.findall(r"[\"“]([^\"“”]+)[\"”]", rest)):
        if alias not in ("", "party", "parties") and (
            own & set(alias.split()) or alias in initials or any(w.startswith(alias) for w in own)
        ):  # Neoforma.com
            keys.add(alias)
    return tuple(sorted(keys))


def party_recall(prediction: str, gold: str) -> float:
    """The fraction of the gold's parties that the prediction names (by any of `party_names`); 1.0 when the
    gold names none that can be named.

    >>> gold = 'Allscripts Healthcare, LLC ("Allscripts"); Phreesia, Inc. ("Company", "Phreesia")'
    >>> party_recall("Allscripts and Phreesia", gold), party_recall("Allscripts and the Company", gold)
    (1.0, 0.5)
    """
    parties = [p for p in map(party_names, items(gold)) if p]
    said = normalize(prediction)
    return sum(any(_contains(said, n) for n in p) for p in parties) / len(parties) if parties else 1.0


# --- the rules --------------------------------------------------------------------------------
def _found(prediction: str, item: str) -> bool:
    """One gold item inside the prediction: by meaning for a date, as text at word boundaries otherwise
    (raw text for a gold that normalises to nothing, like CUAD's "[]")."""
    if day := as_date(item):
        return any(d.fits(day) for d in date_mentions(prediction))
    if not normalize(item):
        return " ".join(item.split()) in " ".join(prediction.split())
    return _contains(normalize(prediction), normalize(item))


def _rivals(prediction: str, gold: str, kind: Kind) -> bool:
    """Whether the prediction offers a candidate of the gold's kind that the gold does not hold."""
    parts = items(gold)
    if kind == "date":
        days = [d for p in parts if (d := as_date(p))]
        return any(
            m.as_specific(d) and not any(m.fits(e) for e in days) for m in date_mentions(prediction) for d in days
        )
    if kind == "jurisdiction":
        named = jurisdictions_in(gold)
        return bool(jurisdictions_in(prediction) - named - {_PARENT.get(j) for j in named})
    if kind == "number":
        numbers = numbers_in(gold)
        units = {u for _, u in numbers}
        return any(n not in numbers for n in numbers_in(prediction) if n[1] in units)
    if kind == "name":  # a list ("A, B and C") that holds the gold and another name
        golds = [normalize(p) for p in parts]
        pieces = [p for p in re.split(r"[,;/\n]|\b(?:and|or)\b", prediction) if normalize(p)]
        ours = [any(_contains(g, normalize(p)) for g in golds) for p in pieces]
        return any(ours) and any(
            not mine
            and looks_like_name(p)
            and not any(_contains(normalize(p), g) for g in golds)
            and not jurisdictions_in(p)  # "Oslo, Norway": a place beside the name, another kind
            for p, mine in zip(pieces, ours)
        )
    return False


def mentions(text: str, gold: str) -> bool:
    """The gold is named in `text` (every party, every item; dates by meaning), whatever else `text` offers
    beside it: what `sub_em` asks but the rivals rule, which is for answers. A reading's memory may keep
    several candidates (training/misses.py asks whether it kept the gold). Not for yes/no golds.

    >>> mentions("Governed by Delaware law; notices in Nevada.", "Delaware"), mentions("Ohioan", "Ohio")
    (True, False)
    """
    if answer_kind(gold) == "parties" and any(map(party_names, items(gold))):
        return party_recall(text, gold) == 1.0
    return all(_found(text, p) for p in items(gold)) or _found(text, gold)


def _right(prediction: str, gold: str) -> bool:
    kind = answer_kind(gold)
    if kind == "yes/no":
        return first_yes_no(prediction) == normalize(gold)
    return mentions(prediction, gold) and not _rivals(prediction, gold, kind)  # parties: by name, no rivals


def sub_em(prediction: str, golds: Sequence[str]) -> bool:
    """Right by one of the gold answers under the strict rules of this module's docstring. Never the
    other way round: a prediction inside a gold would pay a partial answer in full (one of two codes,
    or a single shared word), which RL then learns to give.

    >>> sub_em("governed by the laws of Delaware", ["Delaware"]), sub_em("Delaware and Nevada", ["Delaware"])
    (True, False)
    >>> sub_em("9484490", ["1635316, 9484490"]), sub_em("", ["Delaware"]), sub_em("ohioan", ["Ohio"])
    (False, False, False)
    >>> sub_em("made on the 30th day of October, 2017", ["10/30/17"]), sub_em("11/16/2020", ["1/1/16"])
    (True, False)
    >>> sub_em("Yes, but not without consent", ["Yes"]), sub_em("Jo March and Laurie", ["Jo March"])
    (True, False)
    """
    return any(_right(prediction, g) for g in golds)


def exact_match(prediction: str, golds: Sequence[str]) -> bool:
    """Equal after normalising; a date gold equal as a date.

    >>> exact_match("the Netherlands", ["Netherlands", "Holland"])
    True
    >>> exact_match("October 30th, 2017", ["10/30/17"]), exact_match("10/30/17 or 11/1/17", ["10/30/17"])
    (True, False)
    """
    p, said = normalize(prediction), as_date(prediction)
    return any(said == day if (day := as_date(g)) else p == normalize(g) for g in golds)


def score(prediction: str, golds: Sequence[str], rule: Rule) -> bool:
    if rule == "exact_match":
        return exact_match(prediction, golds)
    if rule == "sub_em":
        return sub_em(prediction, golds)
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")


def reward(output: str, golds: Sequence[str], rule: Rule = "exact_match") -> float:
    """1.0 when the final output's answer is right under `rule`, else 0.0."""
    return float(score(predicted_answer(output), golds, rule))
