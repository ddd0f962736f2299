"""The `memagent` templates must render exactly as MemAgent's published prompts
(BytedTsinghua-SIA/MemAgent recurrent/impls/memory.py @ 76b7a65, TEMPLATE and TEMPLATE_FINAL_BOXED,
after str.format). The expected texts below are typed out from that file."""

import pytest

from inference.templates import CHUNK_FIRST, MEMAGENT, NO_MEMORY, get_template_set

EXPECTED_UPDATE = (
    "You are presented with a problem, a section of an article that may contain the answer to the problem, "
    "and a previous memory. Please read the provided section carefully and update the memory with the new "
    "information that helps to answer the problem. Be sure to retain all relevant details from the previous "
    "memory while adding any new, useful information.\n"
    "\n"
    "<problem> \n"
    "Who wrote it?\n"
    "</problem>\n"
    "\n"
    "<memory>\n"
    "No previous memory\n"
    "</memory>\n"
    "\n"
    "<section>\n"
    "Chapter 1. It was {braces} kept.\n"
    "</section>\n"
    "\n"
    "Updated memory:\n"
)

EXPECTED_FINAL = (
    "You are presented with a problem and a previous memory. Please answer the problem based on the previous "
    "memory and put the answer in \\boxed{}.\n"
    "\n"
    "<problem> \n"
    "Who wrote it?\n"
    "</problem>\n"
    "\n"
    "<memory>\n"
    "Mary Shelley wrote it.\n"
    "</memory>\n"
    "\n"
    "Your answer:\n"
)


def test_update_template_renders_as_published():
    assert MEMAGENT.render_update("Who wrote it?", NO_MEMORY, "Chapter 1. It was {braces} kept.") == EXPECTED_UPDATE


def test_final_template_renders_as_published():
    assert MEMAGENT.render_final("Who wrote it?", "Mary Shelley wrote it.") == EXPECTED_FINAL


def test_unknown_template_set_names_the_choices():
    with pytest.raises(ValueError, match="memagent"):
        get_template_set("nope")


def test_chunk_first_prompts_for_one_chunk_share_everything_up_to_the_question():
    chunk = "It was a dark and stormy night."
    a = CHUNK_FIRST.render_update("Who?", NO_MEMORY, chunk)
    b = CHUNK_FIRST.render_update("Where?", "Some notes", chunk)
    shared = a[: a.index("<problem>")]
    assert b.startswith(shared) and shared.endswith(f"<section>\n{chunk}\n</section>\n\n")
    assert CHUNK_FIRST.render_final("Who?", "m") == MEMAGENT.render_final("Who?", "m")
