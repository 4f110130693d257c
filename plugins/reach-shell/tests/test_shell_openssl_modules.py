"""Red-team family: openssl loading code the agent wrote (engines, providers, config modules).

`openssl` looks harmless (hashes, keys, certificates), but several of its options load a shared
library: `-engine`, `-keygen_engine`, `-ssl_client_engine` (an engine id may be a path: the
dynamic engine dlopens it), `-provider` (a path, or a name found in `-provider-path`), and
`-config`, whose `providers`/`engines` sections name `module = …` and `dynamic_path = …`. The
`openssl engine` subcommand loads the engines named in its arguments. A library in the root
(written by `tar -x`, `cp`, or another tool) ran its constructor: arbitrary code, whatever the
path check said (the library lies inside the root).

A real `evil.so` (built with the system's C compiler) writes a marker when loaded. Every call
below loaded it before the fix (the controls run each one without reach and see the marker);
now each is refused and leaves no marker, while ordinary openssl calls still run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from reach_shell import RunCommand, ShellSettings
from shell_attack import SECRET, exists

from reach_core import InvalidArguments

_SEARCH = "/usr/local/bin:/usr/bin:/bin"
_SOURCE = r"""
#include <stdio.h>
__attribute__((constructor)) static void loaded(void) {
    FILE *f = fopen("%s", "w");
    if (f) { fputs("loaded\n", f); fclose(f); }
}
int bind_engine(void *e, const char *id, const void *fns) { return 0; }
unsigned long v_check(unsigned long v) { return v; }
int OSSL_provider_init(const void *h, const void *in, const void **out, void **ctx) { return 0; }
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a shared library that writes the marker when loaded, the marker's path)."""
    if shutil.which("openssl", path=_SEARCH) is None:
        pytest.fail("openssl is not installed on this machine")
    compiler = shutil.which("cc", path=_SEARCH) or shutil.which("gcc", path=_SEARCH)
    if compiler is None:
        pytest.fail("no C compiler (cc/gcc) on this machine to build the test library")
    where = tmp_path_factory.mktemp("openssl-lib")
    mark = where / "MARK"
    (where / "evil.c").write_text(_SOURCE % mark)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(where / "evil.so"), str(where / "evil.c")], check=True)
    return where / "evil.so", mark


@pytest.fixture
def armed(root: Path, library: tuple[Path, Path]) -> Path:
    """The root holding `evil.so`, `evilprov.so`, a key and two configs that load the library; the marker
    path (cleared)."""
    so, mark = library
    mark.unlink(missing_ok=True)
    shutil.copy(so, root / "evil.so")
    shutil.copy(so, root / "evilprov.so")
    subprocess.run(["openssl", "genrsa", "-out", str(root / "k.pem"), "1024"], check=True, capture_output=True)
    request = "[req]\nprompt = no\ndistinguished_name = dn\n[dn]\nCN = x\n"
    (root / "prov.cnf").write_text(
        f"openssl_conf = oc\n[oc]\nproviders = pv\n[pv]\nx = xs\n[xs]\nmodule = {root}/evil.so\nactivate = 1\n{request}"
    )
    (root / "eng.cnf").write_text(
        f"openssl_conf = oc\n[oc]\nengines = es\n[es]\nfoo = fs\n[fs]\ndynamic_path = {root}/evil.so\ninit = 1\n"
        f"{request}"
    )
    return mark


def _attacks(root: str) -> list[list[str]]:
    return [
        ["rand", "-engine", "./evil.so", "4"],
        ["rand", "--engine", "./evil.so", "4"],
        ["rand", "--engine=./evil.so", "4"],
        ["rand", f"-engine={root}/evil.so", "4"],
        ["rand", "-hex", "-engine", f"{root}/evil.so", "4"],
        ["genpkey", "-algorithm", "RSA", "-engine", "./evil.so"],
        ["pkey", "-in", "k.pem", "-noout", "-engine", "./evil.so"],
        ["req", "-new", "-key", "k.pem", "-keygen_engine", "./evil.so"],
        ["req", "-new", "-key", "k.pem", "--keygen_engine=./evil.so"],
        ["s_client", "-ssl_client_engine", "./evil.so", "-connect", "127.0.0.1:1"],
        ["engine", "dynamic", "-pre", "SO_PATH:./evil.so", "-pre", "LOAD"],
        ["engine", f"{root}/evil.so"],
        ["engine", "-t", f"{root}/evil.so"],
        ["rand", "-provider-path", ".", "-provider", "evilprov", "4"],
        ["rand", "-provider-path=.", "-provider=evilprov", "4"],
        ["rand", "--provider-path", ".", "--provider", "evilprov", "4"],
        ["rand", "-provider", f"{root}/evilprov.so", "4"],
        ["list", "-providers", "-provider-path", ".", "-provider", "evilprov"],
        ["req", "-config", "prov.cnf", "-new", "-key", "k.pem", "-out", "c.csr"],
        ["req", "--config=prov.cnf", "-new", "-key", "k.pem", "-out", "c.csr"],
        ["req", "-new", "-key", "k.pem", "-out", "c.csr", "-config", "eng.cnf"],
    ]


