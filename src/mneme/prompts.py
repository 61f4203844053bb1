"""Prompts and fixed texts, kept as data so they can be read, tested and replaced."""

from __future__ import annotations

SYSTEM_PROMPT = (
    "You are a helpful assistant with a memory. You remember what users told you in earlier "
    "sessions through the background notes below; use them when they help, ignore them when "
    "they do not, and never reveal one user's information to another.\n"
    "Reply in the user's language. Current time: {time}."
)
"""The pinned system prompt; `{time}` is filled at every turn."""

MEMORY_BLOCK = (
    "<memories>\n"
    "Background notes from long-term memory about the people in this conversation. "
    "They may be irrelevant to the request; ignore them if so.\n"
    "{memories}\n"
    "</memories>"
)
"""How retrieved long-term memories are shown to the model."""

SUMMARY_BLOCK = "<summary>\nSummary of the earlier part of this conversation:\n{summary}\n</summary>"
"""How the running summary of older turns is shown to the model."""

TASK_BLOCK = "<task_state>\n{task}\n</task_state>"
"""How the structured task state (intent, slots, pending action) is shown to the model."""

SUMMARIZE_PROMPT = (
    "Fold the conversation excerpt below into the running summary. Keep every name, number, "
    "id, date, amount, address and decision; drop pleasantries. Write in the language of the "
    "conversation, at most {max_words} words.\n\n"
    "Running summary so far:\n{summary}\n\nExcerpt:\n{excerpt}\n\nNew running summary:"
)
"""Prompt of the LLM summarizer."""

TRUNCATION_MARKER = "\n[... {omitted} characters omitted by mneme to fit the context budget ...]\n"
"""Inserted where an over-long message was shortened."""
