"""The state stores: where budgets, the operation ledger, audit and confirmations live.

``base`` holds what every store offers (:class:`StoreAPI`, migrations); ``sqlite`` the
default single-file store (WAL, one writer thread); ``postgres`` the same API on
PostgreSQL for several instances sharing one state. :func:`open_store` picks one from
``[reach] store``; ``Reach.store`` calls it on first use. The PostgreSQL module (and
psycopg) is imported only when the configured store is PostgreSQL.
"""

from __future__ import annotations

from pathlib import Path

from .base import StoreAPI, StoreClosed, is_postgres_url
from .sqlite import Store

__all__ = ["Store", "StoreAPI", "StoreClosed", "open_store"]


def open_store(uri: str | None, data_dir: str | Path) -> StoreAPI:
    """The store ``[reach] store = uri`` names: a file path, ``sqlite:///path`` or
    ``postgresql://...`` (:class:`reach_core.stores.postgres.PgStore`); ``data_dir/reach.db``
    when ``uri`` is empty. Opening is lazy: nothing touches the disk or the network here."""
    from ..errors import ConfigError

    if not uri:
        return Store(Path(data_dir) / "reach.db")
    if uri.startswith("sqlite:///"):
        return Store(Path(uri[len("sqlite:///"):]))
    if is_postgres_url(uri):
        import importlib.util

        if importlib.util.find_spec("psycopg") is None:
            raise ConfigError(
                "[reach] store is PostgreSQL but psycopg is not installed: pip install \"reach-core[postgres]\""
            )
        from .postgres import PgStore

        return PgStore(uri)
    if "://" in uri:
        from ..redact import mask_userinfo

        raise ConfigError(f"[reach] store = {mask_userinfo(repr(uri))}: use a path, sqlite:///path or "
                          "postgresql://user:pw@host/db")
    return Store(Path(uri))