_COUNT = len(_attacks("/r"))


@pytest.mark.parametrize("index", range(_COUNT))
def test_control_each_call_loads_the_library_without_reach(root: Path, armed: Path, index: int) -> None:
    """Without reach every variant below runs the library's code: they are real attacks."""
    args = _attacks(str(root))[index]
    subprocess.run(["openssl", *args], cwd=root, capture_output=True, timeout=20, check=False,
                   env={"PATH": _SEARCH, "HOME": str(root), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)
    assert exists(armed), args


@pytest.mark.parametrize("index", range(_COUNT))
async def test_openssl_loads_no_library_the_agent_names(root: Path, armed: Path, index: int) -> None:
    args = _attacks(str(root))[index]
    tool = RunCommand(ShellSettings(root=root, commands={"openssl": {}}, timeout=10))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "openssl", "args": args})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(armed)


@pytest.mark.parametrize("index", range(_COUNT))
async def test_unconfined_openssl_still_loads_no_library(root: Path, armed: Path, index: int) -> None:
    """Loading code is refused whatever `confine_paths` says: it runs a program, it reads no path."""
    args = _attacks(str(root))[index]
    tool = RunCommand(ShellSettings(root=root, commands={"openssl": {}}, timeout=10, confine_paths=False))
    with pytest.raises(InvalidArguments):
        await tool.execute({"command": "openssl", "args": args})
    assert not exists(armed)


@pytest.mark.parametrize(
    "args",
    [
        ["rand", "-hex", "8"],
        ["dgst", "-sha256", "a.txt"],
        ["version"],
        ["genpkey", "-algorithm", "ed25519", "-out", "ed.pem"],
        ["pkey", "-in", "k.pem", "-noout", "-text"],
        ["list", "-providers"],
    ],
)
async def test_ordinary_openssl_calls_still_run(root: Path, armed: Path, args: list[str]) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"openssl": {}}, timeout=10))
    result = await tool.execute({"command": "openssl", "args": args})
    assert result["exit_code"] == 0, result["stderr"]
    assert not exists(armed)


# curl loads an OpenSSL engine the same way (`--engine /path/x.so`), and it reads its long options in
# any case and by unique prefix: `--ENGINE`, `--eng`, and `--CONFIG cfg`, which the `-K`/`--config`
# guard (a file of more options, `url = "file:///elsewhere/x"`) let through when spelt in capitals.
_CURL_ENGINE = [
    ["--engine", "{root}/evil.so", "http://127.0.0.1:1/"],
    ["--eng", "{root}/evil.so", "http://127.0.0.1:1/"],
    ["--ENGINE", "{root}/evil.so", "http://127.0.0.1:1/"],
    ["--Engin", "{root}/evil.so", "http://127.0.0.1:1/"],
    ["-s", "--engine", "./evil.so", "--engine", "{root}/evil.so", "http://127.0.0.1:1/"],
]
_CURL_CONFIG = [["--CONFIG", "cfg"], ["--Config", "cfg"], ["--CONF", "cfg"], ["-s", "--cONFIG", "cfg"]]


def _curl(root: Path, args: list[str]) -> str:
    done = subprocess.run(["curl", *args], cwd=root, capture_output=True, text=True, timeout=20, check=False,
                          env={"PATH": _SEARCH, "HOME": str(root / "sub"), "LANG": "C.UTF-8"}, stdin=subprocess.DEVNULL)
    return done.stdout


@pytest.mark.parametrize("args", _CURL_ENGINE)
def test_control_curl_loads_the_engine_without_reach(root: Path, armed: Path, args: list[str]) -> None:
    _curl(root, [a.format(root=root) for a in args])
    assert exists(armed), args


@pytest.mark.parametrize("confine", [True, False])
@pytest.mark.parametrize("args", _CURL_ENGINE)
async def test_curl_loads_no_engine(root: Path, armed: Path, args: list[str], confine: bool) -> None:
    tool = RunCommand(ShellSettings(root=root, commands={"curl": {}}, timeout=10, confine_paths=confine))
    with pytest.raises(InvalidArguments) as refused:
        await tool.execute({"command": "curl", "args": [a.format(root=root) for a in args]})
    assert "reach-shell refuses" in refused.value.message
    assert not exists(armed)


@pytest.mark.parametrize("args", _CURL_CONFIG)
def test_control_curl_reads_its_config_in_any_case(root: Path, outside: Path, args: list[str]) -> None:
    (root / "cfg").write_text(f'url = "file://{outside}/secret.txt"\n')
    assert SECRET in _curl(root, args)


@pytest.mark.parametrize("args", _CURL_CONFIG)
async def test_curl_config_in_any_case_is_refused(root: Path, outside: Path, args: list[str]) -> None:
    (root / "cfg").write_text(f'url = "file://{outside}/secret.txt"\n')
    tool = RunCommand(ShellSettings(root=root, commands={"curl": {}}, timeout=10))
    with pytest.raises(InvalidArguments):
        result = await tool.execute({"command": "curl", "args": args})
        assert SECRET not in result["stdout"]  # shown when the call was not refused
