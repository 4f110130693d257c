"""The fixed cities of the local demo weather service.

Beijing, Shanghai and Guangzhou carry the seed article's values (21 °C / 45 % /
晴, 24 / 68 / 多云, 28 / 80 / 小雨) so the Open-Meteo-shaped answers and the
article's own ``/weather/{city}`` route agree, and a demo answer quotes them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DemoCity:
    id: int
    name: str
    name_zh: str
    aliases: tuple[str, ...]
    country: str
    country_zh: str
    country_code: str
    latitude: float
    longitude: float
    timezone: str
    utc_offset_hours: float
    elevation: float
    population: int
    temperature: float  # °C now
    humidity: int  # % now
    weather_code: int  # WMO code now (and today)
    wind: float  # km/h now
    week: tuple[int, ...]  # WMO codes for the following days, cycled
    article: bool = False  # also served on the article's GET /weather/{city}

    def names(self) -> tuple[str, ...]:
        return (self.name, self.name_zh, *self.aliases)


CITIES: tuple[DemoCity, ...] = (
    DemoCity(1816670, "Beijing", "北京", ("Peking", "北京市"), "China", "中国", "CN",
             39.9075, 116.39723, "Asia/Shanghai", 8, 49, 18960744,
             21, 45, 0, 9.4, (1, 2, 61, 0, 0, 3), article=True),
    DemoCity(1796236, "Shanghai", "上海", ("上海市",), "China", "中国", "CN",
             31.22222, 121.45806, "Asia/Shanghai", 8, 12, 24874500,
             24, 68, 2, 12.6, (3, 61, 63, 2, 1, 0), article=True),
    DemoCity(1809858, "Guangzhou", "广州", ("Canton", "广州市"), "China", "中国", "CN",
             23.11667, 113.25, "Asia/Shanghai", 8, 11, 16096724,
             28, 80, 61, 7.2, (80, 63, 3, 2, 61, 95), article=True),
    DemoCity(1795565, "Shenzhen", "深圳", ("深圳市",), "China", "中国", "CN",
             22.54554, 114.0683, "Asia/Shanghai", 8, 9, 17494398,
             27, 76, 3, 10.1, (2, 80, 61, 3, 1, 1)),
    DemoCity(1808926, "Hangzhou", "杭州", ("杭州市",), "China", "中国", "CN",
             30.29365, 120.16142, "Asia/Shanghai", 8, 13, 11936010,
             23, 70, 80, 8.3, (61, 3, 2, 1, 0, 63)),
    DemoCity(1850147, "Tokyo", "东京", ("東京",), "Japan", "日本", "JP",
             35.6895, 139.69171, "Asia/Tokyo", 9, 44, 9733276,
             18, 60, 1, 11.2, (2, 3, 61, 1, 0, 0)),
    DemoCity(2643743, "London", "伦敦", (), "United Kingdom", "英国", "GB",
             51.50853, -0.12574, "Europe/London", 0, 25, 8961989,
             12, 82, 63, 18.4, (61, 3, 80, 2, 63, 45)),
    DemoCity(5128581, "New York", "纽约", ("NYC", "New York City"), "United States", "美国", "US",
             40.71427, -74.00597, "America/New_York", -5, 10, 8804190,
             15, 55, 3, 14.0, (2, 1, 0, 61, 3, 2)),
    DemoCity(2988507, "Paris", "巴黎", (), "France", "法国", "FR",
             48.85341, 2.3488, "Europe/Paris", 1, 42, 2138551,
             14, 72, 45, 6.5, (3, 61, 2, 1, 3, 0)),
    DemoCity(2147714, "Sydney", "悉尼", (), "Australia", "澳大利亚", "AU",
             -33.86785, 151.20732, "Australia/Sydney", 11, 58, 4627345,
             26, 50, 95, 22.3, (1, 0, 0, 2, 80, 3)),
)

# Chinese wording of today's condition on the article's route, as the article shows it.
ARTICLE_CONDITIONS = {0: "晴", 2: "多云", 61: "小雨"}
