"""Prompt template sets for the memory agent.

`memagent` reproduces, character for character, the prompts that MemAgent's RL-trained models were
trained on: `TEMPLATE` and `TEMPLATE_FINAL_BOXED` of BytedTsinghua-SIA/MemAgent,
`recurrent/impls/memory.py` at commit 76b7a65 (Apache-2.0). They are a file format to those models,
so they are kept verbatim (including the space after `<problem>`); they are rendered with
`str.format`, which turns the published `\\boxed{{}}` into `\\boxed{}` exactly as MemAgent does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NO_MEMORY = "No previous memory"
#: The memory our trained reader keeps while it has found nothing for the question (its oracle traces'
#: empty memory, training/tasks), and the answer given when a reading ends with it (MemoryAgent.answer).
NO_EVIDENCE_MEMORY = "No relevant information yet."
NOT_IN_DOCUMENT = "The document does not say."
#: The same for a yes/no question: read to the end, nothing found that makes it "yes" (a clause asked about
#: is not there). It still says the document is silent, and the first yes or no it says is "No".
NOT_IN_DOCUMENT_NO = "No: the document does not say so."
_YES_NO_QUESTION = re.compile(
    r"^\W*(?:does|do|did|is|are|was|were|has|have|had|can|could|will|would|shall|should|may|must)\b"
    r"|\byes or no\b",
    re.IGNORECASE,
)


def asks_yes_or_no(question: str) -> bool:
    """Whether a question is answered yes or no: it opens with an auxiliary verb, or asks for yes or no.

    >>> asks_yes_or_no("Does this agreement contain a non-compete clause?"), asks_yes_or_no("Who are the parties?")
    (True, False)
    >>> asks_yes_or_no("Non-compete clause: answer yes or no."), asks_yes_or_no("Issues of law?")
    (True, False)
    """
    return bool(_YES_NO_QUESTION.search(question))


@dataclass(frozen=True)
class TemplateSet:
    name: str
    update: str  # fields: {prompt} {memory} {chunk}
    final: str  # fields: {prompt} {memory}

    def render_update(self, problem: str, memory: str, chunk: str) -> str:
        return self.update.format(prompt=problem, memory=memory, chunk=chunk)

    def render_final(self, problem: str, memory: str) -> str:
        return self.final.format(prompt=problem, memory=memory)


MEMAGENT = TemplateSet(
    name="memagent",
    update="""You are presented with a problem, a section of an article that may contain the answer to the problem, and a previous memory. Please read the provided section carefully and update the memory with the new information that helps to answer the problem. Be sure to retain all relevant details from the previous memory while adding any new, useful information.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Updated memory:
""",
    final="""You are presented with a problem and a previous memory. Please answer the problem based on the previous memory and put the answer in \\boxed{{}}.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
""",
)

# Ours, for prefix-cache sharing: the instructions and the chunk come first, so every question
# reading the same chunk sends the same prompt prefix (vLLM's automatic prefix caching then computes
# the chunk's attention once for all of them). Same wording as `memagent`, reordered; the final
# prompt has no chunk to share and stays MemAgent's.
CHUNK_FIRST = TemplateSet(
    name="chunk-first",
    update="""You are presented with a section of an article that may contain the answer to a problem, the problem, and a previous memory. Please read the provided section carefully and update the memory with the new information that helps to answer the problem. Be sure to retain all relevant details from the previous memory while adding any new, useful information.

<section>
{chunk}
</section>

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Updated memory:
""",
    final=MEMAGENT.final,
)

TEMPLATE_SETS: dict[str, TemplateSet] = {t.name: t for t in (MEMAGENT, CHUNK_FIRST)}


def get_template_set(name: str) -> TemplateSet:
    try:
        return TEMPLATE_SETS[name]
    except KeyError:
        raise ValueError(f"unknown template set {name!r}; choose one of {', '.join(sorted(TEMPLATE_SETS))}") from None
