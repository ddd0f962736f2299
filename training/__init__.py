"""RL training of the memory agent (multi-conversation GRPO/DAPO, see ../shared/DESIGN.md).

Arrives with the training issue; it will import only `inference`.
"""
