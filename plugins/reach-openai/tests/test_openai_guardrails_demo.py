"""``reach demo`` (guard-rails scenario) end to end: the CLI, real local servers, the real SDK.

Each guard rail must show up as one line that says what reach did and why, and
the files in the data dir must agree (a rejected payment never ran, the denied
post never ran). The seed scenario must still run by name.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from reach_core.cli import cli


@pytest.fixture(autouse=True)
def offline_env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def demo(tmp_path: Path, *args: str) -> tuple[str, Path]:
    data = tmp_path / "demo"
    out = CliRunner().invoke(cli, ["demo", *args, "--data-dir", str(data)])
    assert out.exit_code == 0, out.output
    return out.output, data


def step_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if re.match(r"\s+\S+ step \d+ · ", line)]


def one(lines: list[str], *parts: str) -> str:
    found = [line for line in lines if all(p in line for p in parts)]
    assert len(found) == 1, (parts, lines)
    return found[0]


def lines_in_order(text: str, *needles: str) -> None:
    at = -1
    for needle in needles:
        pos = text.find(needle, at + 1)
        assert pos > at, f"{needle!r} missing or out of order"
        at = pos


def check_common_steps(lines: list[str]) -> None:
    # 0. what was offered, and that the denied tool never was (policy holds before the model sees tools)
    offer = one(lines, "step 1", "reach offered")
    assert re.search(r"ranked the 6 tools runner may use against the question and kept 5", offer), offer
    assert "post_to_club: never offered to runner, its policy denies it" in offer
    assert "post_to_club" not in offer.split(":")[0]
    # 1. a bad argument, refused before any request, with what is allowed
    bad = one(lines, "step 1", "get_weather", '"unit":"kelvin"')
    assert bad.startswith("✗") and "refused before any request" in bad
    assert "`unit` must be one of celsius, fahrenheit" in bad
    # 2. resent, corrected from that message
    fixed = one(lines, "step 2", "get_weather", '"unit":"celsius"')
    assert fixed.startswith("✓") and "corrected from reach's message" in fixed and "21 °C" in fixed
    # 3. a tool the agent may not use: denied, with the rule and reach's message
    denied = one(lines, "step 3", "post_to_club")
    assert denied.startswith("⛔") and "denied by policy" in denied
    assert '[agents.runner] deny = ["tag:social"]' in denied
    assert "not available to this agent" in denied
    assert one(lines, "step 3", "append_note").startswith("✓")
    # 5. a flaky upstream: retried because the call is a read
    retry = one(lines, "step 5", "get_weather", "Shanghai")
    assert retry.startswith("↻") and "503" in retry and "retried 1×" in retry
    assert "because get_weather is a read" in retry and "attempt 2 answered" in retry
    # 6. a slow upstream: the deadline passes, the fallback answers
    slow = one(lines, "step 6", "get_forecast", "Shanghai")
    assert slow.startswith("~") and "deadline (timeout)" in slow
    assert "fallback instead: weather is unavailable right now, try later" in slow


def check_audit_and_tokens(text: str, data: Path) -> None:
    head, _, tail = text.partition("reach audit tail -n ")
    assert tail, text
    audit = tail.split("tokens the preselector saved")[0]
    run_id = re.search(r"run (run_[0-9a-f]+)", head).group(1)
    for status in ("invalid_arguments", "denied", "needs_confirmation", "confirm requested"):
        assert status in audit, status
    assert f"run={run_id}" in audit
    assert f"reach --config {data / 'reach.toml'} audit tail" in audit
    tokens = text.split("tokens the preselector saved")[1]
    match = re.search(r"reach-preselect offered (\d+) of the (\d+) tools agent runner may use: "
                      r"([\d,]+) tokens of declarations over 7 requests instead of ([\d,]+); saved ([\d,]+)", tokens)
    assert match, tokens
    offered, allowed, real, full, saved = (int(g.replace(",", "")) for g in match.groups())
    assert offered < allowed and full - real == saved > 0


def test_guardrails_is_the_default_and_approves_with_yes(tmp_path):
    text, data = demo(tmp_path, "--yes")
    assert "reach demo · scenario guardrails · en" in text
    assert "A scripted model is answering" in text
    lines = step_lines(text)
    check_common_steps(lines)
    # 4. the dangerous call waited for a person; --yes approved it and it ran once
    assert "⏸ register_for_race: risk dangerous, so reach-confirm holds the call for a person" in text
    assert "pay 30 EUR from your card to enter the Shanghai 10K; approved: decided by --yes" in text
    paid = one(lines, "step 4", "register_for_race")
    assert paid.startswith("✓") and "a person approved it, so reach ran exactly that call once" in paid
    lines_in_order(text, "step 1 ·", "step 2 ·", "step 3 ·", "⏸ register_for_race", "step 4 ·", "step 5 ·", "step 6 ·",
                   "answer", "reach audit tail", "tokens the preselector saved")
    assert "You are registered for the Shanghai 10K" in text and "Shanghai now: " in text
    assert "Sunday's forecast is unavailable right now" in text
    check_audit_and_tokens(text, data)
    assert "confirm approved" in text and "confirm executed" in text
    registrations = (data / "registrations.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(registrations) == 1 and json.loads(registrations[0])["fee_eur"] == 30
    assert not (data / "club_posts.jsonl").exists()  # the denied post never ran
    assert len((data / "notes.jsonl").read_text(encoding="utf-8").splitlines()) == 1


def test_guardrails_rejects_with_no(tmp_path):
    text, data = demo(tmp_path, "--no")
    lines = step_lines(text)
    check_common_steps(lines)
    assert "rejected: decided by --no" in text
    refused = one(lines, "step 4", "register_for_race")
    assert refused.startswith("✗") and "the person said no (decided by --no), so it never ran" in refused
    assert "a person rejected this action" in refused
    assert "I did not register you for the race" in text
    check_audit_and_tokens(text, data)
    assert "confirm rejected" in text
    assert not (data / "registrations.jsonl").exists()


def test_no_terminal_and_no_flag_rejects_and_says_so(tmp_path):
    text, data = demo(tmp_path)  # CliRunner's stdin is not a terminal
    assert "rejected: no terminal to ask and no --yes/--no, so the safe default" in text
    assert one(step_lines(text), "step 4", "register_for_race").startswith("✗")
    assert not (data / "registrations.jsonl").exists()


def test_guardrails_in_chinese(tmp_path):
    text, data = demo(tmp_path, "--lang", "zh", "--yes")
    lines = step_lines(text)
    one(lines, "step 1", '"city":"北京","unit":"kelvin"')
    one(lines, "step 6", '"city":"上海"')
    assert "北京现在晴，21 °C" in text and "已报名上海 10 公里比赛" in text and "上海现在多云" in text


def test_audit_tail_command_reads_the_run_afterwards(tmp_path):
    text, data = demo(tmp_path, "--no")
    out = CliRunner().invoke(cli, ["--config", str(data / "reach.toml"), "audit", "tail", "-n", "50", "--json"])
    assert out.exit_code == 0, out.output
    records = [json.loads(line) for line in out.output.splitlines() if line.startswith("{")]
    calls = {(r.get("tool"), r.get("status")) for r in records if r.get("kind") == "call"}
    assert {("get_weather", "invalid_arguments"), ("post_to_club", "denied"),
            ("register_for_race", "needs_confirmation"), ("append_note", "ok")} <= calls
    weather = [r for r in records if r.get("tool") == "get_weather" and r.get("kind") == "call"]
    assert [(r["status"], r.get("attempts")) for r in weather] == [("invalid_arguments", 0), ("ok", 1), ("ok", 2)]
    forecast = [r for r in records if r.get("tool") == "get_forecast" and r.get("kind") == "call"]
    assert len(forecast) == 1 and forecast[0].get("fallback")


def test_guardrails_json(tmp_path):
    out = CliRunner().invoke(cli, ["demo", "--json", "--no", "--data-dir", str(tmp_path / "d")])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["scenario"] == "guardrails" and data["model"]["scripted"] is True
    assert data["run"]["outcome"] == "answered"
    assert data["decisions"][0]["approved"] is False and data["decisions"][0]["how"] == "decided by --no"
    codes = [(r["name"], (r["error"] or {}).get("code")) for r in data["run"]["steps"][0]["results"]]
    assert codes == [("get_weather", "invalid_arguments")]
    assert len(data["notes"]) == 1 and data["audit_records"] > 10


def test_seed_scenario_still_runs_by_name(tmp_path):
    text, data = demo(tmp_path, "--scenario", "run")
    assert "reach demo · scenario run · en" in text
    for part in ("tools offered", "get_weather", "append_note", "in parallel", "21 °C", "Yes, today is good for a run"):
        assert part in text
    assert "reach audit tail" not in text  # the seed scenario is the plain happy path
    assert len((data / "notes.jsonl").read_text(encoding="utf-8").splitlines()) == 1


def test_guardrails_by_name_stays_scripted_with_an_api_key(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")
    text, data = demo(tmp_path, "--scenario", "guardrails", "--no")
    assert "A scripted model is answering" in text and "reach demo · scenario guardrails" in text
    assert one(step_lines(text), "step 3", "post_to_club").startswith("⛔")


@pytest.mark.parametrize("module, plugin", [("reach_confirm", "reach-confirm"), ("reach_audit", "reach-audit")])
def test_a_missing_plugin_reads_as_a_sentence(tmp_path, monkeypatch, module, plugin):
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    out = CliRunner().invoke(cli, ["demo", "--no", "--data-dir", str(tmp_path / "d")])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert f"({plugin} is missing)" in out.output and "reach demo --scenario run" in out.output


def test_guardrails_needs_the_scripted_model(tmp_path):
    out = CliRunner().invoke(cli, ["demo", "--scenario", "guardrails", "--base-url", "http://127.0.0.1:9/v1"])
    assert out.exit_code != 0 and "with a real model use --scenario run" in out.output


def test_without_reach_preselect_every_allowed_tool_is_offered(tmp_path, monkeypatch):
    from reach_openai import guardrails

    monkeypatch.setattr(guardrails, "_selector_plugin", lambda: None)
    text, data = demo(tmp_path, "--no")
    offer = one(step_lines(text), "step 1", "reach offered all 6 tools runner may use")
    assert "post_to_club: never offered to runner" in offer
    assert "no selector installed: all 6 tools were sent with each of 7 requests" in text
    assert one(step_lines(text), "step 3", "post_to_club", "denied by policy").startswith("⛔")


def test_without_a_selector_the_tokens_line_says_so(monkeypatch):
    from reach_openai import guardrails

    monkeypatch.setattr(guardrails, "_selector_plugin", lambda: None)
    tools = [{"type": "function", "function": {"name": f"t{i}", "description": "x" * 40}} for i in range(3)]
    line, how = guardrails.declaration_tokens(tools, [tools, tools])
    assert line.startswith("no selector installed: all 3 tools were sent with each of 2 requests")
    assert "pip install reach-preselect" in line and how


def test_the_prompt_asks_a_person_on_a_terminal(tmp_path):
    """In a real terminal the demo asks; answering y approves the payment."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["NO_COLOR"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "reach_core.cli", "demo", "--data-dir", str(tmp_path / "d")],
        stdin=slave, stdout=slave, stderr=slave, close_fds=True, env=env,
    )
    os.close(slave)
    seen, answered, ends = b"", False, time.monotonic() + 120
    try:
        while time.monotonic() < ends:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
                if not answered and b"Approve?" in seen:
                    os.write(master, b"y\n")
                    answered = True
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    text = re.sub(r"\x1b\[[0-9;]*m", "", seen.decode("utf-8", "replace"))
    assert answered, text
    assert proc.returncode == 0, text
    assert "reach-confirm holds the call for a person" in text
    assert "a person approved it, so reach ran exactly that call once" in text
    assert "confirm approved" in text and "by=person:you" in text
    assert len((tmp_path / "d" / "registrations.jsonl").read_text(encoding="utf-8").splitlines()) == 1
