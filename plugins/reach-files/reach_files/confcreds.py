"""Passwords in configuration files that hold one only sometimes, masked before the model sees them.

Rails' ``config/database.yml`` (``password: hunter2``), ``terraform.tfvars`` (``db_password =
"..."``), Java ``.properties`` (``spring.datasource.password=...``), PHP configs
(``define('DB_PASSWORD', '...')``, ``'password' => '...'``), INI, TOML and ``.cnf`` files
(``password = ...``), XML configs (``<password>...</password>``, ``password="..."``, .NET's
``<add key="DbPassword" value="..."/>``): most such files hold no secret, and the rest of them (hosts, ports, names)
is what an honest question needs, so they are read and searched with the *value* under a key
whose name is secret (`reach_core.redact.key_is_secret`: password, passwd, token, secret, api_key
...) replaced by ``[REDACTED]``, as git's config is (`gitcreds`).

A value is found in the spellings these formats allow: quoted either way (escaped quotes inside),
across lines (YAML block scalars ``|``/``>``, YAML plain and quoted scalars continued on more
indented lines, TOML's triple quotes, HCL heredocs, properties' backslash continuations, INI
continuation lines), after a YAML anchor or tag (``&pw hunter2``, ``!!str hunter2``), inside a
flow mapping or an inline table (``{user: a, password: b}``), with a key quoted, in any case,
or spelled with properties' escapes (``pass\\u0077ord``); a YAML alias under a secret key
(``password: *pw``) masks the value its anchor names. Left as written: a key with no value
(documentation's ``password:``), a nested mapping under such a key, and a value that only names
where the secret comes from (``${DB_PASSWORD}``, ``<%= ENV['DB_PASSWORD'] %>``, ``{{ vault_pw }}``,
``var.db_password``, ``getenv('DB_PASSWORD')``).

Also masked there, under any key: a URL's userinfo (``url: postgres://app:PW@db/app``) and a
password in its query (``jdbc:...?password=PW``), and a connection string's ``Password=``/``Pwd=``
(``Server=db;User Id=sa;Password=PW;``). Templates and local variants of such files are masked as
the file they stand for (``parameters.yml.dist``, ``config.php.example``, ``database.yml.erb``).

Positions are byte offsets into the file, so a page of a big file masks what lies in it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from reach_core.redact import key_is_secret, key_words

from .gitcreds import merged_spans, url_spans
from .protect import fold, uncopied

__all__ = ["config_kind", "config_spans"]

# the formats by the last suffix of a file's name (folded, without the marks of a copy)
_KINDS = {".yml": "yaml", ".yaml": "yaml", ".json": "yaml",  # JSON is YAML
          ".properties": "properties",
          ".ini": "ini", ".cfg": "ini", ".conf": "ini", ".cnf": "ini", ".toml": "ini", ".tfvars": "ini",
          ".hcl": "ini", ".tf": "ini",
          # XML configs: hibernate.cfg.xml, Tomcat's context.xml, .NET's web.config / app.config
          ".xml": "xml", ".config": "xml",
          ".php": "php", ".inc": "php"}


# the suffixes of a template or a local variant of such a file, which people fill in with the real values
# (`parameters.yml.dist`, `config.php.example`, `database.yml.erb`, `settings.toml.j2`)
_TEMPLATE = re.compile(r"\.(?:example|sample|template|tmpl|tpl|dist|default|defaults|local|erb|j2|jinja2?)$")


def config_kind(names: Sequence[str]) -> str | None:
    """The format (``yaml``, ``properties``, ``ini``, ``php``) of the file the path components
    ``names`` name, or None for a file that is not masked this way."""
    if not names:
        return None
    last = uncopied(fold(names[-1]))
    while (template := _TEMPLATE.search(last)) is not None and template.start() > 0:
        last = last[:template.start()]
    dot = last.rfind(".")
    return _KINDS.get(last[dot:]) if dot > 0 else None


# a key at the start of a line (after YAML's `- ` list marks), or after `{`/`,` (a flow mapping, an
# inline table), then its separator. A key is quoted, or a run without separators (properties'
# backslash escapes allowed in it). Each starting point is tried once: the key's characters exclude
# every separator, so nothing is backtracked over
_KEY = rb"""(?P<k>"(?:[^"\\\n]|\\.){1,200}"|'[^'\n]{1,200}'|(?:\\.|[^\s=:"'{}\[\],#;!\\]){1,200})"""
_PAIR = re.compile(rb"(?m)(?:^[ \t]*(?:-[ \t]+)*|(?<=[{,])[ \t]*)" + _KEY + rb"[ \t]*(?P<sep>=>|[=:])[ \t]*")
# properties also separate a key from its value by white space alone (`db.password secret`)
_PROP_PAIR = re.compile(rb"(?m)^[ \t\f]*" + _KEY + rb"(?:[ \t\f]*(?P<sep>[=:])[ \t\f]*|[ \t\f]+(?P<ws>)(?=\S))")
# PHP: define('DB_PASSWORD', '...'), 'password' => '...', $db_password = '...', $db['default']['password'] = '...'
_PHP_STR = rb"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
_PHP = re.compile(
    rb"(?i)\bdefine\s*\(\s*(?P<q1>['\"])(?P<k1>[^'\"\n]{1,200})(?P=q1)\s*,\s*(?P<v1>" + _PHP_STR + rb")"
    rb"|(?P<q2>['\"])(?P<k2>[^'\"\n]{1,200})(?P=q2)\s*=>\s*(?P<v2>" + _PHP_STR + rb")"
    rb"|\$(?P<k3>[A-Za-z_]\w{0,200})(?:\s*\[\s*(?P<q4>['\"])(?P<k4>[^'\"\n]{1,200})(?P=q4)\s*\])*\s*=\s*"
    rb"(?P<v3>" + _PHP_STR + rb")"
)
# XML: an element's text (`<password>...</password>`, `<property name="connection.password">...</property>`,
# Android's `<string name="api_key">...</string>`),
# an attribute (`password="..."`), and .NET's `<add key="DbPassword" value="..."/>`
_XML = re.compile(
    rb"""<(?P<nt>[A-Za-z_][\w.:-]{0,200})\s+name\s*=\s*["'](?P<nk>[^"'<>]{1,200})["'][^<>]*>(?P<nv>[^<]{1,4096})"""
    rb"""</(?P=nt)\s*>"""
    rb"""|\bkey\s*=\s*["'](?P<ak>[^"'<>]{1,200})["']\s+value\s*=\s*(?P<av>"[^"<>]*"|'[^'<>]*')"""
    rb"""|<(?P<k>[A-Za-z_][\w.:-]{0,200})(?:\s[^<>]*)?>(?P<v>[^<]{1,4096})</(?P=k)\s*>""")
