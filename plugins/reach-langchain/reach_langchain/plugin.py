"""Entry point of reach-langchain (group ``reach``).

One hook: a call a person approved through a LangGraph interrupt (see
``reach_langchain.approval``) counts as approved in reach's pipeline. It runs
before confirmer plugins (priority 40) so they see ``ctx.approved``. Every
other call goes through the pipeline and the other plugins' hooks as it is.
Loading the plugin also gives ``Reach`` its ``as_langchain_tools`` method.
"""

from __future__ import annotations

from typing import Any

from reach_core import hookimpl

from .approval import is_approved
from .methods import install

REACH_HOOK_PRIORITY = {"reach_pre_invoke": 40}

install()


@hookimpl
def reach_pre_invoke(call: Any, tool: Any, ctx: Any) -> None:
    if ctx.needs_confirmation and tool is not None and is_approved(tool.name, ctx.call_id):
        ctx.approved = True
        ctx.confirm_reason = "approved through a LangGraph interrupt"
