"""Secret redaction: the one function the core's log events and reach-audit share.

Three nets, because any one alone leaks:

* **key names** catch structured secrets whatever their shape (``{"db_pass": ...}``,
  ``headers["X-Auth-Token"]``, ``cardPin``): a key is normalised (Unicode
  compatibility forms, look-alike letters, case, separators, camelCase) and cut
  into words; a word of the secret families (``password``, ``pw``, ``pin``,
  ``key``, ``token``, ``auth``, ``session``, ...), alone or as the tail of a
  run-together word (``dbpass``, ``xauth``), marks it secret.
* **structure in text**: ``name=value`` / ``"name": "value"`` / ``--name value`` /
  ``<name>value</name>`` pairs decided by the same key rule, the password of any
  URL's userinfo, ``Authorization:``/``Cookie:`` header lines, ``.pgpass`` and
  ``.netrc`` lines, ``curl -u user:pass``, ``mysql -pX``.
* **shapes and phrases**: "my password is ...", ``Bearer ...``, AWS keys, JWTs,
  ``sk-...`` API keys, PEM private key blocks.

Each :class:`~reach_core.Reach` owns one :class:`Redactor` (``reach.redactor``);
a plugin adds its own rules to it (``reach.redactor.add(keys=..., patterns=...)``),
so the core's log events and the audit trail mask the same things. Redaction by
key name is exact; redaction of free text is best effort, and errs towards
masking too much.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any
from urllib.parse import unquote

import orjson

from .known_secrets import KnownSecrets, mask_spans

__all__ = ["MASK", "Redactor"]

MASK = "[REDACTED]"

# -- key names ---------------------------------------------------------------
# A key word (lower case) that is a secret by itself, or in the plural.
SECRET_WORDS: frozenset[str] = frozenset({
    "password", "passwd", "passwort", "passphrase", "passcode", "pass", "pwd", "pw", "pword", "passw",
    "pin", "pincode", "secret", "token", "key", "apikey", "accesskey", "privatekey", "secretkey",
    "auth", "authn", "authz", "authentication", "authorization", "authorisation", "credential", "cred",
    "creds", "cookie", "session", "sessionid", "sid", "sig", "signature", "jwt", "bearer", "otp", "totp",
    "mfa", "ssn", "cvv", "cvc", "cvv2", "iban", "dsn", "connstr", "connectionstring",
    "nonce", "csrf", "xsrf", "hmac", "privkey", "secrets", "tokens", "keys", "passwords", "cookies",
})
# Other languages' words for a password, key or token, in Latin script (accents dropped, see
# ``key_words``): {"mot_de_passe": ...}, {"contraseña": ...}, {"Kennwort": ...}, {"hasło": ...}.
SECRET_WORDS = SECRET_WORDS | frozenset({
    "passe", "motdepasse", "mdp", "contrasena", "contrasenya", "clave", "senha", "wachtwoord", "kennwort",
    "geheimnis", "haslo", "heslo", "salasana", "losenord", "passord", "adgangskode", "jelszo", "sifre",
    "parol", "parola", "parool", "lozinka", "geslo", "slaptazodis", "parole", "sandi", "katasandi",
    "matkhau", "jeton", "chave", "segredo", "secreto", "segreto", "cle", "schlussel", "chiave",
})
# ... and in other scripts, found anywhere in a key (case folded, separators dropped):
# {"пароль": ...}, {"密码": ...}, {"パスワード": ...}.
SECRET_FOREIGN: tuple[str, ...] = (
    "пароль", "паролі", "токен", "секрет", "ключ", "密码", "密碼", "口令", "密钥", "密鑰", "秘钥",
    "令牌", "パスワード", "暗証番号", "合言葉", "秘密鍵", "トークン", "비밀번호", "암호", "토큰", "كلمةالمرور",
    "كلمةالسر", "رمزالمرور", "رمز", "סיסמה", "סיסמא", "κωδικος", "συνθηματικο", "पासवर्ड", "रहस्य",
    "รหัสผ่าน", "گذرواژه", "رمزعبور",
)
_LATIN_FOLD = str.maketrans({"ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ø": "o", "Ø": "O", "æ": "ae",
                             "Æ": "AE", "ß": "ss", "ı": "i", "œ": "oe", "Œ": "OE"})
_SEPARATORS = re.compile(r"[\W_]+")
# A word holding one of these anywhere is secret (they do not occur inside innocent words).
SECRET_PARTS: tuple[str, ...] = (
    "password", "passwd", "passphrase", "passcode", "secret", "apikey", "accesskey", "privatekey",
    "authorization", "authorisation", "authentication", "credential", "cookie", "sessionid", "sessionkey",
    "sessiontoken", "signature", "token", "bearer", "jwt",
)
# Run-together words ending in one of these are secret: dbpass, cardpin, userpw, xauth, sshkey.
SECRET_TAILS: tuple[str, ...] = (
    "pass", "pwd", "pw", "pin", "key", "auth", "sig", "otp", "session", "cred", "creds", "secret",
)
# Words that contain or end in a secret word and are not secrets.
NOT_SECRET_WORDS: frozenset[str] = frozenset({
    "author", "authors", "authored", "authority", "authorities", "oauth2", "keyword", "keywords",
    "keyboard", "keynote", "keystroke", "compass", "bypass", "underpass", "overpass", "passenger",
    "passengers", "passage", "passive", "passport", "spin", "spinner", "spins", "monkey", "turkey",
    "hockey", "donkey", "whiskey", "jockey", "lackey", "ping", "pinned", "pine", "pink", "pint",
    "pinyin", "tokens", "tokenizer", "tokenizers", "tokenize", "tokenized", "tokencount", "tokenlimit",
    "maxtokens", "keys", "sessions", "pinterest", "lockey", "turnkey", "hotkey", "pan", "salt",
})
# Token *counts* are figures, not secrets (max_tokens, prompt_tokens, token_count).
COUNT_WORDS: frozenset[str] = frozenset({"count", "counts", "limit", "limits", "usage", "used", "budget", "total",
                                         "max", "min", "num", "number", "size", "len", "length", "cost"})

# Look-alike letters (Cyrillic, Greek) and fullwidth forms map onto ASCII one to one,
# and invisible format characters are dropped: "ｐａｓｓ\u200bword", "раssword".
_CONFUSABLE = dict(zip(
    "аАвВеЕһКкМмНоОрРсСтТуУхХіІјЈѕЅԁԛԝαΑβΒεΕηΗιΙκΚμΜνΝοΟρΡτΤυΥχΧ",
    "aABBeEhKkMmHoOpPcCtTyYxXiIjJsSdqwaABBeEHnIiKkMmvNoOpPtTuYxX",
    strict=True,
))
_SKELETON: dict[int, Any] = {ord(k): v for k, v in _CONFUSABLE.items()}
_SKELETON.update({cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)})  # fullwidth ASCII
_SKELETON.update({cp: None for cp in (*range(0x200B, 0x2010), *range(0x2060, 0x2065), 0xFEFF, 0x00AD, 0x180E)})
_SKELETON[0x3000] = " "

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORDS = re.compile(r"[a-z]+|[0-9]+")


def skeleton(text: str) -> str:
    """``text`` with look-alike letters and fullwidth forms as ASCII, invisible characters dropped."""
    if text.isascii():
        return text
    out = text.translate(_SKELETON)
    if not out.isascii():
        out = unicodedata.normalize("NFKC", out)
    return out


def key_words(key: str) -> list[str]:
    """``"X-DB_passWord2"`` → ``["x", "db", "pass", "word", "2"]``-like words, lower case."""
    if not key.isascii():
        # accents off ("contraseña" -> "contrasena"), then look-alikes as ASCII
        key = "".join(c for c in unicodedata.normalize("NFKD", key.translate(_LATIN_FOLD))
                      if not unicodedata.combining(c))
    key = skeleton(key)
    return _WORDS.findall(_CAMEL.sub(" ", key).lower())


def _fold(text: str) -> str:
    """Case folded, compatibility forms, no accents or marks, no separators or joiners."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
                     if not unicodedata.combining(c))
    return _SEPARATORS.sub("", folded.replace("\u200d", "").replace("\u200c", ""))


