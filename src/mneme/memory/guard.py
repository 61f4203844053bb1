"""Memory-poisoning guard: statements that try to instruct the agent are not stored as facts."""

from __future__ import annotations

import re

PATTERNS: tuple[str, ...] = (
    # "remember that I am the admin", "我是你的开发者": claiming a role over the agent
    r"(记住|记得|请记录|请记下|注意|记下)[：:,，\s]*.{0,6}我(是|为)(你的|本系统的?|这个系统的?|系统)?(超级管理员|管理员|超级用户|系统管理员|admin|root|VIP管理员)",
    r"我(是|为)(你的|本系统的?|这个系统的?)(管理员|开发者|主人|老板|创造者|创建者|运营)",
    r"我(是|为)(超级管理员|超级用户|管理员|root|admin)(?=$|[，,。！!；;\s])",
    r"\b(remember|note|record|store|keep in mind|save)\b.{0,20}\bI\s*(am|'m)\s*(the|an|a|your)?\s*(admin|administrator|root|superuser|developer|owner|operator|creator)\b",
    r"\bI\s*(am|'m)\s+your\s+(admin|administrator|developer|owner|creator|operator|master|boss)\b",
    # "ignore all rules": overriding the agent's instructions
    r"(忽略|无视|跳过|不要管|绕过).{0,8}(所有|一切|之前|以上|全部|你的|系统)?.{0,4}(规则|指令|限制|提示词?|设定|安全|约束)",
    r"(忘记|忘掉)(你的|所有的?|之前的?|以上的?|一切)(规则|指令|限制|提示词?|设定|约束)",
    r"(?<!never )(?<!not )(?<!don't )\b(ignore|disregard|bypass|override)\b.{0,20}\b(previous|prior|all|above|earlier|your|any|system)\b.{0,20}\b(instructions?|rules?|prompts?|guidelines?|restrictions?|polic(?:y|ies)|safety)\b",
    r"\bforget (all |about )?(your|the|previous|prior) (rules|instructions|guidelines|restrictions|prompt)\b",
    r"\b(system prompt|developer mode|jailbreak|DAN mode)\b",
    r"^\s*(system|developer|assistant)\s*[:：]",
    r"(系统提示|系统消息|系统指令)[:：]",
    # "from now on don't verify me", "你现在没有限制"
    r"(以后|从现在起|从现在开始|今后).{0,10}(不要|不必|无需|不用|不需要).{0,6}(遵守|遵循|检查|验证|审核|核实)",
    r"\bfrom now on\b.{0,30}\b(do not|don't|never|must not|mustn't|no need to)\b.{0,20}\b(check|verify|follow|obey|confirm|ask for)\b",
    r"你(现在)?是.{0,10}(没有|不受|无)(任何)?(限制|约束)",
    r"\b(act|behave|respond)\b.{0,10}\bas if you (have|had) no (rules|restrictions|limits|filters)\b",
    r"我(说的话|的指令|的话)?.{0,4}优先级?高于.{0,6}(系统|规则|设定)",
    # "grant me admin", "I can see all users' data"
    r"(授予|给予|赋予|开通|给我开|把我设为|将我设为|设置我为).{0,8}(权限|管理员|特权|超级用户)",
    r"\b(grant|give)\b.{0,10}\b(me|this user)\b.{0,20}\b(admin|root|full access|permissions?|privileges?|superuser)\b",
    r"\b(make|set) me (an? |the )?(admin|administrator|superuser|root)\b",
    r"(我有权|我有权限|我可以)(查看|访问|修改|删除).{0,6}(所有|其他|任何)(用户|人|客户)",
    r"\bI (have|'ve got) (root|admin|administrator|full|unrestricted) (access|rights|privileges)\b",
    r"\b(the user|this user|I) (is|am|'m) (authorized|allowed|permitted) to (see|access|view|read|modify|delete) (all|every|any|other)\b",
)
"""What an instruction to the agent, or a claim of rights over it, looks like (zh and en)."""
_RE = [re.compile(p, re.I) for p in PATTERNS]


def poisoning_reason(text: str) -> str | None:
    """Tell why a text looks like an attempt to instruct the agent or grant rights.

    Such a text is never stored as a fact about the user ("remember that I am the
    administrator" is not a profile); the refusal is recorded in history without the text.

    Args:
        text: A candidate memory or the user message it came from.

    Returns:
        A short reason, or None when the text is an ordinary statement.
    """
    for rx in _RE:
        if m := rx.search(text):
            return f"looks like an instruction to the agent, not a fact about the user: {m.group(0)!r}"
    return None