_XML_ATTR = re.compile(rb"""(?<![\w.:-])(?P<k>[A-Za-z_][\w.:-]{0,200})\s*=\s*(?P<v>"[^"<>]*"|'[^'<>]*')""")
# a value that only says where the secret comes from
_REFERENCE = re.compile(
    rb"""(?ix)(?:
      \$\{[A-Za-z_][\w.]*\}                 # ${DB_PASSWORD}, ${db.password} (no default after :-)
    | \$[A-Za-z_]\w*                        # $DB_PASSWORD
    | <%=?\s*ENV(?:\[\s*['"][\w.-]+['"]\s*\]|\.fetch\(\s*['"][\w.-]+['"]\s*\))\s*-?%>
    | \{\{[^{}\n]*\}\}                      # {{ vault_db_password }}, {{ .Values.password }}
    | %\([\w.-]+\)s                         # %(password)s
    | (?:var|local|data)\.[\w.-]+           # HCL references
    | (?:getenv|env)\(\s*['"][\w.-]+['"]\s*\) | os\.environ\[\s*['"][\w.-]+['"]\s*\]
    | ~ | null | none | nil
    )""")
# a password in a connection string (ADO.NET, ODBC, JDBC properties: `Server=db;User Id=sa;Password=...;`), after
# the `;` or the quote before it
_CONN_PASSWORD = re.compile(rb"(?i)(?<=[;\"'])[ \t]*(?:password|pwd)[ \t]*=[ \t]*(?P<v>[^;\"'\r\n]+)")
_BLOCK = re.compile(rb"[|>][-+0-9]*[ \t]*(?:#[^\n]*)?")
_HEREDOC = re.compile(rb"<<[-~]?[ \t]*(?P<id>[A-Za-z_]\w*)[ \t]*")
_ANCHOR_TAG = re.compile(rb"(?:(?:&[^\s,{}\[\]]+|![^\s,{}\[\]]*)[ \t]+)+")
_ANCHOR = re.compile(rb"&(?P<a>[^\s,{}\[\]]+)[ \t]+")
_ALIAS = re.compile(rb"\*(?P<a>[^\s,{}\[\]]+)[ \t]*(?:#[^\n]*)?")
# a list item that is a value, not a mapping (`- k1`, `- "k2"`; not `- name: x`)
_SCALAR_ITEM = re.compile(rb"[ \t]*-[ \t]+(?!(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s:#\"'][^:#\n]*):(?:[ \t]|$))\S")
_MAPPING_LINE = re.compile(rb"[ \t]*(?:-(?:[ \t]|$)|(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s:#\"'][^:#\n]*):(?:[ \t]|$)|#)")
_UNESCAPE = re.compile(rb"\\u([0-9A-Fa-f]{4})|\\(.)", re.DOTALL)
_QUOTE_SCAN = 4096  # bytes a quoted value may run over lines before it is taken to end at its line