_FOREIGN_FOLDED: tuple[str, ...] = tuple(_fold(w) for w in SECRET_FOREIGN)


def _foreign_secret(key: str) -> bool:
    """Does ``key`` (not plain ASCII) hold another script's word for a secret?"""
    folded = _fold(key)
    return any(word in folded for word in _FOREIGN_FOLDED)


def _word_is_secret(word: str) -> bool:
    if word in NOT_SECRET_WORDS:
        return False
    if word in SECRET_WORDS:
        return True
    if any(part in word for part in SECRET_PARTS):
        return not word.endswith(("tokens", "tokencount", "tokenizer", "tokenlimit"))
    return len(word) > 3 and word.endswith(SECRET_TAILS)


def key_is_secret(key: str, extra: frozenset[str] = frozenset()) -> bool:
    """True when a value stored under ``key`` must never be written down."""
    if not key.isascii() and _foreign_secret(key):
        return True
    words = key_words(key)
    if not words:
        return False
    joined = "".join(words)
    if extra and (joined in extra or any(e in joined for e in extra)):
        return True
    if joined in NOT_SECRET_WORDS:
        return False
    if _word_is_secret(joined):
        return True
    for i, word in enumerate(words):
        if not _word_is_secret(word):
            # two words that only make a secret together: "pass"+"word", "api"+"key"
            if (i + 1 < len(words) and _word_is_secret(word + words[i + 1])
                    and (word + words[i + 1]) not in NOT_SECRET_WORDS):
                return True
            continue
        if word in ("token", "tokens", "key", "keys", "session") and any(w in COUNT_WORDS for w in words):
            continue  # max_tokens, token_count, key_count: a figure
        return True
    return False


# -- text --------------------------------------------------------------------
# What a secret-bearing key in text may look like, for the cheap first scan.
# A value after a separator: quoted (also JSON-escaped quotes), or bare up to a delimiter
# (``v4``: maybe a scheme word, then a run of anything but a delimiter). The pair patterns
# only look at where a value starts; its end is worked out for a secret key alone, by
# :func:`_value_span`. A lookahead that read every value to its end made text holding
# many pairs on one run ("a:1:" repeated, "password=" repeated) a quadratic scan.
_QUOTED = (
    r"\\\"(?P<v1>(?:[^\\\n]|\\(?!\"))*)\\\""
    r"|\"(?P<v2>(?:[^\"\\\n]|\\.)*)\""
    r"|'(?P<v3>[^'\n]*)'"
)
_V4_STOP = r"[\s\"'&,;<>}\]\\)|]"
_VALUE_START = "(?=" + re.sub(r"\(\?P<v\d>", "(?:", _QUOTED) + "|(?!" + _V4_STOP + ").)"
_QUOTED_VALUE = re.compile(_QUOTED)
_V4_PREFIX = re.compile(r"(?i)(?:bearer|basic|digest|token|negotiate|ntlm|apikey)\s+")
_V4_END = re.compile(_V4_STOP)
_PAIR = re.compile(
    r"(?i)(?<![\w.%-])(?P<k>(?:[^\W\d]|%)[\w.%-]{0,80})(?:\\?[\"'])?\s*(?P<sep>:=|=>|[:=])\s*" + _VALUE_START
)
_FLAG = re.compile(r"(?i)(?<![\w-])--(?P<k>[^\W\d_][\w-]{0,60})(?:=|\s+)" + _VALUE_START)


def _value_span(text: str, pos: int, run: list[int]) -> tuple[int, int]:
    """The span of the value that starts at ``pos`` (a pair pattern matched there): the
    first of ``v1``-``v4`` that matches, as the alternation ``v1|v2|v3|v4`` would choose.

    ``run`` is ``[start, end]`` of the last bare run measured, shared by one text's pairs:
    a bare value ends at the first delimiter, the same for every start inside one run, so
    many pairs in one run cost one scan of it.
    """
    quoted = _QUOTED_VALUE.match(text, pos)
    if quoted is not None:
        group = "v1" if quoted.group("v1") is not None else "v2" if quoted.group("v2") is not None else "v3"
        return quoted.span(group)
    start = pos
    prefix = _V4_PREFIX.match(text, pos)
    if prefix is not None and prefix.end() < len(text) and _V4_END.match(text, prefix.end()) is None:
        start = prefix.end()  # "Bearer xyz": the scheme word, its spaces and the run after them
    if not run[0] <= start < run[1]:
        stop = _V4_END.search(text, start)
        run[0], run[1] = start, stop.start() if stop is not None else len(text)
    return pos, run[1]


