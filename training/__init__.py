"""Training the memory agent: an SFT warm start on oracle memories, then multi-conversation GRPO/DAPO on
tasks with gold answers (synthetic facts, contracts, users' feedback), and the held-out evaluation.

Imports only `inference` (tests/unit/test_layers.py checks it).
"""