# the last word of a key that names where a secret is, or a rule about one, not the secret itself:
# `credsStore: desktop`, `password_file: /run/secrets/db`, `secretName: db`, `password_min_length: 12`
_NAMING_WORDS = frozenset({"store", "helper", "helpers", "name", "names", "ref", "file", "files", "path", "paths",
                           "dir", "source", "provider", "type", "kind", "length", "len", "min", "max", "size",
                           "count", "policy", "hint", "prompt", "label", "url", "uri", "endpoint", "enabled"})
# a placeholder in a template or a document: `<your password>`, `...`, `***`, `xxxx`, `changeit`? (no: a real one)
_PLACEHOLDER = re.compile(rb"<[^<>\n]*>|\.{3,}|\*{3,}|[xX]{3,}")


def _restates(value: bytes, key: bytes) -> bool:
    """Is ``value`` the key's own name (``refresh_token: REFRESH_TOKEN``, ``"password": "PASSWORD"``):
    a template's placeholder?"""
    text = value.strip().strip(b"\"'")
    return 0 < len(text) <= 100 and _words(text) == _words(key.strip(b"\"'"))


@functools.lru_cache(maxsize=4096)
def _words(text: bytes) -> list[str]:
    return key_words(text.decode("utf-8", "replace"))


@functools.lru_cache(maxsize=4096)
def _secret_key(raw: bytes, kind: str) -> bool:
    key = raw
    if key[:1] in (b'"', b"'") and key[-1:] == key[:1] and len(key) > 1:
        key = key[1:-1]
    if kind in ("properties", "yaml") and b"\\" in key:
        key = _UNESCAPE.sub(lambda m: chr(int(m.group(1), 16)).encode() if m.group(1) else m.group(2), key)
    text = key.decode("utf-8", "replace").strip()
    if kind == "ini" and "." in text:
        text = text.rsplit(".", 1)[-1].strip("\"'")  # TOML's dotted keys: db."password"
    if not text or not key_is_secret(text):
        return False
    words = key_words(text)
    return not words or words[-1] not in _NAMING_WORDS


def _line_end(data: bytes, i: int) -> int:
    end = data.find(b"\n", i)
    return len(data) if end < 0 else end


def _indent(data: bytes, line_start: int) -> int:
    n = line_start
    while n < len(data) and data[n] in b" \t":
        n += 1
    return n - line_start


def _more_indented(data: bytes, end: int, indent: int, *, mapping_stops: bool) -> int:
    """The end of the lines after ``end`` (a line's end) that are more indented than ``indent`` or
    blank (trailing blank lines left out); with ``mapping_stops``, a line that starts a mapping
    entry or list item ends them (a YAML child, not a continued value)."""
    last = end
    pos = end
    while pos < len(data):
        start = pos + 1
        stop = _line_end(data, start)
        line = data[start:stop]
        if line.strip(b" \t\r"):
            if _indent(data, start) <= indent or (mapping_stops and _MAPPING_LINE.match(line)):
                break
            last = stop
        pos = stop
    return last