# attributes stop at a "<" too (never inside a tag): "<a " repeated was a quadratic scan
_XML = re.compile(r"(?i)<(?P<k>[^\W\d][\w.:-]{0,60})(?:\s[^<>]*)?>(?P<v>[^<]*)</(?P=k)\s*>")

# A URL's userinfo: any scheme's password (postgresql://user:PASS@host, redis://:PASS@host), or a
# long bare user name, which is a token (https://ghp_xxx@github.com). Two of the redactor's
# patterns below, and on their own for messages that quote a value a person wrote.
_URL_PASSWORD = r"(?i)\b[a-z][a-z0-9+.-]{0,30}://[^\s/@:\"'<>]*:(?P<s>[^\s/\"'<>]*)@"
_URL_TOKEN_USER = r"(?i)\b[a-z][a-z0-9+.-]{0,30}://(?P<s>[^\s/@:\"'<>]{16,})@"
_USERINFO = (re.compile(_URL_PASSWORD), re.compile(_URL_TOKEN_USER))


def mask_userinfo(text: str) -> str:
    """``text`` with every URL's userinfo password (or token-like user name) masked:
    ``postgresql://reach:[REDACTED]@db/x``. For messages that quote a value a person wrote
    (a config error's "got ..."), where a password written inline in a URL must not show."""
    return mask_spans(text, [m.span("s") for pattern in _USERINFO for m in pattern.finditer(text)])


# Unconditional patterns: the named group ``s`` (or the whole match) is masked.
_PATTERNS: tuple[str, ...] = (
    _URL_PASSWORD,  # postgresql://user:PASS@host, redis://:PASS@host
    _URL_TOKEN_USER,  # https://ghp_xxx@github.com
    # user:password@host without a scheme
    r"(?i)(?<![\w/:.@-])[\w.+-]{1,64}:(?P<s>[^\s/@:\"'<>]{1,128})@[\w-]+(?:\.[\w-]+)*",
    # header lines: the whole rest of the line
    r"(?i)(?<![\w-])(?:set-)?cookie\s*:\s*(?P<s>[^\r\n\"']+)",
    r"(?i)(?<![\w-])(?:proxy-)?(?:authorization|x-api-key|x-auth-token|x-auth|x-access-token)\s*:\s*"
    r"(?P<s>(?:(?:bearer|basic|digest|token|negotiate|ntlm|apikey)\s+)?[^\s\"',;]+)",
    # natural language: "my password is X", "the PIN number for the card was 1234", "api key -> X"
    r"(?i)\b(?:password|passwd|passphrase|passcode|pass\s*word|pwd|pw|pass|pin|secret|token|api\s*key"
    r"|access\s*key|private\s*key|secret\s*key|key|credentials?|otp|cvv|cvc|ssn)s?"
    r"(?:\s*(?:number|code|no\.?|#))?(?:\s+(?:for|of|to|on|at|in)(?:\s+[^\s]+){1,3}?)?"
    r"(?:\s+(?:is|was|will\s+be|would\s+be|should\s+be|are|were|equals|reads|became|becomes)\b\s*[:=]?|\s*(?::|=|->|=>))\s*"
    r"(?:[\"'`\u00ab\u201c\u2018](?P<s>[^\"'`\u00bb\u201d\u2019\n]{1,200})|(?P<s2>[^\s\"'`,;]{2,}))",
    # digits right after a PIN-like word: "PIN 1234", "cvv: 123", "passcode #4321"
    r"(?i)\b(?:pin|pincode|passcode|cvv|cvc|otp)s?(?:\s*(?:number|code|no\.?|#))?\s*[:=#]?\s*(?P<s>\d{3,12})\b",
    r"(?:\u5bc6\u7801|\u53e3\u4ee4|\u5bc6\u94a5|\u4ee4\u724c)\s*(?:\u662f|\u4e3a|\uff1a|:|=)\s*(?P<s>\S+)",
    # curl -u user:pass, --user user:pass, --proxy-user
    r"(?i)(?<![\w-])(?:-u\s*|--(?:proxy-)?user(?:\s+|=))[\"']?[^\s:\"']*:(?P<s>[^\s\"']+)",
    # mysql -pSECRET (no space: a password), sshpass -p SECRET
    r"(?<![\w-])-p(?P<s>[^\s\"'-][^\s\"']*|[\"'][^\"']+[\"'])",
    # sshpass -p SECRET, mysql ... -p SECRET, redis-cli -a SECRET: ``_COMMAND_SECRETS``
    # .pgpass: host:port:database:user:password (fields may escape ':')
    r"(?m)(?:^|(?<=\s))(?:\\.|[^:\s#\\])+:(?:\d{1,5}|\*):(?:\\.|[^:\n\\])*:(?:\\.|[^:\n\\])*:(?P<s>[^\n]+)",
    # .netrc: machine h login u password p
    r"(?i)\blogin\s+\S+\s+password\s+(?P<s>\S+)",
    # bearer / basic credentials anywhere
    r"(?i)\b(?:bearer|basic|digest)\s+(?P<s>[a-z0-9._~+/=-]{8,})",
    # vendor key shapes
    r"\b(?:sk|pk|rk)[-_](?:live|test|proj|ant)?[-_]?[A-Za-z0-9_-]{16,}",
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    r"\bAIza[0-9A-Za-z_-]{35}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",  # JWT (also unsigned)
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
)
# A command, then in the same command (no newline, |, ; or &) a flag with the secret:
# ``(?i)\b(?:sshpass|mysql|...)\b[^\n|;&]*?\s-p\s+(?P<s>[^\s-]\S*)`` as one regex was a
# quadratic scan of text naming the command many times ("mysql " 4,000 times, then "-p",
# took 1.7 s). :func:`_command_spans` finds the same spans in linear time.
_COMMAND_SECRETS = (
    (re.compile(r"(?i)\b(?:sshpass|mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlsh|mongo|mongosh|mongodump"
                r"|docker|podman|helm)\b"), re.compile(r"(?i)\s-p\s+(?P<s>[^\s-]\S*)")),
    (re.compile(r"(?i)\bredis-cli\b"), re.compile(r"(?i)\s-a\s*(?P<s>[^\s-]\S*)")),
)
_COMMAND_END = re.compile(r"[\n|;&]")


