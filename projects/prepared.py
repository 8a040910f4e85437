"""ORM queries whose SQL is made once, for the runner API's hottest lookups.

The bearer token every runner API request is authenticated by (with its agent and project,
select_related) cost more CPU to compile into SQL, each time, than to run and read: about
0.6 ms of the 2 ms of Python CPU the bench's floor view costs under gunicorn (bench/run.py
--profile). The SQL is the same every time but for the token's hash. `Prepared` has the ORM
compile such a query once per database, with a marker where each changing value goes, then
runs that SQL with the values and makes the first row into instances as QuerySet iteration
does (each column through its field's converters, the select_related objects cached on it,
the queryset's fetch mode): the same instances, the same one query.

Only equality with text values: a marker must reach the SQL parameters unchanged. A marker
missing from them (the ORM folded it into the SQL) is refused when the query is made.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators


class Prepared:
    """`build(**markers)` gives the queryset; `first(**values)` its first row as an instance,
    or None. Thread-safe: what is kept per database is only read after it is made."""

    def __init__(self, build: Callable[..., QuerySet], *names: str):
        self.build = build
        self.names = names
        self.compiled: dict[str, _Compiled] = {}

    def first(self, using: str = "default", **values: str) -> Model | None:
        compiled = self.compiled.get(using)
        if compiled is None:
            compiled = self.compiled[using] = _Compiled(self.build, self.names, using)
        return compiled.first(values)


class _Compiled:
    def __init__(self, build: Callable[..., QuerySet], names: tuple[str, ...], using: str):
        markers = {name: f"mgc-prepared-{secrets.token_hex(8)}" for name in names}
        queryset = build(**markers).using(using)[:1]
        compiler = queryset.query.get_compiler(using=using)
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        self.slots = {}
        for name, marker in markers.items():
            if self.params.count(marker) != 1:
                raise ValueError(f"{name}'s value is not one parameter of the query's SQL")
            self.slots[name] = self.params.index(marker)
        self.using = using
        self.model = queryset.model
        self.fetch_mode = queryset._fetch_mode
        self.select = compiler.select
        self.klass_info = compiler.klass_info
        if compiler.annotation_col_map or compiler.has_composite_fields(
            [column[0] for column in self.select]
        ):
            raise ValueError("annotations and composite keys are not prepared")
        fields = self.klass_info["select_fields"]
        self.own = slice(fields[0], fields[-1] + 1)
        self.init_list = [column[0].target.attname for column in self.select[self.own]]
        self.converters = list(compiler.get_converters([column[0] for column in self.select]).items())

    def first(self, values: dict[str, str]) -> Model | None:
        params = list(self.params)
        for name, slot in self.slots.items():
            params[slot] = values[name]
        connection = connections[self.using]
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        row = list(row)
        for position, (converters, expression) in self.converters:
            value = row[position]
            for converter in converters:
                value = converter(value, expression, connection)
            row[position] = value
        obj = self.model.from_db(self.using, self.init_list, row[self.own], fetch_mode=self.fetch_mode)
        for populator in get_related_populators(self.klass_info, self.select, self.using, self.fetch_mode):
            populator.populate(row, obj)
        return obj
