"""A small local weather service for demos and tests, standard library only.

It answers three kinds of request with deterministic data for a fixed set of
cities (``demo_data.CITIES``):

- ``GET /v1/search?name=..&count=..&language=..``: Open-Meteo geocoding shape;
- ``GET /v1/forecast?latitude=..&longitude=..&current=..&daily=..``: Open-Meteo
  forecast shape (``temperature_unit``, ``wind_speed_unit``, ``forecast_days``);
- ``GET /weather/{city}``: the seed article's route, e.g. ``{"city": "北京",
  "temperature": 21, "humidity": 45, "condition": "晴"}``; other cities get
  404 ``{"error": "city not found"}``.

So one server is both the geocoding and the forecast base URL of reach-weather
and the backend of the article's own connector code. It runs a
``ThreadingHTTPServer`` in a daemon thread: it starts in milliseconds and
needs no event loop, so sync tests, async tests and the CLI share it.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import socket
import sys
import threading
import time
import unicodedata
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .demo_data import ARTICLE_CONDITIONS, CITIES, DemoCity

_CURRENT_VARS = ("temperature_2m", "relative_humidity_2m", "weather_code", "wind_speed_10m")
_CURRENT_UNITS = {"relative_humidity_2m": "%", "weather_code": "wmo code"}
_DAILY_VARS = (
    "weather_code",
    "temperature_2m_max",
    "temperature_2m_min",
    "precipitation_probability_max",
    "precipitation_sum",
    "wind_speed_10m_max",
)
_WIND = {"kmh": (1.0, "km/h"), "ms": (1 / 3.6, "m/s"), "mph": (1 / 1.609344, "mp/h"), "kn": (1 / 1.852, "kn")}


def _norm(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if ch.isalnum() and not unicodedata.combining(ch))


def search(name: str, count: int = 10, language: str = "en", *, fuzzy: bool = True) -> dict[str, Any]:
    """Geocoding answer for ``name``, like Open-Meteo's: under two characters
    nothing, two characters exact names only, from three on exact names, then
    prefixes, then (``fuzzy``) near spellings."""
    query = _norm(name)
    exact: list[DemoCity] = []
    prefix: list[DemoCity] = []
    near: list[tuple[float, DemoCity]] = []
    if len(query) >= 2:
        for city in CITIES:
            names = [_norm(n) for n in city.names()]
            if query in names:
                exact.append(city)
            elif len(query) >= 3 and any(n.startswith(query) for n in names):
                prefix.append(city)
            elif fuzzy and len(query) >= 3:
                ratio = max(difflib.SequenceMatcher(None, query, n).ratio() for n in names)
                if ratio >= 0.75:
                    near.append((ratio, city))
    near.sort(key=lambda item: -item[0])
    found = (exact + prefix + [city for _, city in near])[: max(1, min(count, 100))]
    body: dict[str, Any] = {"generationtime_ms": 0.1}
    if found:
        body["results"] = [_place(city, language) for city in found]
    return body


def _place(city: DemoCity, language: str) -> dict[str, Any]:
    zh = language.startswith("zh")
    return {
        "id": city.id,
        "name": city.name_zh if zh else city.name,
        "latitude": city.latitude,
        "longitude": city.longitude,
        "elevation": city.elevation,
        "feature_code": "PPLC" if city.country_code in {"CN", "JP", "GB", "FR"} else "PPL",
        "country_code": city.country_code,
        "timezone": city.timezone,
        "population": city.population,
        "country": city.country_zh if zh else city.country,
    }


def _nearest(latitude: float, longitude: float) -> DemoCity | None:
    best = min(CITIES, key=lambda c: (c.latitude - latitude) ** 2 + (c.longitude - longitude) ** 2)
    if abs(best.latitude - latitude) <= 0.5 and abs(best.longitude - longitude) <= 0.5:
        return best
    return None


def _anywhere(latitude: float, longitude: float) -> DemoCity:
    """Plausible, deterministic weather for coordinates outside the city list."""
    temperature = round(27 - abs(latitude) * 0.4)
    return DemoCity(0, "", "", (), "", "", "", latitude, longitude, "GMT", round(longitude / 15),
                    0, 0, temperature, 60, 1, 10.0, (2, 3, 1, 0))


class BadRequest(ValueError):
    """A request Open-Meteo itself would refuse with 400 and a reason."""


def forecast(params: dict[str, str], now: datetime | None = None) -> dict[str, Any]:
    """Forecast answer in Open-Meteo's shape for the given query parameters."""
    try:
        latitude = float(params["latitude"])
        longitude = float(params["longitude"])
    except (KeyError, ValueError) as exc:
        raise BadRequest("Parameter 'latitude' and 'longitude' must be numbers") from exc
    if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
        raise BadRequest("Latitude must be in range of -90 to 90°. Longitude in -180 to 180°.")
    try:
        days = int(params.get("forecast_days", "7"))
    except ValueError as exc:
        raise BadRequest("Parameter 'forecast_days' must be an integer") from exc
    if not 0 <= days <= 16:
        raise BadRequest("Forecast days is invalid. Allowed range 0 to 16.")
    fahrenheit = params.get("temperature_unit", "celsius") == "fahrenheit"
    wind_factor, wind_unit = _WIND.get(params.get("wind_speed_unit", "kmh"), _WIND["kmh"])
    temp_unit = "°F" if fahrenheit else "°C"

    def temp(celsius: float) -> float:
        return round(celsius * 9 / 5 + 32, 1) if fahrenheit else round(float(celsius), 1)

    city = _nearest(latitude, longitude) or _anywhere(latitude, longitude)
    offset = timedelta(hours=city.utc_offset_hours)
    local = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None) + offset
    local = local.replace(minute=local.minute - local.minute % 15, second=0, microsecond=0)

    body: dict[str, Any] = {
        "latitude": latitude,
        "longitude": longitude,
        "generationtime_ms": 0.1,
        "utc_offset_seconds": int(offset.total_seconds()),
        "timezone": city.timezone,
        "timezone_abbreviation": city.timezone,
        "elevation": city.elevation,
    }
    current_vars = [v for v in params.get("current", "").split(",") if v]
    if current_vars:
        values = {
            "temperature_2m": temp(city.temperature),
            "relative_humidity_2m": city.humidity,
            "weather_code": city.weather_code,
            "wind_speed_10m": round(city.wind * wind_factor, 1),
        }
        units = {"temperature_2m": temp_unit, "wind_speed_10m": wind_unit, **_CURRENT_UNITS}
        unknown = [v for v in current_vars if v not in values]
        if unknown:
            raise BadRequest(f"Cannot initialize WeatherVariable from invalid String value {unknown[0]}")
        body["current_units"] = {"time": "iso8601", "interval": "seconds"} | {v: units[v] for v in current_vars}
        body["current"] = {"time": local.strftime("%Y-%m-%dT%H:%M"), "interval": 900} | {
            v: values[v] for v in current_vars
        }
    daily_vars = [v for v in params.get("daily", "").split(",") if v]
    if daily_vars:
        unknown = [v for v in daily_vars if v not in _DAILY_VARS]
        if unknown:
            raise BadRequest(f"Cannot initialize WeatherVariable from invalid String value {unknown[0]}")
        codes = [city.weather_code] + [city.week[i % len(city.week)] for i in range(days - 1)]
        codes = codes[:days]
        columns: dict[str, list[Any]] = {
            "weather_code": codes,
            "temperature_2m_max": [temp(city.temperature + 3 - i % 3) for i in range(days)],
            "temperature_2m_min": [temp(city.temperature - 7 + i % 2) for i in range(days)],
            "precipitation_probability_max": [85 if c >= 51 else 5 + 5 * (i % 3) for i, c in enumerate(codes)],
            "precipitation_sum": [4.2 if c >= 61 else 1.1 if c >= 51 else 0.0 for c in codes],
            "wind_speed_10m_max": [round((city.wind + 4 + i % 4) * wind_factor, 1) for i in range(days)],
        }
        units = {
            "weather_code": "wmo code",
            "temperature_2m_max": temp_unit,
            "temperature_2m_min": temp_unit,
            "precipitation_probability_max": "%",
            "precipitation_sum": "mm",
            "wind_speed_10m_max": wind_unit,
        }
        body["daily_units"] = {"time": "iso8601"} | {v: units[v] for v in daily_vars}
        body["daily"] = {"time": [(local.date() + timedelta(days=i)).isoformat() for i in range(days)]} | {
            v: columns[v] for v in daily_vars
        }
    return body