def _command_spans(text: str, command: re.Pattern[str], flag: re.Pattern[str]) -> list[tuple[int, int]]:
    """The ``s`` spans ``finditer`` of ``command [^\\n|;&]*? flag`` would find, in linear time.

    At a command word the lazy run takes the first flag after it, if no command end comes
    first; then the scan goes on after that flag's value, else one character after the
    word's start. The next flag and the next command end after a point only move forward,
    so each is searched for once per point it passes, not once per command word.
    """
    spans: list[tuple[int, int]] = []
    pos, found, stop_from, stop = 0, None, 1, 0
    while (word := command.search(text, pos)) is not None:
        after = word.end()
        if found is None or found.start() < after:
            found = flag.search(text, after)
            if found is None:
                break  # no flag after this word, nor after any later one
        if not stop_from <= after <= stop:
            end = _COMMAND_END.search(text, after)
            stop_from, stop = after, end.start() if end is not None else len(text)
        if found.start() <= stop:  # the run between the word and the flag stays in one command
            spans.append(found.span("s"))
            pos = found.end()
        else:
            pos = word.start() + 1
    return spans


# The cheap first scan, on lower-cased text: a literal (or a keyword in context) that
# every rule above needs. Text without one is returned as it is. Literal alternations
# are several times faster in ``re`` than the case-insensitive patterns themselves.
_KEYWORDS = (
    "pass", "pw", "pin", "secret", "token", "key", "auth", "cookie", "session", "cred", "sig", "jwt",
    "bearer", "otp", "ssn", "cvv", "cvc", "dsn", "salt", "nonce", "csrf", "hmac", "sid", "mfa", "iban",
    "connstr", "connectionstring", "connection_string", "connection-string",
    # other languages' key names in ASCII (``SECRET_WORDS``)
    "mdp", "contrase", "clave", "senha", "wachtwoord", "kennwort", "geheimnis", "haslo", "heslo",
    "salasana", "losenord", "jelszo", "sifre", "parol", "lozinka", "geslo", "chave", "segredo", "secreto",
    "segreto", "cle_", "schlussel", "chiave", "jeton", "sandi", "slaptazodis", "matkhau",
)
# ... and as written with accents or in other scripts (``SECRET_FOREIGN``): a second scan, only
# of text that is not ASCII (every extra alternative slows the first scan of all text)
_FOREIGN_KEYWORDS = (
    "contraseña", "hasło", "lösenord", "jelszó", "şifre", "clé", "schlüssel", "slaptažodis", "mật khẩu",
    *(w.lower() for w in SECRET_FOREIGN),
)
_HINT_WORDS = (
    "@", "--", "-u", "-p", "-a", ":*:", "login", "bearer ", "basic ", "digest ", "sk-", "sk_", "pk-", "pk_", "rk-",
    "rk_", "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "aiza", "ghp_", "gho_", "ghu_",
    "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "eyj", "-----begin", "\u5bc6\u7801", "\u53e3\u4ee4",
    "\u5bc6\u94a5", "\u4ee4\u724c",
)
# The runs after a keyword are bounded: a key `_PAIR` masks has at most 81 characters (so
# at most 80 after a keyword in it), and the natural-language rules' words end a few letters
# after theirs. Unbounded runs made the scan quadratic: "password" 8,000 times (64 kB) took
# over a minute here, holding the GIL (tests/test_redact_linear.py).
# The first two runs are possessive (``{0,80}+``: what follows them is never a run
# character, so giving some back could not help); the PIN one needs to give digits back.
_IN_CONTEXT = (
    r"(?:[\w.-]{0,80}+\\?[\"']?\s*(?::|=|-?>)"  # a pair, a header, an XML tag
    r"|\w{0,80}+\s+(?:is|was|are|were|will|would|should|equals|reads|became|becomes|number|code|no|for|of|to|on|at|in)\b"
    r"|\w{0,80}\s*[:=#]?\s*\d{3})"  # PIN 1234
)


def _branches(items: Iterable[tuple[str, str]]) -> str:
    """A regex for "one of these literals, then its tail" (``(literal, tail regex)`` pairs),
    branching once per shared prefix; the scans only ask whether it matches anywhere.

    ``re`` tries the alternatives of a group one by one, so a flat list of dozens of
    words costs a try of each at every position of every string scanned; a trie whose
    every branch starts with its own letter costs one comparison per branch, and lets
    ``re`` skip (in C) every position whose character starts no literal. An empty tail
    means "matched": the literal alone is enough, whatever follows it.
    """
    items = set(items)
    ends = sorted({tail for lit, tail in items if not lit})
    if "" in ends:
        return ""
    groups: dict[str, set[tuple[str, str]]] = {}
    for lit, tail in items:
        if lit:
            groups.setdefault(lit[0], set()).add((lit[1:], tail))
    alts = [re.escape(c) + _branches(rest) for c, rest in sorted(groups.items())] + ends
    return alts[0] if len(alts) == 1 and not ends else "(?:" + "|".join(alts) + ")"


_FOREIGN_HINT = re.compile(_branches((w, _IN_CONTEXT) for w in _FOREIGN_KEYWORDS))


def _hint(extra_keys: Iterable[str] = ()) -> re.Pattern[str]:
    """The cheap first scan: a keyword in context (``_KEYWORDS`` and the extra keys, loosely
    spelt), a hint word (``_HINT_WORDS``) or a ``.pgpass`` port field, in one trie."""
    words = {*_KEYWORDS, *(_loose(k) for k in extra_keys)}
    loose = sorted((w for w in words if "[" in w), key=len, reverse=True)  # regexes of extra keys
    literal = [(w, _IN_CONTEXT) for w in words if "[" not in w]
    plain = [(w, "") for w in _HINT_WORDS]
    pattern = _branches([*literal, *plain, (":", r"\d{1,5}:")])
    if loose:
        pattern += "|(?:" + "|".join(loose) + ")" + _IN_CONTEXT
    return re.compile(pattern)


