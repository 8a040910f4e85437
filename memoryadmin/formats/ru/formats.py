"""Russian dates as the console shows them: day first with dots, 24-hour clock. Numbers keep
Django's Russian format (a space between thousands, a decimal comma)."""

DATETIME_FORMAT = "d.m.Y H:i:s"
SHORT_DATETIME_FORMAT = "d.m.Y H:i"
DATE_FORMAT = "j E Y"
SHORT_DATE_FORMAT = "d.m.Y"
TIME_FORMAT = "H:i:s"