_QUOTED = {
    ("yaml", b'"'): re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL), ("yaml", b"'"): re.compile(rb"'(?:[^']|'')*'"),
    ("php", b'"'): re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL),
    ("php", b"'"): re.compile(rb"'(?:[^'\\]|\\.)*'", re.DOTALL),
    ("ini", b'"'): re.compile(rb'"(?:[^"\\\n]|\\.)*"'), ("ini", b"'"): re.compile(rb"'[^'\n]*'"),
    ("properties", b'"'): re.compile(rb'"[^"\n]*"'), ("properties", b"'"): re.compile(rb"'[^'\n]*'"),
}


def _list_end(data: bytes, end: int, indent: int) -> int:
    """The end of the YAML list after ``end`` (a line's end) under a key indented ``indent``: its
    items may sit at the key's own indentation (``- k1``) or deeper, and their lines run on deeper."""
    last = end
    pos = end
    while pos < len(data):
        start = pos + 1
        stop = _line_end(data, start)
        line = data[start:stop]
        if line.strip(b" \t\r"):
            at = _indent(data, start)
            if at < indent or (at == indent and not line[at:at + 1] == b"-"):
                break
            last = stop
        pos = stop
    return last


def _quoted_end(data: bytes, i: int, kind: str) -> int:
    """The end (past the closing quote) of the quoted value starting at ``i``; a quote not closed
    within `_QUOTE_SCAN` bytes ends at its line. One regex match in C, bounded: many unclosed
    quotes in a big file cost a bounded scan each, never one to the end of the file."""
    limit = min(len(data), i + _QUOTE_SCAN)
    triple = data[i:i + 3]
    if triple in (b'"""', b"'''") and kind == "ini":
        close = data.find(triple, i + 3, limit)
        return close + 3 if close >= 0 else _line_end(data, i)
    m = _QUOTED[kind, data[i:i + 1]].match(data, i, limit)
    return m.end() if m is not None else _line_end(data, i)