_MAX_DEPTH = 32
#: ``ord("\\")``: ``_BACKSLASH in dumped`` is ``b"\\" in dumped``, but a bytes object asked
#: for a bytes needle first tries it as an integer, and raises and clears a TypeError
#: (about 2,000 instructions under callgrind, once per value the audit writer scans)
_BACKSLASH = 92
_MAX_EMBEDDED_JSON = 1_000_000  # longer strings are scanned as text only
_SPACE = frozenset(" \t\r\n")
# A JSON object key in a compact dump: a string followed by a colon. Strings inside
# values can look like keys too; that only sends the value down the slow path. Dumps
# with a backslash never get here, so a dump holds no line break (JSON escapes it), and
# the patterns stop at one: dumps checked together one per line (``Redactor.scan_many``)
# give each what it alone gives.
_JSON_KEY = re.compile(r'"([^"\n]*)":')
_PAIR_HEAD = re.compile(r'\["([^"\n]{1,99})",')
_NAMED = re.compile(r'"(?:name|key|header|field|id)":"([^"\n]{1,99})"')
_GLOBAL_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")


def _scoped(pattern: str) -> str:
    """Make a pattern safe inside an alternation: global flags scoped, groups unnamed."""
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)
    pattern = re.sub(r"\(\?P=\w+\)", "", pattern)
    match = _GLOBAL_FLAGS.match(pattern)
    if match:
        return f"(?{match.group(1)}:{pattern[match.end():]})"
    return f"(?:{pattern})"


