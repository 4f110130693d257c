"""The two tools the guard-rails demo adds to reach-weather and reach-notes.

They exist to meet reach's policy: ``post_to_club`` is a plain write that the
demo's agent is not allowed to use, ``register_for_race`` spends money and is
declared ``dangerous``, so it waits for a person. Both write real files in the
demo's data directory, so what ran (and what did not) can be checked afterwards.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

from reach_core import Connector, InvalidArguments

#: The races the demo can register for (a real service would look them up).
RACES = {"Shanghai 10K": {"date": "Sunday", "fee_eur": 30}}


def _append(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")


class PostToClub(Connector):
    name = "post_to_club"
    description = (
        "Post a message to the user's running club group chat, seen by every member. "
        "Use it to share a training plan or invite others to a run."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "message": {"type": "string", "minLength": 1, "maxLength": 500, "description": "The text to post."}
        },
        "required": ["message"],
        "additionalProperties": False,
    }
    risk = "write"
    tags = ("social",)

    def __init__(self, data_dir: Path) -> None:
        self.file = Path(data_dir) / "club_posts.jsonl"

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        _append(self.file, {"message": params["message"], "ts": time.time()})
        return {"posted": True}


class RegisterForRace(Connector):
    name = "register_for_race"
    description = (
        "Register the user for a running race and pay the entry fee with their saved card. "
        "Races: 'Shanghai 10K' (Sunday, 30 EUR)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "race": {"type": "string", "description": "The race's name, e.g. 'Shanghai 10K'."},
            "fee_eur": {"type": "integer", "minimum": 0, "maximum": 500, "description": "The entry fee in euros."},
        },
        "required": ["race", "fee_eur"],
        "additionalProperties": False,
    }
    risk = "dangerous"  # it spends the user's money: a person decides
    tags = ("payments",)

    def __init__(self, data_dir: Path) -> None:
        self.file = Path(data_dir) / "registrations.jsonl"

    def summarize(self, params: dict[str, Any]) -> str:
        """The line a person approves or rejects."""
        return f"pay {params.get('fee_eur')} EUR from your card to enter the {params.get('race')}"

    async def execute(self, params: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        race = RACES.get(params["race"])
        if race is None:
            raise InvalidArguments("race", f"one of {', '.join(RACES)}", next(iter(RACES)))
        if params["fee_eur"] != race["fee_eur"]:
            raise InvalidArguments("fee_eur", f"the race's fee, {race['fee_eur']}", race["fee_eur"])
        receipt = "rg_" + secrets.token_hex(4)
        _append(self.file, {"race": params["race"], "fee_eur": params["fee_eur"], "receipt": receipt,
                            "idempotency_key": getattr(ctx, "idempotency_key", None), "ts": time.time()})
        return {"registered": True, "race": params["race"], "date": race["date"],
                "charged": f"{params['fee_eur']} EUR", "receipt": receipt}
