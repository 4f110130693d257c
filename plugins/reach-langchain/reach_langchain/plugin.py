"""Entry point of reach-langchain (group ``reach``).

The bridge adds no hook: a LangChain tool made by :func:`reach_langchain.as_langchain_tools`
calls ``reach.invoke``, so the pipeline and every other plugin's hooks apply
as they are. Loading the plugin gives ``Reach`` its ``as_langchain_tools`` method.
"""

from __future__ import annotations

from .methods import install

install()