class Redactor:
    """Masks secrets in nested JSON-like data and in text, for one Reach.

    ``extra_keys`` add secret key names (matched after the same normalisation, also
    inside longer names); ``extra_patterns`` add regexes (the group ``secret``, when
    present, is masked, else the whole match); :meth:`add_rule` adds a function
    ``text -> text`` that runs after the built-in rules.
    """

    def __init__(self, extra_keys: Iterable[str] = (), extra_patterns: Iterable[str] = ()) -> None:
        #: the exact secret values reach was configured with (see ``reach_core.known_secrets``)
        self.known = KnownSecrets()
        self._extra_keys: frozenset[str] = frozenset()
        self._extra_patterns: list[str] = []
        self._rules: list[Callable[[str], str]] = []
        self._compile()
        self.add(keys=extra_keys, patterns=extra_patterns)

    # -- configuration ---------------------------------------------------------
    def add(self, *, keys: Iterable[str] = (), patterns: Iterable[str] = (), values: Iterable[str] = ()) -> None:
        """Add secret key names, regexes and exact secret values (a plugin's or the configuration's own).

        ``values`` are masked wherever they turn up, in every spelling
        :mod:`reach_core.known_secrets` knows (encoded, escaped, cut)."""
        if self.known.add(values):
            self._key_cache.clear()  # keys are redacted text too
        keys, patterns = list(keys), list(patterns)
        if not keys and not patterns:
            return
        for p in patterns:
            re.compile(p)  # a bad regex fails here, naming itself
        self._extra_keys = self._extra_keys | frozenset("".join(key_words(k)) for k in keys if key_words(k))
        self._extra_patterns.extend(p for p in patterns if p not in self._extra_patterns)
        self._compile()

    def add_rule(self, rule: Callable[[str], str]) -> None:
        """Add a function that takes text (already redacted by the built-in rules) and returns it masked."""
        self._rules.append(rule)
        self._fast = False

    def _compile(self) -> None:
        extra = self._extra_patterns
        self._patterns = [re.compile(p) for p in (*_PATTERNS, *extra)]
        self._hint = _hint(self._extra_keys)
        self._extra_any = re.compile("|".join(_scoped(p) for p in extra)) if extra else None
        self._key_cache: dict[Any, tuple[bool, str]] = {}
        # Scanning a whole dump equals scanning each string only for patterns that do
        # not look at string boundaries; anchored extra patterns turn the fast path off.
        # (Known secrets are cut at string boundaries too: :meth:`scan` leaves them to the walk.)
        self._fast = not self._rules and not any(re.search(r"\^|\$|\\A|\\Z|\(\?<[=!]", p) for p in extra)

    # -- decisions -------------------------------------------------------------
    def _key(self, key: Any) -> tuple[bool, str]:
        """(is the value under ``key`` secret, ``key`` itself redacted), cached."""
        cached = self._key_cache.get(key)
        if cached is not None:
            return cached
        text = key if type(key) is str else str(key)
        decision = (key_is_secret(text, self._extra_keys), self.text(text))
        if len(self._key_cache) < 4096:
            self._key_cache[key] = decision
        return decision

    def is_secret_key(self, key: Any) -> bool:
        """True when a value stored under ``key`` must never be written down."""
        if not isinstance(key, str):
            return False
        return self._key(key)[0]

    # -- text ------------------------------------------------------------------
    def text(self, value: str) -> str:
        """``value`` with every secret the text rules recognise replaced by ``[REDACTED]``
        (and every known secret value, in any spelling)."""
        if self.known:
            return self.known.mask(self._rules_text(value))
        return self._rules_text(value)

    def _rules_text(self, value: str) -> str:
        # JSON inside a string (a request body, a header list, an env dump): decided by its
        # structure, as for data, so escaped keys ("\u043f...") and name/value pairs are seen
        inner = _embedded_json(value)
        if inner is not None:
            masked = self.value(inner)
            if masked != inner:
                return orjson.dumps(masked).decode()
        elif "{" in value or "[" in value:
            value = self._json_in_text(value)  # "request failed: {...} (retrying)"
        if _escaped(value):
            value = self._escaped_secrets(value)  # keys and values hidden by escapes: %5F, \u0022, &#95;
        if not self._maybe(value) and not self._rules:
            if "%" in value and self._maybe(unquote(value)):
                return self._text(value)  # a key spelt with percent escapes: "pass%77ord=", "api%5Fkey="
            if value.isascii():
                return value
            skel = skeleton(value)
            if skel == value or not self._maybe(skel):
                return value
            return self._text(skel)  # a secret hidden by look-alike or invisible characters
        out = self._text(value)
        if out == value and not value.isascii():
            skel = skeleton(value)
            if skel != value:
                masked = self._text(skel)
                if masked != skel:
                    return masked
        return out

    def _json_in_text(self, value: str) -> str:
        """``value`` with each JSON object or array written inside it (a sentence, a log line)
        masked by its structure, as :meth:`value` masks data: ``{"name": "DB_PASSWORD",
        "value": ...}`` and ``{"api_keys": [...]}`` have no ``key=value`` shape for the text
        rules. Parsing is bounded: failed attempts may read at most twice the text."""
        spans: list[tuple[int, int, str]] = []
        for start, end, obj in _json_spans(value):
            masked = self.value(obj)
            if masked != obj:
                spans.append((start, end, orjson.dumps(masked).decode()))
        if not spans:
            return value
        parts, pos = [], 0
        for start, end, text in spans:
            parts += [value[pos:start], text]
            pos = end
        parts.append(value[pos:])
        return "".join(parts)

    def _escaped_secrets(self, value: str) -> str:
        """``value`` with the secrets its escapes hide masked in every spelling: the text is
        decoded (percent escapes, JSON's ``\\"`` and ``\\u0022``, HTML references, up to three
        layers), the decoded text's secrets found by the same rules, and each of them masked
        in the original wherever and however it is written (``KnownSecrets``)."""
        decoded = _unescape(value)
        if decoded == value:
            return value
        found = [s for s in self.secrets_in(decoded) if MASK not in s]
        if not found:
            return value
        known = KnownSecrets()
        if known.add(found):
            value = known.mask(value)
        for short in (s for s in found if len(s) < 6):
            value = value.replace(short, MASK)
        return value

    def _maybe(self, value: str) -> bool:
        """Could any rule mask something in ``value``? (False is certain, True is a guess.)"""
        low = value.lower()
        if self._hint.search(low) is not None:
            return True
        if not value.isascii() and _FOREIGN_HINT.search(low) is not None:
            return True
        return self._extra_any is not None and self._extra_any.search(value) is not None

    def _text(self, value: str, found: list[str] | None = None) -> str:
        spans: list[tuple[int, int]] = []
        for pattern in (_PAIR, _FLAG):
            run = [0, 0]
            for m in pattern.finditer(value):
                name = m.group("k")
                if self._key(unquote(name) if "%" in name else name)[0]:
                    spans.append(_value_span(value, m.end(), run))
        for m in _XML.finditer(value):
            if self._key(m.group("k"))[0]:
                spans.append(m.span("v"))
        for command, flag in _COMMAND_SECRETS:
            spans += _command_spans(value, command, flag)
        for pattern in self._patterns:
            groups = pattern.groupindex
            for m in pattern.finditer(value):
                named = [g for g in ("s", "s2", "secret") if g in groups and m.group(g) is not None]
                spans.append(m.span(named[0]) if named else m.span())
        if found is not None:
            found.extend(value[a:b] for a, b in spans)
        out = mask_spans(value, spans)
        for rule in self._rules:
            out = rule(out)
        return out

    def secrets_in(self, data: Any) -> list[str]:
        """The secrets ``data`` holds, as text (values under secret keys, pattern matches).

        What a call's arguments reveal lets the rest of its record be scrubbed of the
        same strings: an error message that echoes a wrongly typed password, a result
        that greets the user with it. Strings shorter than 4 characters are left out
        (masking every "x" would mangle the record).
        """
        found: list[str] = []
        self._secrets_in(data, found, 0)
        return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)

    def _secrets_in(self, data: Any, found: list[str], depth: int) -> None:
        if depth >= _MAX_DEPTH or len(found) > 1000:
            return
        if isinstance(data, str):
            inner = _embedded_json(data)
            if inner is not None:
                self._secrets_in(inner, found, depth + 1)
            elif "{" in data or "[" in data:
                for _start, _end, obj in _json_spans(data):
                    self._secrets_in(obj, found, depth + 1)
            self._text(data, found)
        elif isinstance(data, Mapping):
            for k, v in data.items():
                if self._key(k)[0]:
                    _leaves(v, found, depth)
                else:
                    self._secrets_in(v, found, depth + 1)
            if "value" in data and self._names_secret(data):
                _leaves(data["value"], found, depth)
        elif isinstance(data, list | tuple):
            if len(data) == 2 and isinstance(data[0], str) and len(data[0]) < 100 and self._key(data[0])[0]:
                _leaves(data[1], found, depth)
                return
            for v in data:
                self._secrets_in(v, found, depth + 1)

    def scrub(self, data: Any, secrets: list[str], _depth: int = 0) -> Any:
        """``data`` (already redacted) with every occurrence of ``secrets`` masked too."""
        if not secrets:
            return data
        if isinstance(data, str):
            for secret in secrets:
                if secret in data:
                    data = data.replace(secret, MASK)
            return data
        if _depth >= _MAX_DEPTH:
            return data
        if isinstance(data, dict):
            return {self.scrub(k, secrets): self.scrub(v, secrets, _depth + 1) for k, v in data.items()}
        if isinstance(data, list):
            return [self.scrub(v, secrets, _depth + 1) for v in data]
        if isinstance(data, int | float) and not isinstance(data, bool) and str(data) in secrets:
            return MASK
        return data

    # -- data ------------------------------------------------------------------
    def value(self, data: Any, _depth: int = 0) -> Any:
        """A redacted copy of JSON-like ``data``: secret keys' values masked, every string
        (and every key) run through :meth:`text`."""
        kind = type(data)
        if kind is str:
            return self.text(data)
        if data is None or kind is bool:
            return data
        if kind is int or kind is float:
            return MASK if self.known and str(data) in self.known.values else data
        if _depth >= _MAX_DEPTH:
            return "[TOO DEEP]"
        if kind is dict or isinstance(data, Mapping):
            out = {}
            for k, v in data.items():
                secret, name = self._key(k)
                out[name] = MASK if secret else self.value(v, _depth + 1)
            if "value" in out and out["value"] != MASK and self._names_secret(data):
                out["value"] = MASK  # {"name": "DB_PASSWORD", "value": ...}: a form field, an env entry
            return out
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, bool | int | float):
            return data
        if isinstance(data, list | tuple | set | frozenset):
            if len(data) == 2 and not isinstance(data, set | frozenset):
                name = data[0]  # type: ignore[index]
                if isinstance(name, str) and len(name) < 100 and self._key(name)[0]:
                    return [self.text(name), MASK]  # ("Authorization", "...") header pairs
            return [self.value(v, _depth + 1) for v in data]
        if isinstance(data, bytes | bytearray):
            return f"[{len(data)} bytes]"
        return self.text(str(data))

    def _names_secret(self, data: Mapping[Any, Any]) -> bool:
        for field in ("name", "key", "header", "field", "id"):
            name = data.get(field)
            if isinstance(name, str) and len(name) < 100 and self._key(name)[0]:
                return True
        return False

    def __call__(self, data: Any) -> Any:
        """Redact ``data`` (text or JSON-like data)."""
        return self.value(data)

    def scan(self, data: Any) -> bytes | None:
        """The compact JSON of ``data`` when it holds nothing to redact, else ``None``.

        The fast path of bulk writers: one dump and C-level regex scans instead of a
        Python walk. It may answer ``None`` for clean data (a string that merely looks
        like a key); never the JSON of data that holds a secret, because every key
        of the dump and every pattern is checked on it.
        """
        if not self._fast or self.known:
            return None
        try:
            dumped = orjson.dumps(data)
        except TypeError:  # not plain JSON data: let value() walk it
            return None
        if _BACKSLASH in dumped:  # escapes (quotes, newlines) could hide a pattern from the scan
            return None
        return dumped if self._clean_dump(dumped.decode("utf-8")) else None

    def _clean_dump(self, text: str) -> bool:
        """Does a compact JSON dump without escapes pass every check of :meth:`scan`? (Or
        several ASCII ones, one per line, with no extra patterns: does every one pass?)"""
        extra = self._extra_any
        if self._hint.search(text.lower()) is not None or (extra is not None and extra.search(text) is not None):
            return False
        if not text.isascii() and _FOREIGN_HINT.search(text.lower()) is not None:
            return False
        if not text.isascii() and skeleton(text) != text:
            return False
        if _escaped(text) and self._hint.search(_unescape(text).lower()) is not None:
            return False  # "q":"api_key%3D...": a pair the escapes hide
        key = self._key
        for name in set(_JSON_KEY.findall(text)):
            if key(name)[0]:
                return False
        if "[" in text:  # ["Authorization", "..."]: the walk masks such pairs
            for name in set(_PAIR_HEAD.findall(text)):
                if key(name)[0]:
                    return False
        if '"value":' in text:  # {"name": "DB_PASSWORD", "value": ...}
            for name in set(_NAMED.findall(text)):
                if key(name)[0]:
                    return False
        return True

    # -- many values at once (bulk writers) --------------------------------------
    def scan_many(self, values: Sequence[Any]) -> list[bytes | None]:
        """``[self.scan(v) for v in values]``, with one set of scans for all the clean ones.

        The dumps of dicts and lists are checked together, one per line: a compact dump
        without escapes holds no line break, so a key, pair head or ``"value"`` name
        found in the lines is exactly one found in a dump (their patterns cannot
        cross a line), and every hint match of a dump is a hint match of the
        lines (it needs only its own characters; a dump starts and ends with a
        bracket, so no ``\\b`` at its edges changes). A hint spanning two lines only
        costs a second look. So when the lines pass, each dump passes :meth:`scan` and
        is its answer; when they do not, the halves are checked again, down to single
        values (exactly :meth:`scan`), each step through :meth:`_clean_dump`. Only
        ASCII dumps without escapes are joined; other values, and all values of a
        redactor with extra patterns (a lookahead may look past a value's end), get
        :meth:`scan`.
        """
        if not self._fast or self._extra_any is not None or self.known:
            return [self.scan(v) for v in values]
        out: list[bytes | None] = [None] * len(values)
        joined: list[tuple[int, bytes]] = []
        dumps = orjson.dumps
        for i, v in enumerate(values):
            kind = type(v)
            if kind is dict or kind is list:
                try:
                    dumped = dumps(v)
                except TypeError:
                    continue  # scan() answers None too
                if _BACKSLASH not in dumped and dumped.isascii():
                    joined.append((i, dumped))
                    continue
            out[i] = self.scan(v)
        if joined:
            self._scan_joined(joined, out)
        return out

    def _scan_joined(self, items: list[tuple[int, bytes]], out: list[bytes | None]) -> None:
        if len(items) == 1:
            i, dumped = items[0]
            out[i] = dumped if self._clean_dump(dumped.decode("ascii")) else None
            return
        if self._clean_dump(b"\n".join([d for _, d in items]).decode("ascii")):
            for i, dumped in items:
                out[i] = dumped
            return
        mid = len(items) // 2
        self._scan_joined(items[:mid], out)
        self._scan_joined(items[mid:], out)

    def texts(self, values: Sequence[str]) -> list[str]:
        """``[self.text(v) for v in values]``, with one hint scan for all the plain ones.

        :meth:`text` returns an ASCII string that holds no JSON as it is when the hint
        finds nothing in it; the hint finds in the strings joined by ``\\x00`` every
        match it finds in one of them (no match needs what follows or precedes a
        string, and ``\\b`` sees a non-word character either way). When the joined
        text has a hint, its halves are checked again, down to :meth:`text` itself.
        Extra patterns and rules, and other strings, take :meth:`text` one by one.
        """
        if self._rules or self._extra_any is not None or self.known:
            return [self.text(v) for v in values]
        out = list(values)
        plain: list[int] = []
        for i, v in enumerate(values):
            if type(v) is str and v.isascii() and "{" not in v and "[" not in v and (  # not _escaped(v), inline
                    "%" not in v and "\\" not in v and "&" not in v or _ESCAPE_HINT.search(v) is None):
                plain.append(i)
            else:
                out[i] = self.text(v)
        if plain:
            self._texts_joined(plain, values, out)
        return out

    def _texts_joined(self, idx: list[int], values: Sequence[str], out: list[str]) -> None:
        if len(idx) == 1:
            out[idx[0]] = self.text(values[idx[0]])
            return
        if self._hint.search("\x00".join([values[i] for i in idx]).lower()) is None:
            return  # every one of them stays as it is (out already holds them)
        mid = len(idx) // 2
        self._texts_joined(idx[:mid], values, out)
        self._texts_joined(idx[mid:], values, out)

    def structlog_processor(
        self, _logger: Any, _method: str, event_dict: MutableMapping[str, Any],
    ) -> MutableMapping[str, Any]:
        """A structlog processor: add it to any logger chain to redact its events too."""
        return self.value(event_dict)  # type: ignore[no-any-return]


