import dataclasses
import re

import pytest

from inference.agent import AgentConfig, MemoryAgent, extract_boxed, memory_of
from inference.contract_review import first_yes_no
from inference.templates import MEMAGENT, NO_EVIDENCE_MEMORY, NO_MEMORY, NOT_IN_DOCUMENT, NOT_IN_DOCUMENT_NO
from tests.fakes import FakeEngine

TEXT = " ".join(f"word{i}" for i in range(300))


def _section(prompt: str) -> str:
    return re.search(r"<section>\n(.*)\n</section>", prompt, re.S).group(1)


def _memory(prompt: str) -> str:
    return re.search(r"<memory>\n(.*)\n</memory>", prompt, re.S).group(1)


def scripted(prompt: str) -> str:
    """Memory after a chunk = 'seen <last word of the section>'; the answer boxes the memory."""
    if "<section>" in prompt:
        return f"seen {_section(prompt).split()[-1]}"
    return f"I think \\boxed{{{_memory(prompt)}}}."


def test_memory_is_passed_forward_and_the_answer_comes_from_the_last_memory(tokenizer):
    engine = FakeEngine(tokenizer, scripted)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=50, memory_tokens=20, answer_tokens=10))
    chunks = agent.chunks(TEXT)
    assert len(chunks) > 3

    (trajectory,) = agent.read_batch([("Which word came last?", TEXT)])
    answer = trajectory.answer

    update_calls, final_call = engine.calls[:-1], engine.calls[-1]
    assert len(update_calls) == len(chunks)
    first_prompt = update_calls[0][0][0]
    assert first_prompt == MEMAGENT.render_update("Which word came last?", NO_MEMORY, chunks[0].text(TEXT))
    for k in range(1, len(chunks)):
        prompt = update_calls[k][0][0]
        assert _memory(prompt) == f"seen {chunks[k - 1].text(TEXT).split()[-1]}"
        assert _section(prompt) == chunks[k].text(TEXT)
    assert all(max_tokens == 20 for _, max_tokens in update_calls)
    last_memory = f"seen {TEXT.split()[-1]}"
    assert final_call == ([MEMAGENT.render_final("Which word came last?", last_memory)], 10)
    assert answer.answer == last_memory
    assert answer.output == f"I think \\boxed{{{last_memory}}}."


def test_many_questions_share_one_engine_call_per_chunk(tokenizer):
    engine = FakeEngine(tokenizer, scripted)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=100, memory_tokens=20, answer_tokens=10))
    trajectories = agent.read_batch([(q, TEXT) for q in ("q1", "q2", "q3")])
    assert len(engine.calls) == len(agent.chunks(TEXT)) + 1
    assert all(len(messages) == 3 for messages, _ in engine.calls)
    assert [t.answer.answer for t in trajectories] == [f"seen {TEXT.split()[-1]}"] * 3


def test_a_reading_that_found_nothing_answers_so_without_asking_the_model(tokenizer):
    engine = FakeEngine(tokenizer, scripted)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=100, memory_tokens=20, answer_tokens=10))
    answers = agent.answer([("q1", "seen 7"), ("q2", NO_EVIDENCE_MEMORY + "\n"), ("q3", None), ("q4", "seen 9")])
    assert [a.answer for a in answers] == ["seen 7", NOT_IN_DOCUMENT, NO_MEMORY, "seen 9"]
    assert answers[1].output == f"\\boxed{{{NOT_IN_DOCUMENT}}}" and answers[1].completion.completion_tokens == 0
    ((messages, _),) = engine.calls  # one call, without the empty memory's prompt
    assert [_memory(m) for m in messages] == ["seen 7", NO_MEMORY, "seen 9"]
    assert all(a.completion.completion_tokens > 0 for a in (answers[0], answers[2], answers[3]))
    engine.calls.clear()
    assert [a.answer for a in agent.answer([("q", NO_EVIDENCE_MEMORY)])] == [NOT_IN_DOCUMENT] and not engine.calls


def test_the_empty_memory_written_in_other_case_or_spacing_still_holds_nothing(tokenizer):
    # Sampled at T 1.0 the reader wrote "No Relevant Information Yet."; asked, the model answered a clause
    # question "Yes." from it (run grpo-real, step 6).
    engine = FakeEngine(tokenizer, scripted)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=100, memory_tokens=20, answer_tokens=10))
    memories = ["No Relevant Information Yet.", " no relevant  information yet", "No relevant information yet. Code 4"]
    answers = agent.answer([("Which code?", m) for m in memories])
    assert [a.answer for a in answers[:2]] == [NOT_IN_DOCUMENT, NOT_IN_DOCUMENT]
    assert answers[2].answer == memories[2]  # evidence after the phrase is not nothing
    ((messages, _),) = engine.calls
    assert len(messages) == 1


