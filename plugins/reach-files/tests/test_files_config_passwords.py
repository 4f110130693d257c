"""Passwords in configuration files that hold one only sometimes are masked when read and searched.

Before, ``read_file`` showed ``config/database.yml``'s ``password: ...``, ``terraform.tfvars``'
``db_password = "..."``, a ``.properties`` file's ``spring.datasource.password=...``, a PHP
config's ``define('DB_PASSWORD', '...')`` and an INI file's ``password = ...`` as written, and
``search_files`` found them piece by piece. Now the value under a key whose name is secret is
shown as ``[REDACTED]`` in every spelling these formats allow (quoting, spacing, case, escapes in
the key, YAML anchors, tags, block and flow styles, values continued over lines, heredocs), the
rest of the file as written; honest neighbours (a key with no value, a nested mapping, a value
that names an environment variable, the same text in a ``.md``) come back byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import rooted_reach

S = "Hunter2-Zq9xVw"  # the secret
S2 = "Line2-Kp7wQa"  # its second line, where a value runs over lines

_CASES: dict[str, tuple[str, str]] = {  # id: (file, text)
    # Rails' database.yml and other YAML
    "yaml plain": ("config/database.yml",
                   "default: &default\n  adapter: postgresql\n  host: db.local\n  password: {S}\n  pool: 5\n"),
    "yaml double quotes": ("config/database.yml", 'production:\n  password: "{S}"\n  host: db.local\n'),
    "yaml escaped quote": ("config/database.yml", 'production:\n  password: "a\\"{S}"\n  host: db.local\n'),
    "yaml single quotes": ("config/database.yml", "production:\n  password: 'it''s {S}'\n  host: db.local\n"),
    "yaml upper key, spaces, comment": ("app.yaml", "PASSWORD:     {S}    # prod\nhost: db.local\n"),
    "yaml mixed case key": ("app.yaml", "DbPassword: {S}\nhost: db.local\n"),
    "yaml quoted key": ("app.yaml", '"password": {S}\nhost: db.local\n'),
    "yaml list item": ("app.yml", "users:\n  - name: a\n    password: {S}\n  - host: db.local\n"),
    "yaml flow mapping": ("app.yml", "db: {user: a, password: {S}, host: db.local}\n"),
    "yaml literal block": ("app.yml", "password: |\n  {S}\n  {S2}\nhost: db.local\n"),
    "yaml folded block": ("app.yml", "password: >-\n    {S}\n    {S2}\nhost: db.local\n"),
    "yaml value on next line": ("app.yml", "password:\n  {S}\nhost: db.local\n"),
    "yaml plain over lines": ("app.yml", "password: {S}\n  {S2}\nhost: db.local\n"),
    "yaml quoted over lines": ("app.yml", 'password: "{S}\n  {S2}"\nhost: db.local\n'),
    "yaml anchor on value": ("app.yml", "password: &pw {S}\nhost: db.local\n"),
    "yaml tag": ("app.yml", "password: !!str {S}\nhost: db.local\n"),
    "yaml alias": ("app.yml", "shared: &shared {S}\nhost: db.local\nproduction:\n  password: *shared\n"),
    "yaml crlf": ("app.yml", "password: {S}\r\nhost: db.local\r\n"),
    "yaml secret_key_base": ("config/secrets.yml", "production:\n  secret_key_base: {S}\n  host: db.local\n"),
    "yaml default after env": ("app.yml", "password: ${DB_PASSWORD:-{S}}\nhost: db.local\n"),
    "json": ("appsettings.json", '{"Db": {"Password": "{S}", "Host": "db.local"}}\n'),
    "json minified": ("config.json", '{"host":"db.local","api_key":"{S}"}'),
    # Terraform variables
    "tfvars": ("terraform.tfvars", 'region = "eu-west-1"\ndb_password = "{S}"\nhost = "db.local"\n'),
    "tfvars no spaces": ("prod.tfvars", 'db_password="{S}"\nhost="db.local"\n'),
    "tfvars auto": ("secrets.auto.tfvars", 'DB_PASSWORD   =   "{S}"\nhost = "db.local"\n'),
    "tfvars heredoc": ("terraform.tfvars", 'db_password = <<EOT\n{S}\n{S2}\nEOT\nhost = "db.local"\n'),
    "tfvars indented heredoc": ("terraform.tfvars", 'db_password = <<-EOT\n  {S}\n  EOT\nhost = "db.local"\n'),
    "tfvars map": ("terraform.tfvars", 'db = {\n  password = "{S}"\n  host = "db.local"\n}\n'),
    "tfvars inline map": ("terraform.tfvars", 'db = { password = "{S}", host = "db.local" }\n'),
    # Java properties
    "properties": ("application.properties", "spring.datasource.url=jdbc:x\nspring.datasource.password={S}\n"
                                             "host=db.local\n"),
    "properties spaces": ("application.properties", "db.password   =   {S}\nhost=db.local\n"),
    "properties colon": ("application.properties", "db.password:{S}\nhost=db.local\n"),
    "properties whitespace separator": ("application.properties", "db.password {S}\nhost=db.local\n"),
    "properties upper": ("application.properties", "DB.PASSWORD={S}\nhost=db.local\n"),
    "properties unicode escape in key": ("application.properties", "db.pass\\u0077ord={S}\nhost=db.local\n"),
    "properties continuation": ("application.properties", "db.password={S}\\\n    {S2}\nhost=db.local\n"),
    "properties keystore": ("gradle.properties", "signing.keystore.password={S}\nhost=db.local\n"),
    # INI, .cnf, TOML
    "ini": ("config.ini", "[database]\nhost = db.local\npassword = {S}\n"),
    "ini colon": ("setup.cfg", "[database]\nhost = db.local\nPassword: {S}\n"),
    "ini continuation": ("app.ini", "[database]\npassword = {S}\n    {S2}\nhost = db.local\n"),
    "my.cnf": ("conf/my.cnf", "[client]\nhost = db.local\npassword={S}\n"),
    "conf": ("app.conf", "host db.local\nauth_token = {S}\n"),
    "toml": ("config.toml", '[db]\nhost = "db.local"\npassword = "{S}"\n'),
    "toml literal string": ("config.toml", "[db]\nhost = 'db.local'\npassword = '{S}'\n"),
    "toml multiline": ("config.toml", '[db]\npassword = """\n{S}\n{S2}"""\nhost = "db.local"\n'),
    "toml dotted key": ("config.toml", 'db.password = "{S}"\nhost = "db.local"\n'),
    "toml inline table": ("config.toml", 'db = { host = "db.local", password = "{S}" }\n'),
    # PHP
    "php define": ("config.php", "<?php\ndefine('DB_HOST', 'db.local');\ndefine('DB_PASSWORD', '{S}');\n"),
    "php define double quotes, spaces": ("config.php", '<?php\ndefine( "DB_PASSWORD" ,  "{S}" );\n'
                                                       "define('DB_HOST', 'db.local');\n"),
    "php DEFINE upper": ("settings.php", "<?php\nDEFINE('db_password', '{S}');\n$host = 'db.local';\n"),
    "php array": ("config/database.php", "<?php\nreturn ['host' => 'db.local', 'password' => '{S}'];\n"),
    "php array spaces": ("config/database.php", "<?php\nreturn [\n    'host'     => 'db.local',\n"
                                                "    'password'    =>    \"{S}\",\n];\n"),
    "php subscripts": ("application/config/database.php", "<?php\n$db['default']['hostname'] = 'db.local';\n"
                                                          "$db['default']['password'] = '{S}';\n"),
    "php variable": ("inc/config.inc.php", "<?php\n$db_host = 'db.local';\n$db_password = \"{S}\";\n"),
    "php escaped quote": ("config.php", "<?php\ndefine('DB_HOST', 'db.local');\ndefine('DB_PASSWORD', 'a\\'{S}');\n"),
    "yaml list of keys": ("app.yml", "api_keys:\n  - {S}\n  - {S2}\nhost: db.local\n"),
    "yaml list at the key's indent": ("app.yml", "auth:\n  api_keys:\n  - {S}\n  - {S2}\n  host: db.local\n"),
    "yaml flow list": ("app.yml", "api_keys: [{S}, {S2}]\nhost: db.local\n"),
    "toml array": ("config.toml", 'api_keys = ["{S}", "{S2}"]\nhost = "db.local"\n'),
    # Terraform's own files and XML configs
    "tf resource": ("main.tf", 'resource "aws_db_instance" "db" {\n  password = "{S}"\n  host = "db.local"\n}\n'),
    "xml element": ("hibernate.cfg.xml", "<hibernate-configuration>\n  <host>db.local</host>\n"
                                         "  <password>{S}</password>\n</hibernate-configuration>\n"),
    "xml property": ("hibernate.cfg.xml", '<session-factory>\n'
                                          '  <property name="connection.url">db.local</property>\n'
                                          '  <property name="connection.password">{S}</property>\n'
                                          '</session-factory>\n'),
    "xml android string": ("res/values/strings.xml", '<resources>\n  <string name="host">db.local</string>\n'
                                                     '  <string name="maps_api_key">{S}</string>\n</resources>\n'),
    "xml attribute": ("conf/context.xml", '<Context>\n  <Resource name="jdbc/db" url="db.local" username="app"\n'
                                          '            password="{S}" />\n</Context>\n'),
    "xml attribute in element": ("server.xml", "<Db host='db.local' password='{S}'>x</Db>\n"),
    "xml appSettings": ("web.config", '<configuration><appSettings>\n  <add key="Host" value="db.local" />\n'
                                      '  <add key="DbPassword" value="{S}" />\n</appSettings></configuration>\n'),
    "xml connection string": ("App.config", '<connectionStrings><add name="db.local" providerName="x"\n'
                                            '  connectionString="Server=db;User Id=sa;Password={S};" />\n'
                                            '</connectionStrings>\n'),
    # under any key: a URL's userinfo or query, a connection string's password
    "yaml url userinfo": ("config/database.yml", "production:\n  url: postgres://app:{S}@db.local/app\n"),
    "yaml url token only": ("config.yml", "remote: https://{S}@db.local/app.git\n"),
    "properties jdbc query": ("application.properties",
                              "spring.datasource.url=jdbc:postgresql://db.local/app?user=app&password={S}\n"),
    "ini url": ("alembic.ini", "[alembic]\nsqlalchemy.url = postgresql://app:{S}@db.local/app\n"),
    "json connection string": ("appsettings.json", '{"ConnectionStrings": {"Default": '
                                                   '"Server=db.local;Database=app;User Id=sa;Password={S};"}}\n'),
    "yaml connection string pwd": ("app.yml", 'conn: "Server=db.local;Uid=app;PWD={S};"\n'),
    "yaml compose environment list": ("docker-compose.yml", "services:\n  db:\n    environment:\n"
                                                            "      - POSTGRES_PASSWORD={S}\n      - HOST=db.local\n"),
    "php dsn": ("config.php", "<?php\n$url = 'mysql://app:{S}@db.local/app';\n"),
    # templates and local variants, filled in with the real values
    "yaml dist": ("app/config/parameters.yml.dist", "parameters:\n  database_password: {S}\n  host: db.local\n"),
    "php example": ("config.php.example", "<?php\ndefine('DB_PASSWORD', '{S}');\ndefine('DB_HOST', 'db.local');\n"),
    "yaml erb": ("config/database.yml.erb", "production:\n  password: {S}\n  host: db.local\n"),
    "toml local": ("settings.toml.local", '[db]\npassword = "{S}"\nhost = "db.local"\n'),
    "properties template backup": ("app.properties.template.bak", "db.password={S}\nhost=db.local\n"),
    # a copy of such a file
    "yaml backup": ("config/database.yml.bak", "production:\n  password: {S}\n  host: db.local\n"),
    "yaml upper name": ("config/DATABASE.YML", "production:\n  password: {S}\n  host: db.local\n"),
}


def _body(text: str) -> str:
    return text.replace("{S}", S).replace("{S2}", S2)


def _pieces(text: str) -> list[str]:
    secrets = [S] + ([S2] if "{S2}" in text else [])
    return [p for s in secrets for p in (s, s[:7], s[7:])]


@pytest.mark.parametrize("case", sorted(_CASES))
async def test_the_password_is_masked_when_read(tmp_path: Path, case: str) -> None:
    rel, text = _CASES[case]
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(_body(text), encoding="utf-8", newline="")
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok, r.error
    content = r.content["content"]
    for piece in _pieces(text):
        assert piece not in content, (case, content)
    assert "[REDACTED]" in content and r.content["redacted"] >= 1, content
    assert "db.local" in content, content  # the rest of the file is shown
    assert (root / rel).read_bytes() == _body(text).encode()  # the file keeps it


@pytest.mark.parametrize("case", sorted(_CASES))
async def test_the_password_is_not_found_by_search(tmp_path: Path, case: str) -> None:
    rel, text = _CASES[case]
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(_body(text), encoding="utf-8", newline="")
    for piece in _pieces(text):
        r = await reach.invoke("search_files", {"text": piece})
        assert r.ok and r.content["matches"] == [], (case, piece, r.content)
        r = await reach.invoke("search_files", {"text": piece.lower(), "ignore_case": True})
        assert r.ok and r.content["matches"] == [], (case, piece, r.content)
    r = await reach.invoke("search_files", {"text": "db.local"})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel], r.content


async def test_a_symlink_to_a_config_file_is_masked_too(tmp_path: Path) -> None:
    """read_file looks at the name asked for and the name the link leads to."""
    reach, root = rooted_reach(tmp_path)
    rel, text = _CASES["yaml plain"]
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(_body(text), encoding="utf-8")
    (root / "notes.txt").symlink_to(root / rel)
    r = await reach.invoke("read_file", {"path": "notes.txt"})
    assert r.ok and S not in r.content["content"] and "[REDACTED]" in r.content["content"], r.content


@pytest.mark.parametrize("whole", [True, False])  # a file read whole, or by pages with what lies around them
async def test_a_page_cut_inside_the_password_shows_no_piece(tmp_path: Path, whole: bool) -> None:
    reach, root = rooted_reach(tmp_path, **({} if whole else {"max_search_file_bytes": 50_000}))
    head = "# " + "x" * 77 + "\n"
    text = head * 1000 + f"production:\n  password: {S}\n  host: db.local\n" + head * 1000
    (root / "database.yml").write_text(text, encoding="utf-8")
    at = text.index(S)
    for offset, size in ((at + 3, 200), (at - 10, 13), (at - 50, 5000), (at - 60_000, 60_004)):
        r = await reach.invoke("read_file", {"path": "database.yml", "offset": offset, "max_bytes": size})
        assert r.ok, r.error
        assert not any(S[i:i + 4] in r.content["content"] for i in range(len(S) - 3)), (offset, r.content)


_HONEST: dict[str, str] = {  # files that come back byte for byte
    "docs/setup.md": f"Set `password: {S}` in config/database.yml.\n",
    "README.txt": f"password = {S}\n",
    "config/database.yml": "default: &default\n  adapter: postgresql\n  username: app\n  password:\n  host: db\n",
    "config/policy.yml": "password:\n  min_length: 12\n  require_digit: true\nhost: db\n",
    "config/env.yml": "password: <%= ENV['DB_PASSWORD'] %>\ntoken: <%= ENV.fetch(\"API_TOKEN\") %>\n",
    "compose.yml": "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}\n",
    "ansible.yml": 'db_password: "{{ vault_db_password }}"\n',
    "helm/values.yaml": "password: ''\nreplicas: 2\n",
    "main.tf.tfvars": "db_password = var.db_password\n",
    "application.properties": "spring.datasource.username=app\nspring.datasource.password=${DB_PASSWORD}\n",
    "config.ini": "[database]\nhost = db.local\nuser = app\n",
    "app.cfg": "[auth]\npassword =\n",
    "config.php": "<?php\ndefine('DB_PASSWORD', getenv('DB_PASSWORD'));\n$password = $_POST['password'];\n",
    "settings.toml": '[server]\nport = 8080\nhost = "0.0.0.0"\n',
    "config/db.yml": "url: postgres://db.local/app\nrepo: ssh://git@db.local/app.git\n",
    "appsettings.json": '{"ConnectionStrings": {"Default": "Server=db.local;Integrated Security=true;"}}\n',
    "docs/database.yml.md": f"password: {S}\n",
    "config/creds.yml": "credsStore: desktop\npassword_file: /run/secrets/db\npassword_min_length: 12\n",
    "template.json": '{"refresh_token": "REFRESH_TOKEN", "password": "<your password>", "api_key": "..."}\n',
    "config/users.yml": "passwords:\n  - name: admin\n    rotate: true\n",
    "pom.xml": "<project>\n  <artifactId>db.local</artifactId>\n  <version>1.0</version>\n</project>\n",
    "web.config": '<configuration><appSettings><add key="Host" value="db.local" /></appSettings></configuration>\n',
    "package.json": '{"name": "x", "version": "1.0.0", "scripts": {"test": "pytest"}}\n',
}


@pytest.mark.parametrize("rel", sorted(_HONEST))
async def test_honest_neighbours_are_shown_as_written(tmp_path: Path, rel: str) -> None:
    reach, root = rooted_reach(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(_HONEST[rel], encoding="utf-8")
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and r.content["content"] == _HONEST[rel] and "redacted" not in r.content, r.content


async def test_allow_secret_files_shows_them(tmp_path: Path) -> None:
    reach, root = rooted_reach(tmp_path, allow_secret_files=True)
    rel, text = _CASES["yaml plain"]
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_text(_body(text), encoding="utf-8")
    r = await reach.invoke("read_file", {"path": rel})
    assert r.ok and S in r.content["content"]
    r = await reach.invoke("search_files", {"text": S})
    assert r.ok and [m["path"] for m in r.content["matches"]] == [rel]