# Escapes that can hide a key or a value from the text rules: %XX, \uXXXX, \", \xXX, &#NN;
_ESCAPE_HINT = re.compile(r"%[0-9A-Fa-f]{2}|\\+(?:u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|\")|&#(?:[0-9]+|[xX][0-9A-Fa-f]+);")


def _escaped(text: str) -> bool:
    """``_ESCAPE_HINT.search(text) is not None``, asked only of text holding a character a
    match starts with (``%``, ``\\``, ``&``: one per alternative, see
    tests/test_redact_escape_hint.py): most text has none, and three substring tests (C
    loops over the text) cost a fraction of a regex search, most of all on the short
    strings (call ids) the audit writer checks by the thousand (``texts`` has it inline)."""
    return ("%" in text or "\\" in text or "&" in text) and _ESCAPE_HINT.search(text) is not None


_JSON_ESCAPE = re.compile(r"\\+(?:u([0-9A-Fa-f]{4})|x([0-9A-Fa-f]{2})|([\"/']))")
_JSON_START = re.compile(r"[{\[]\s*[\"{\[]")


def _unescape(text: str) -> str:
    """``text`` with up to three layers of percent, JSON/C and HTML escapes undone."""
    import html

    for _ in range(3):
        before = text
        if "%" in text:
            text = unquote(text, errors="replace")
        if "\\" in text:
            text = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)) if m.group(3) is None
                                    else m.group(3), text)
        if "&#" in text:
            text = html.unescape(text)
        if text == before:
            break
    return text