def test_a_yes_no_question_that_found_nothing_is_answered_no(tokenizer):
    # "Does it contain a non-compete?" read to the end with nothing found: the clause is not there, and the
    # answer says so with "No" first (what the strict verifier and the review's Yes/No filter read).
    engine = FakeEngine(tokenizer, scripted)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=100, memory_tokens=20, answer_tokens=10))
    questions = [
        "Does this agreement contain a clause on non-compete? Answer yes or no.",
        "Is it assignable?",
        "Who are the parties?",
    ]
    answers = agent.answer([(q, NO_EVIDENCE_MEMORY) for q in questions])
    assert [a.answer for a in answers] == [NOT_IN_DOCUMENT_NO, NOT_IN_DOCUMENT_NO, NOT_IN_DOCUMENT]
    assert first_yes_no(answers[0].answer) == "no" and not engine.calls


def test_a_date_the_final_memory_does_not_hold_is_not_answered(tokenizer):
    # The shipped reader answered "12/15/18" to 6 of 42 dev contract questions whose memories held no date.
    engine = FakeEngine(tokenizer, lambda p: "\\boxed{12/15/18}" if "basis" in p else "It is \\boxed{10/30/17}.")
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=100, memory_tokens=20, answer_tokens=10))
    items = [
        ("When was it made?", "This Agreement forms the basis for a working relationship."),
        ("When was it made?", "Signed on October 30, 2017 by both parties."),
        ("Does it renew? Answer yes or no.", "This Agreement forms the basis of what renews."),
    ]
    answers = agent.answer(items)
    assert [a.answer for a in answers] == [NOT_IN_DOCUMENT, "10/30/17", NOT_IN_DOCUMENT_NO]
    assert answers[0].output == "\\boxed{12/15/18}"  # what the model wrote stays to be inspected


def test_answer_without_box_falls_back_to_the_whole_output(tokenizer):
    engine = FakeEngine(tokenizer, lambda p: "  Geneva  ")
    (answer,) = MemoryAgent(engine, AgentConfig(chunk_tokens=1000)).answer([("Where?", None)])
    assert answer.answer == "Geneva"
    assert NO_MEMORY in engine.calls[0][0][0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is \\boxed{New York}.", "New York"),
        ("\\boxed{a} then \\boxed{ b }", "b"),
        ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{done} and \\boxed{unclosed", "done"),
        ("no box here", None),
        ("\\boxed{}", ""),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


def test_config_rejects_nonsense():
    with pytest.raises(ValueError, match="chunk_tokens"):
        AgentConfig(chunk_tokens=0)
    with pytest.raises(ValueError, match="template"):
        AgentConfig(template_set="other")


def test_memory_of_keeps_each_line_once_and_blank_lines():
    assert (
        memory_of("The code is 42.\nThe code is 42. \n\nDogs bark.\nThe code is 42.") == "The code is 42.\n\nDogs bark."
    )
    assert memory_of("A.\nB.") == "A.\nB."


def test_a_repeated_line_is_not_passed_to_the_next_chunk(tokenizer):
    def doubling(prompt: str) -> str:  # writes its memory's lines twice, as the small reader did
        if "<section>" in prompt:
            return "fact" if _memory(prompt) == NO_MEMORY else _memory(prompt) + "\n" + _memory(prompt)
        return f"\\boxed{{{_memory(prompt)}}}"

    engine = FakeEngine(tokenizer, doubling)
    agent = MemoryAgent(engine, AgentConfig(chunk_tokens=50, memory_tokens=20, answer_tokens=10))
    (trajectory,) = agent.read_batch([("q", TEXT)])
    assert [_memory(calls[0][0]) for calls in engine.calls[1:]] == ["fact"] * (len(agent.chunks(TEXT)))
    assert trajectory.answer.answer == "fact"
    assert trajectory.memories == ["fact"] * len(agent.chunks(TEXT))
    # what the runner checkpoints: the memory, with the tokens that were generated for it
    item = ("q", "fact", "some chunk")
    (raw,) = engine.generate(agent.update_messages([item]), 20)
    (rewrite,) = agent.update([item])
    assert raw.text == "fact\nfact" and rewrite == dataclasses.replace(raw, text="fact")


def test_memory_of_keeps_a_looping_phrase_once_and_leaves_runs_of_digits():
    looped = "It is in the kitchen of the old, worn-out, and very eccentric" + ", and very eccentric" * 5 + ", and ve"
    assert memory_of(looped) == "It is in the kitchen of the old, worn-out, and very eccentric"
    assert (
        memory_of("Code A is 12.\nB, and so on, and so on, and so on. Then C.")
        == "Code A is 12.\nB, and so on. Then C."
    )
    assert memory_of("The vault code is 000000000000000000000000.") == "The vault code is 000000000000000000000000."
    assert memory_of("Twice is no loop, Twice is no loop, fine.") == "Twice is no loop, Twice is no loop, fine."
