"""The sentence encoder of the extractive memory's scorer (inference/sentence_encoder.py): the real packaged model."""

from __future__ import annotations

import numpy as np

from inference.capture import LexicalScorer
from inference.sentence_encoder import DIM, SentenceEncoder

QUESTION = "Which state's law governs this agreement?"
ANSWER = "This contract shall be construed in accordance with the laws of New York."
LOOK_ALIKE = "The state of the goods on delivery is the Buyer's concern under this agreement."


def test_a_question_is_nearest_the_sentence_that_answers_it_whatever_words_they_share():
    encoder = SentenceEncoder.shipped()
    q, s = encoder.encode([QUESTION]), encoder.encode([ANSWER, LOOK_ALIKE, "Rain fell on the roof."])
    assert q.shape == (1, DIM) and np.allclose(np.linalg.norm(s, axis=1), 1.0, atol=1e-4)
    cosine = (q @ s.T)[0]
    assert cosine[0] > cosine[1] > cosine[2]
    lexical = LexicalScorer().score([ANSWER, LOOK_ALIKE], [QUESTION])[0]
    assert lexical[1] > lexical[0]  # word overlap prefers the look-alike


def test_embeddings_do_not_depend_on_the_batch_they_come_in():
    """A sentence is padded with others in a batch and cached by text: its embedding must not move with either."""
    alone = SentenceEncoder().encode([ANSWER])
    crowd = SentenceEncoder().encode([LOOK_ALIKE * 3, ANSWER, "Short."])
    assert np.allclose(alone[0], crowd[1], atol=1e-5)