def article_weather(city_name: str) -> dict[str, Any] | None:
    """The seed article's answer for ``city_name`` (Chinese or English), or None."""
    key = _norm(city_name)
    for city in CITIES:
        if city.article and key in {_norm(n) for n in city.names()}:
            return {
                "city": city.name_zh,
                "temperature": int(city.temperature),
                "humidity": city.humidity,
                "condition": ARTICLE_CONDITIONS[city.weather_code],
            }
    return None


class _Handler(BaseHTTPRequestHandler):
    server: _DemoHTTPServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm on, a
    # kept-alive client waits for a delayed ACK (~40 ms) on every answer.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.server.requests.append(self.path)
        failure = self.server.take_failure()
        if failure is not None:
            self._send(failure, {"error": True, "reason": "injected failure"}, {"Retry-After": "0"})
            return
        if self.server.delay:
            time.sleep(self.server.delay)
        parts = urlsplit(self.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = parts.path.rstrip("/")
        if path == "/v1/search":
            try:
                count = int(params.get("count", "10"))
            except ValueError:
                count = 10
            self._send(200, search(
                params.get("name", ""), count, params.get("language", "en"), fuzzy=self.server.fuzzy
            ))
        elif path == "/v1/forecast":
            try:
                self._send(200, forecast(params))
            except BadRequest as exc:
                self._send(400, {"error": True, "reason": str(exc)})
        elif path.startswith("/weather/"):
            answer = article_weather(unquote(path[len("/weather/"):]))
            if answer is None:
                self._send(404, {"error": "city not found"})
            else:
                self._send(200, answer)
        elif path == "":
            self._send(200, {
                "service": "reach-weather demo",
                "routes": ["/v1/search", "/v1/forecast", "/weather/{city}"],
                "cities": [c.name for c in CITIES],
            })
        else:
            self._send(404, {"error": True, "reason": "Not Found"})

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.verbose:
            super().log_message(format, *args)


class _DemoHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], verbose: bool = False) -> None:
        super().__init__(address, _Handler)
        self.verbose = verbose
        self.requests: list[str] = []
        self.delay = 0.0
        self.fuzzy = True
        self._failures: list[int] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, address = super().get_request()
        with self._lock:
            self._open.add(conn)
        return conn, address

    def shutdown_request(self, request: Any) -> None:
        with self._lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a timed-out call, a dropped connection) is routine, not a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def drop_connections(self) -> None:
        """End kept-alive connections too: a closed server must not answer at all."""
        with self._lock:
            open_now, self._open = list(self._open), set()
        for conn in open_now:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def take_failure(self) -> int | None:
        with self._lock:
            return self._failures.pop(0) if self._failures else None

    def add_failures(self, count: int, status: int) -> None:
        with self._lock:
            self._failures.extend([status] * count)


