"""Provenance logic: sentences, where a sentence entered the memory (tolerant of rewording), and the
passage of a chunk that matches it."""

from __future__ import annotations

from app.services.provenance import best_passage, entered_at, sentences


def _texts(text: str) -> list[str]:
    return [text[a:b] for a, b in sentences(text)]


def test_sentences_split_at_ends_and_line_breaks():
    assert _texts("The key hangs behind the barometer. The boat comes monthly!\n- flour; oil\n\n") == [
        "The key hangs behind the barometer.", "The boat comes monthly!", "- flour;", "oil"]  # fmt: skip
    assert _texts("") == [] and _texts("   ") == []
    assert _texts("no end") == ["no end"]


def test_a_sentence_entered_where_it_appeared_and_stayed_even_reworded():
    memories = [
        "No facts yet.",
        "Mara keeps the lighthouse.",
        "Mara keeps the lighthouse. The spare key hangs behind the barometer.",
        "Mara keeps the light. The spare key is hanging behind the barometer. Boat on Mondays.",
    ]
    assert entered_at("The spare key hangs behind the barometer.", memories) == 3
    assert entered_at("Boat on Mondays.", memories) == 4
    assert entered_at("Mara keeps the lighthouse.", memories) == 2  # "the light" at step 4: a small rewording
    assert entered_at("Mara keeps a lamp house.", memories) is None  # 2 of 5 words: not the same sentence
    assert entered_at("The ship sank.", memories) is None
    # dropped and written again: it counts from where it came back
    assert entered_at("key", ["key here.", "nothing.", "key again."]) == 3


def test_the_best_passage_of_a_chunk():
    text = "Ships passed far out. The spare key to the lamp room hangs behind the barometer. A storm came."
    a, b, score = best_passage("spare key behind the barometer", text, 0, len(text))
    assert text[a:b] == "The spare key to the lamp room hangs behind the barometer." and score == 1.0
    assert best_passage("nothing alike", text, 0, len(text))[2] == 0.0
    # a chunk that starts inside the sentence still points at the whole sentence
    cut = text.index("barometer")
    a, b, score = best_passage("spare key behind the barometer", text, cut, len(text))
    assert text[a:b].startswith("The spare key") and score == 1.0
    # sentences outside the chunk are not candidates
    assert best_passage("spare key behind the barometer", text, text.index("A storm"), len(text))[2] == 0.0