def _value_span(data: bytes, i: int, kind: str, line_start: int, flow: bool) -> tuple[int, int] | None:
    """The span of the value that starts at ``i`` (after the separator), or None when there is none
    or it is a reference (`_REFERENCE`)."""
    indent = _indent(data, line_start)
    if kind == "yaml":
        tag = _ANCHOR_TAG.match(data, i)
        if tag is not None:
            i = tag.end()
    eol = _line_end(data, i)
    rest = data[i:eol].rstrip(b" \t\r")
    if kind == "yaml" and _BLOCK.fullmatch(rest):
        end = _more_indented(data, eol, indent, mapping_stops=False)
        return (eol + 1, end) if end > eol else None
    if kind == "ini":
        doc = _HEREDOC.fullmatch(rest)
        if doc is not None:
            close = re.compile(rb"(?m)^[ \t]*" + re.escape(doc.group("id")) + rb"[ \t]*\r?$")
            m = close.search(data, eol + 1)
            return (eol + 1, max(eol + 1, m.start() - 1)) if m is not None else (eol + 1, len(data))
    if not rest or rest[:1] == b"#" or (kind == "ini" and rest[:1] == b";"):
        if kind == "yaml" and not flow:  # `password:` and the value on the next, more indented lines
            end = _more_indented(data, eol, indent, mapping_stops=True)
            nxt = data[eol + 1:end]
            if end > eol and nxt.strip() and not _MAPPING_LINE.match(nxt):
                return eol + 1, end
            if _SCALAR_ITEM.match(data, eol + 1, _line_end(data, eol + 1)) and _indent(data, eol + 1) >= indent:
                return eol + 1, _list_end(data, eol, indent)  # `api_keys:` and a list of values: `- k1`, `- k2`
        return None
    if rest[:1] in (b'"', b"'"):
        end = _quoted_end(data, i, kind)
        inner = data[i + 1:end - 1] if end - i >= 2 and data[end - 1:end] == data[i:i + 1] else data[i + 1:end]
        if not inner.strip() or _REFERENCE.fullmatch(inner.strip()):
            return None
        return i, end
    if kind == "yaml" and rest[:1] == b"*":
        return None  # an alias: the anchor's value is masked where it is defined (`config_spans`)
    if rest[:1] == b"{" and kind in ("yaml", "ini"):
        return None  # a mapping (an inline table): its entries are judged by their own keys
    if flow:
        stop = i
        while stop < eol and data[stop] not in b",}]":
            stop += 1
        end = stop
    else:
        end = eol
        if kind in ("yaml", "ini"):
            comment = re.search(rb"[ \t][#;]" if kind == "ini" else rb"[ \t]#", data[i:eol])
            if comment is not None:
                end = i + comment.start()
        if kind == "properties":
            line = i  # an odd number of backslashes at a line's end: the value goes on (each line looked at once)
            while end < len(data):
                tail = data[line:end].rstrip(b"\r")
                if (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 0:
                    break
                line = end + 1
                end = _line_end(data, line)
        elif kind in ("yaml", "ini"):
            more = _more_indented(data, eol, indent, mapping_stops=kind == "yaml")
            if more > eol:
                end = more
    value = data[i:end].strip()
    if kind == "yaml" and value in (b"{}", b"[]"):
        return None
    if not value or _REFERENCE.fullmatch(value.rstrip(b"\r")):
        return None
    return i, i + len(data[i:end].rstrip(b" \t\r"))


def config_spans(data: bytes, kind: str, base: int = 0) -> list[tuple[int, int]]:
    """The byte ranges of secret values in configuration text ``data`` of format ``kind`` (which
    starts at file offset ``base``), as file offsets, sorted and merged."""
    found: list[tuple[int, int]] = []
    aliases: set[bytes] = set()
    if kind == "xml":
        for pattern in (_XML, _XML_ATTR):  # apart: an element's match holds the attributes of its tag
            for m in pattern.finditer(data):
                k, v = next((k, v) for k, v in (("nk", "nv"), ("ak", "av"), ("k", "v"))
                            if k in m.re.groupindex and m.group(k) is not None)
                if (pattern is _XML_ATTR and m.group(k).lower() == b"key") or not _secret_key(m.group(k), kind):
                    continue  # `<add key="Host" .../>`: the attribute `key` holds a name
                a, b = m.span(v)
                value = data[a:b].strip().strip(b"\"'").strip()
                if value and not _REFERENCE.fullmatch(value) and not _PLACEHOLDER.fullmatch(value):
                    found.append((a, b))
    elif kind == "php":
        for m in _PHP.finditer(data):
            for k, v in (("k1", "v1"), ("k2", "v2"), ("k4", "v3"), ("k3", "v3")):
                if m.group(k) is None:
                    continue
                if _secret_key(m.group(k), kind):
                    a, b = m.span(v)
                    inner = data[a + 1:b - 1].strip()
                    if inner and not _REFERENCE.fullmatch(inner):
                        found.append((a, b))
                break  # `$db['default']['password']`: the last subscript names it (k4 before k3)
    else:
        pair = _PROP_PAIR if kind == "properties" else _PAIR
        covered = 0  # the end of the last value found: a key inside it is part of that value
        for m in pair.finditer(data):
            if m.start() < covered or not _secret_key(m.group("k"), kind):
                continue
            line_start = data.rfind(b"\n", 0, m.start()) + 1
            flow = m.start() > line_start and data[m.start() - 1:m.start()] in (b"{", b",") or (
                kind == "yaml" and b"{" in data[line_start:m.start()])
            span = _value_span(data, m.end(), kind, line_start, flow)
            if span is not None and (_PLACEHOLDER.fullmatch(data[span[0]:span[1]].strip(b"\"' \t\r"))
                                     or _restates(data[span[0]:span[1]], m.group("k"))):
                continue  # `password: <your password>`, `refresh_token: REFRESH_TOKEN`
            if span is not None:
                found.append(span)
                covered = span[1]
            elif kind == "yaml":
                alias = _ALIAS.match(data, m.end())
                if alias is not None:
                    aliases.add(alias.group("a"))
    for m in _ANCHOR.finditer(data) if aliases else ():  # `pw: &pw hunter2` ... `password: *pw`
        if m.group("a") in aliases:
            line_start = data.rfind(b"\n", 0, m.start()) + 1
            span = _value_span(data, m.end(), kind, line_start, False)
            if span is not None:
                found.append(span)
    found.extend(url_spans(data))  # `url: postgres://app:pw@db/app`, `jdbc:...?password=`
    found.extend(m.span("v") for m in _CONN_PASSWORD.finditer(data)
                 if not _REFERENCE.fullmatch(m.group("v").strip()))
    return merged_spans([(base + a, base + b) for a, b in found if b > a])