class DemoServer:
    """Handle on a running demo service: ``url``, ``close()``, a context manager.

    ``requests`` lists the paths served so far; ``fail_next``, ``delay`` and
    ``fuzzy`` let tests play an unreliable or plainer upstream with the same
    real server.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> None:
        self._server = _DemoHTTPServer((host, port), verbose=verbose)
        address = self._server.server_address
        self.host = str(address[0])
        self.port = int(address[1])
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> DemoServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"reach-weather-demo:{self.port}", daemon=True,
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the CLI's mode)."""
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._server.drop_connections()
            self._server.server_close()

    @property
    def requests(self) -> list[str]:
        return self._server.requests

    def fail_next(self, count: int = 1, status: int = 503) -> None:
        """Answer the next ``count`` requests with ``status`` (503: a busy upstream)."""
        self._server.add_failures(count, status)

    @property
    def delay(self) -> float:
        return self._server.delay

    @delay.setter
    def delay(self, seconds: float) -> None:
        """Seconds every answer waits before it is computed (a slow upstream)."""
        self._server.delay = seconds

    @property
    def fuzzy(self) -> bool:
        return self._server.fuzzy

    @fuzzy.setter
    def fuzzy(self, value: bool) -> None:
        """Whether geocoding offers near spellings (Open-Meteo does from three characters)."""
        self._server.fuzzy = value

    def settings(self) -> dict[str, str]:
        """``[plugins.reach-weather]`` settings that point the plugin at this server."""
        return {"geocoding_url": self.url, "forecast_url": self.url}

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.drop_connections()
        self._server.server_close()

    def __enter__(self) -> DemoServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_demo_server(host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False) -> DemoServer:
    """Start the demo service in a background thread; port 0 picks a free port."""
    return DemoServer(host, port, verbose=verbose).start()
