"""The memory agent and its LLM engines. Knows nothing of the database or the web."""
