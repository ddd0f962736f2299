"""Rule-based verifiers: did the agent's final output answer the question?

Only the final answer is scored (MemAgent's outcome reward): the content of the last `\\boxed{}`
when there is one, else the whole output. Two rules on normalised text:

- `exact_match`: the prediction equals one of the gold answers;
- `sub_em`: a gold answer is contained in the prediction, or the prediction in a gold answer
  (the evaluation metric of DESIGN.md, forgiving for "the laws of Nevada" against "Nevada").

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
from typing import Literal, Sequence

from inference.agent import extract_boxed

Rule = Literal["exact_match", "sub_em"]
RULES: tuple[Rule, ...] = ("exact_match", "sub_em")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation + "“”‘’«»–—")


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
    """
    p = normalize(prediction)
    return any(p == normalize(g) for g in golds)


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
    """
    p = normalize(prediction)
    return bool(p) and any(g and g in p for g in map(normalize, golds))


def score(prediction: str, golds: Sequence[str], rule: Rule) -> bool:
    if rule == "exact_match":
        return exact_match(prediction, golds)
    if rule == "sub_em":
        return sub_em(prediction, golds)
    raise ValueError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")


def reward(output: str, golds: Sequence[str], rule: Rule = "exact_match") -> float:
    """1.0 when the final output's answer is right under `rule`, else 0.0."""
    return float(score(predicted_answer(output), golds, rule))
