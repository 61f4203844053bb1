"""Memory-poisoning guard: statements that try to instruct the agent are not stored as facts."""

from __future__ import annotations

import re

_PATTERNS = [
    r"(记住|记得|请记录)?.{0,6}我(是|为)(你的)?(管理员|超级用户|开发者|系统管理员|admin|root|owner|老板)",
    r"(忽略|无视|忘记|跳过).{0,8}(所有|一切|之前|以上|全部)?.{0,4}(规则|指令|限制|提示|设定|安全)",
    r"(以后|从现在起|今后).{0,10}(不要|不必|无需).{0,6}(遵守|遵循|检查|验证)",
    r"(授予|给予|赋予|开通).{0,8}(我|本用户).{0,8}(权限|管理员|特权)",
    r"\b(remember|note|record|store)\b.{0,20}\bI\s*(am|'m)\s*(the|an|a|your)?\s*(admin|administrator|root|superuser|developer|owner|operator)\b",
    r"\bignore\b.{0,20}\b(previous|prior|all|above|earlier|your)\b.{0,20}\b(instructions?|rules?|prompts?|guidelines?)\b",
    r"\b(system prompt|developer mode|jailbreak)\b",
    r"\b(grant|give)\b.{0,10}\b(me|this user)\b.{0,20}\b(admin|root|full access|permissions?|privileges?)\b",
    r"\bfrom now on\b.{0,30}\b(do not|don't|never)\b.{0,20}\b(check|verify|follow|obey)\b",
]
_RE = [re.compile(p, re.I) for p in _PATTERNS]


def poisoning_reason(text: str) -> str | None:
    """Tell why a text looks like an attempt to instruct the agent or grant rights.

    Args:
        text: A candidate memory or the user message it came from.

    Returns:
        A short reason, or None when the text is an ordinary statement.
    """
    for rx in _RE:
        if m := rx.search(text):
            return f"looks like an instruction to the agent, not a fact about the user: {m.group(0)!r}"
    return None
