"""The demo's e-commerce tools over a tiny bundled order table."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from langchain_core.tools import tool
from langgraph.prebuilt import ToolRuntime

from mneme.toolkit.runtime import tool_context


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        resources.files("mneme").joinpath("data/orders.json").read_text("utf-8")
    )
    return data


def _own_order(order_id: str, user_id: str) -> dict[str, Any] | None:
    order = _table()["orders"].get(order_id.strip())
    if order is None or order["user_id"] != user_id:
        return None  # another user's order is "not found", exactly like a missing one
    return {"order_id": order_id.strip(), **{k: v for k, v in order.items() if k != "user_id"}}


def _not_found(order_id: str) -> str:
    return json.dumps(
        {
            "error": "not_found",
            "message": f"No order {order_id} was found for this account.",
            "message_zh": f"没有找到属于您的订单 {order_id}，请核对订单号。",
        },
        ensure_ascii=False,
    )


@tool
def lookup_order(order_id: str, runtime: ToolRuntime[Any, Any]) -> str:
    """Look up the status and courier of one of the current user's orders.

    Args:
        order_id: The order number the user gave (digits).
    """
    ctx = tool_context(runtime)
    order = _own_order(order_id, ctx.user_id)
    return json.dumps(order, ensure_ascii=False) if order else _not_found(order_id)


@tool
def get_return_policy(order_id: str, runtime: ToolRuntime[Any, Any]) -> str:
    """How the current user can return one of their orders.

    Args:
        order_id: The order to return.
    """
    ctx = tool_context(runtime)
    order = _own_order(order_id, ctx.user_id)
    if order is None:
        return _not_found(order_id)
    return json.dumps({**order, **_table()["return_policy"]}, ensure_ascii=False)


SHOP_TOOLS = [lookup_order, get_return_policy]