def _json_spans(value: str) -> Iterable[tuple[int, int, Any]]:
    """``(start, end, parsed)`` of each JSON object or array inside ``value`` (not overlapping).
    Failed parses may read at most twice the text in total, so the scan stays linear."""
    import json

    decoder = json.JSONDecoder()
    budget = 2 * len(value) + 1000
    pos = 0
    while budget > 0 and (m := _JSON_START.search(value, pos)) is not None:
        start = m.start()
        try:
            obj, end = decoder.raw_decode(value, start)
        except ValueError as exc:
            budget -= max(1, getattr(exc, "pos", start + 1) - start)
            pos = start + 1
            continue
        except RecursionError:
            return
        budget -= end - start
        if isinstance(obj, dict | list):
            yield start, end, obj
        pos = end


def _embedded_json(value: str) -> dict[str, Any] | list[Any] | None:
    """The object or array a string holds as JSON (``None`` for any other string)."""
    head = value[:1] if value[:1] not in _SPACE else value.lstrip()[:1]
    if head not in ("{", "[") or len(value) > _MAX_EMBEDDED_JSON:
        return None
    try:
        inner = orjson.loads(value)
    except ValueError:
        return None
    return inner if isinstance(inner, dict | list) else None


def _leaves(value: Any, found: list[str], depth: int) -> None:
    """Every scalar under a secret key, as text (and a container as its JSON too)."""
    if depth >= _MAX_DEPTH:
        return
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        found.append(str(value))
    elif isinstance(value, Mapping):
        for v in value.values():
            _leaves(v, found, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            _leaves(v, found, depth + 1)


def _loose(joined: str) -> str:
    """``"nationalid"`` → a regex that also finds ``national_id``, ``National-ID``."""
    return r"[\W_]*".join(re.escape(ch) for ch in joined)


class RedactingLogger:
    """A structlog bound logger whose every event and bound value is redacted first.

    Independent of the structlog configuration (processors the host or a test sets
    later still run), so no configuration can let a core event through unmasked.
    """

    __slots__ = ("_logger", "_redactor")

    def __init__(self, logger: Any, redactor: Redactor) -> None:
        self._logger = logger
        self._redactor = redactor

    def bind(self, **values: Any) -> RedactingLogger:
        return RedactingLogger(self._logger.bind(**self._redactor.value(values)), self._redactor)

    def new(self, **values: Any) -> RedactingLogger:
        return RedactingLogger(self._logger.new(**self._redactor.value(values)), self._redactor)

    def unbind(self, *keys: str) -> RedactingLogger:
        return RedactingLogger(self._logger.unbind(*keys), self._redactor)

    def try_unbind(self, *keys: str) -> RedactingLogger:
        return RedactingLogger(self._logger.try_unbind(*keys), self._redactor)

    def _emit(self, method: str, event: Any, kw: dict[str, Any]) -> Any:
        r = self._redactor
        if isinstance(event, str):
            event = r.text(event)
        return getattr(self._logger, method)(event, **r.value(kw))

    def debug(self, event: Any = None, **kw: Any) -> Any:
        return self._emit("debug", event, kw)

    def info(self, event: Any = None, **kw: Any) -> Any:
        return self._emit("info", event, kw)

    def warning(self, event: Any = None, **kw: Any) -> Any:
        return self._emit("warning", event, kw)

    warn = warning

    def error(self, event: Any = None, **kw: Any) -> Any:
        return self._emit("error", event, kw)

    def exception(self, event: Any = None, **kw: Any) -> Any:
        return self._emit("exception", event, kw)

    def critical(self, event: Any = None, **kw: Any) -> Any:
        return self._emit("critical", event, kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)
