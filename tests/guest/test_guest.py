"""reach is a guest in its host's process (reach_core/logs.py, docs/architecture.md "A guest").

With every installed plugin doing ordinary, failing, denied, confirmed and streamed calls
(``guest_scenario.py``, in a fresh interpreter per host), reach must:

* write nothing on the process's stdout or stderr (file descriptors 1 and 2, so a C
  library or a child process inheriting them counts too);
* leave the host's state as it found it: the root logger and every logger that existed
  before (level, handlers, filters), the warnings filters, the environment, ``sys.path``,
  signal handlers, the socket default timeout, the event loop policy, the except hooks,
  structlog's configuration;
* log only on ``reach`` and ``reach.<plugin>`` (a host's level or filter on ``reach``
  reaches every plugin), and never a configured secret, in any of the spellings
  below, with the host's logging at DEBUG;
* keep two configurations' secrets apart (neither masks, nor is masked by, the other's).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

SCENARIO = Path(__file__).with_name("guest_scenario.py")
MODES = ["bare", "configured"]

#: what a run must have done, or the checks below would pass on a scenario that did nothing
EXPECTED_CALLS = {
    "notes": "ok", "note_added": "ok", "file": "ok", "file_missing": "not_found", "sql": "ok", "http": "ok",
    "http_reflect": "execution_failed", "shell": "ok", "webhook": "ok", "weather": "ok",
    "leak": "execution_failed", "leak_other": "execution_failed", "invalid": "invalid_arguments",
    "unknown": "unknown_tool",
    "denied": "denied", "dangerous": "needs_confirmation", "stream": "ok", "run": "model_error",
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = {}
    for mode in MODES:  # bare first: it makes reach-preselect's model copy the other run reuses
        work = tmp_path_factory.mktemp(f"guest-{mode}")
        report = work / "report.json"
        done = subprocess.run([sys.executable, str(SCENARIO), mode, str(work / "w"), str(report)],
                              capture_output=True, text=True, timeout=300, cwd=work)
        assert report.is_file(), f"the scenario failed ({mode}):\n{done.stderr[-4000:]}"
        data = json.loads(report.read_text())
        data["stdout"], data["stderr"] = done.stdout, done.stderr
        out[mode] = data
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_nothing_is_written_on_stdout_or_stderr(reports: dict[str, Any], mode: str, stream: str) -> None:
    assert reports[mode][stream] == ""


@pytest.mark.parametrize("mode", MODES)
def test_the_scenario_did_every_kind_of_call(reports: dict[str, Any], mode: str) -> None:
    report = reports[mode]
    failed = {n: s for n, s in report["plugins"].items() if s not in ("loaded", "blocked")}
    assert not failed, failed
    calls = report["calls"]
    assert {k: calls.get(k) for k in EXPECTED_CALLS} == EXPECTED_CALLS
    assert calls["file_outside"] in ("denied", "invalid_arguments")
    assert calls["selected"] >= 1


# the host state the scenario compares, by key of its snapshot (loggers by name, below)
STATE = ["logging.lastResort", "logging.raiseExceptions", "logging disable level", "logging record factory",
         "logging logger class", "warnings.showwarning", "os.environ", "sys.path",
         "sys.stdout/stderr", "signal handlers", "socket default timeout", "asyncio event loop policy",
         "sys.excepthook", "sys.unraisablehook", "threading.excepthook", "os.getcwd", "sys.getrecursionlimit",
         "sys.getswitchinterval"]


def _without_scenario_env(env: dict[str, str]) -> dict[str, str]:
    """The environment but for the variables the scenario itself sets (the host's config)."""
    return {k: v for k, v in env.items() if not k.startswith("GUEST_")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key", STATE)
def test_host_state_is_left_as_it_was(reports: dict[str, Any], mode: str, key: str) -> None:
    before, after = reports[mode]["before"][key], reports[mode]["after"][key]
    if key == "os.environ":
        before, after = _without_scenario_env(before), _without_scenario_env(after)
    assert after == before


#: what libraries reach depends on add to the warnings filters when they are imported (numpy's
#: "size changed" ignores, urllib3's and requests' categories): their own doing, the same for a
#: host that imports them; anything else added, removed or reordered would be reach's
LIBRARY_FILTERS = re.compile(r"numpy|urllib3\.exceptions|requests\.exceptions")


@pytest.mark.parametrize("mode", MODES)
def test_warnings_filters_gain_only_the_libraries_import_time_ones(reports: dict[str, Any], mode: str) -> None:
    before, after = reports[mode]["before"]["warnings.filters"], reports[mode]["after"]["warnings.filters"]
    assert [f for f in after if f in before] == before  # the host's, all there, in their order
    assert [f for f in after if f not in before and not LIBRARY_FILTERS.search(f)] == []


def test_structlog_configuration_is_the_hosts(reports: dict[str, Any]) -> None:
    report = reports["configured"]
    assert report["after"]["structlog config"] == report["before"]["structlog config"]


@pytest.mark.parametrize("mode", MODES)
def test_every_logger_that_existed_before_is_unchanged(reports: dict[str, Any], mode: str) -> None:
    before, after = reports[mode]["before"], reports[mode]["after"]
    loggers = [k for k in before if k.startswith("logger ")]
    assert "logger <root>" in loggers and (mode == "bare" or "logger sqlglot" in loggers)
    changed = {k: (before[k], after[k]) for k in loggers if after.get(k) != before[k]}
    if mode == "bare":  # the stdlib convention for a library: one NullHandler on its own top logger
        reach_before, reach_after = changed.pop("logger reach", (None, None)) if "logger reach" in changed \
            else (None, None)
        if reach_before is not None:
            assert reach_after[0] == reach_before[0] and reach_after[2] == reach_before[2]
            assert all(h.startswith("<NullHandler") for h in reach_after[1])
    assert not changed, changed


@pytest.mark.parametrize("mode", MODES)
def test_a_new_logger_of_reach_is_under_reach(reports: dict[str, Any], mode: str) -> None:
    """Loggers reach's code created (not a library's) are ``reach`` or ``reach.<...>``."""
    new = [k[len("logger "):] for k in reports[mode]["after"] if k.startswith("logger ")
           and k not in reports[mode]["before"]]
    assert [n for n in new if n.startswith("reach_") or n.startswith("reach-")] == []


def test_every_record_of_reach_code_is_on_a_reach_logger(reports: dict[str, Any]) -> None:
    """A host's level, handler or filter on ``reach`` reaches everything reach logs."""
    records = reports["configured"]["records"]
    ours = [r for r in records if "/reach_" in r["path"].replace("\\", "/")]
    assert ours, "the scenario logged nothing from reach's code"
    assert sorted({r["name"] for r in ours if r["name"] != "reach" and not r["name"].startswith("reach.")}) == []


def _reachs(record: dict[str, Any]) -> bool:
    return record["name"] == "reach" or record["name"].startswith(("reach.", "reach_")) \
        or "/reach_" in record["path"].replace("\\", "/")


# where a configured secret turns up in a record, whatever spelling the message gave it
SPELLINGS = {
    "as is": lambda s: s,
    "url-quoted": lambda s: quote(s, safe=""),
    "url-quoted with +": lambda s: quote_plus(s),
    "in a repr": lambda s: repr(s)[1:-1],
    "upper case": lambda s: s.upper(),
    "json": lambda s: json.dumps(s)[1:-1],
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("which", ["SECRET", "TOKEN", "SERVE_TOKEN"])
def test_no_configured_secret_in_any_log_record(reports: dict[str, Any], which: str, spelling: str) -> None:
    report = reports["configured"]
    secret = SPELLINGS[spelling](report["secrets"][which])
    # reach's records (a library's own, e.g. the MCP SDK's DEBUG line naming the URL it
    # connects to, are that library's: reach cannot mask them without touching its logger)
    leaked = [(r["name"], r["text"][:300]) for r in report["records"] if _reachs(r)
              if secret.lower() in (r["text"] + r["event"]).lower()
              and "not a secret here" not in r["text"]]  # the other Reach's record (see the last test)
    assert leaked == []


# the records the masking check above must have seen, or it proves nothing
@pytest.mark.parametrize(("logger", "event"), [
    ("reach", "reach.connector_exception"),  # the core, with the driver's message and traceback
    ("reach.mcp", "reach.mcp_server_unavailable"),  # its target URL holds the key
    ("reach.notes", "damaged line"),  # its path is a configured secret
    ("reach.loop", "adapter"),  # the failing model adapter's traceback
    ("reach.audit", "audit.call"),  # every call's record, with its arguments
])
def test_the_records_that_could_leak_were_logged(reports: dict[str, Any], logger: str, event: str) -> None:
    records = reports["configured"]["records"]
    assert [r for r in records if r["name"] == logger and event in r["text"]], sorted({r["name"] for r in records})


@pytest.mark.parametrize("check", ["first masks its own", "first masks reach-mcp's table-key token",
                                   "first masks reach-serve's table-key token", "first leaves the other's",
                                   "other masks its own", "other leaves the first's"])
def test_two_configurations_keep_their_secrets_apart(reports: dict[str, Any], check: str) -> None:
    assert reports["configured"]["masking"][check] is True


def test_a_secret_of_another_configuration_is_not_masked_in_this_ones_log(reports: dict[str, Any]) -> None:
    """The second Reach logs the first one's secret as it is: to it, that is ordinary text
    (the first Reach's secrets are not the process's)."""
    report = reports["configured"]
    first = report["secrets"]["SECRET"]
    texts = [r["text"] for r in report["records"] if "not a secret here" in r["text"]]
    assert texts and all(first in t for t in texts), texts


def test_a_secret_of_another_configuration_is_not_masked_in_the_first_ones_log(reports: dict[str, Any]) -> None:
    report = reports["configured"]
    other = report["secrets"]["OTHER"]
    texts = [r["text"] for r in report["records"] if "unrelated text" in r["text"]]
    assert texts and all(other in t for t in texts), texts
