"""``reach_core.logs.configure_stderr_on_import``: the CLI's logging set-up, done when
``logging`` is first imported, leaves logging exactly as ``configure_stderr`` would."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SETUP = {
    "up front": "from reach_core.logs import configure_stderr as setup\n",
    "on import": "from reach_core.logs import configure_stderr_on_import as setup\n",
}

USES = {
    "warning": 'import logging\nlogging.getLogger("reach.x").warning("w %s", 1)\n',
    "below the level": 'import logging\nlogging.getLogger("reach.x").info("i")\n',
    "exception": ('import logging\ntry:\n    {}["k"]\nexcept KeyError:\n'
                  '    logging.getLogger("reach").exception("failed")\n'),
    "other logger": 'import logging\nlogging.getLogger("other").warning("o")\n',
    "submodule first": 'import logging.handlers\nlogging.getLogger("reach.x").error("e")\n',
    "from-import": 'from logging import getLogger\ngetLogger("reach.deep.child").warning("c")\n',
    "importlib": 'import importlib\nimportlib.import_module("logging").getLogger("reach.x").warning("m")\n',
    "__import__": '__import__("logging").getLogger("reach.x").critical("c")\n',
    "structlog": 'from reach_core.logs import get_logger\nget_logger("reach.x").warning("s", k="v w")\n',
    "handlers kept": ('import logging\nh = logging.getLogger("reach").handlers\n'
                      'print(len(h), [type(x).__name__ for x in h], logging.getLogger("reach").level)\n'),
    "reloaded": ('import importlib, logging\nimportlib.reload(logging)\n'
                 'logging.getLogger("reach.x").warning("after reload")\n'
                 'print(len(logging.getLogger("reach").handlers))\n'),
    "source for tracebacks": 'import inspect, logging\nprint(len(inspect.getsource(logging)) > 1000)\n',
    "finder gone": 'import logging, sys\nprint([type(f).__name__ for f in sys.meta_path])\n',
    "never imported": 'print("no logging")\n',
}


def _run(setup: str, level: str, json_lines: bool, use: str) -> tuple[int, str, str]:
    code = SETUP[setup] + f"setup({level}, json_lines={json_lines})\n" + textwrap.dedent(USES[use])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return out.returncode, out.stdout, out.stderr


@pytest.mark.parametrize("use", list(USES))
@pytest.mark.parametrize(("level", "json_lines"), [("30", False), ("'info'", False), ("10", True), ("'ERROR'", True)])
def test_same_as_configuring_up_front(use, level, json_lines):
    """Fails before ``configure_stderr_on_import`` existed (the import fails)."""
    early = _run("up front", level, json_lines, use)
    late = _run("on import", level, json_lines, use)
    assert early[0] == 0, early[2]
    assert late == early


def test_already_imported_configures_at_once():
    code = ("import logging\nfrom reach_core.logs import configure_stderr_on_import\n"
            "configure_stderr_on_import(30)\nimport sys\n"
            "print(len(logging.getLogger('reach').handlers), "
            "[type(f).__name__ for f in sys.meta_path if type(f).__name__ == '_AfterImport'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "1 []"


def test_waits_for_logging_without_importing_it():
    code = ("import sys\nfrom reach_core.logs import configure_stderr_on_import\n"
            "configure_stderr_on_import(30)\nimport json, re\n"
            "print('logging' in sys.modules, [type(f).__name__ for f in sys.meta_path][:1])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False ['_AfterImport']"
