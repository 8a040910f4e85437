"""Docs that cannot drift: what docs/*.md, the README, docstrings and comments name must exist.

- A path in backticks (`memory/feed.py`, `templates/projects/_errors.html`) or a `*.py` path in
  a docstring or comment must be a file or folder of the repository. A short path matches by
  its end (`views/files.py` is `projects/views/files.py`).
- A dotted name in backticks whose first part is one of our modules or classes
  (`store.file_save`, `context._assembly_key`, `Project.runner_writable`) must be defined
  there: a function, class, assignment or import at the top of that module, or an attribute
  set in that class. Names of other libraries (`json.loads`) are not checked.
- docs/ARCHITECTURE.md names every module of the app, under its package in the tree; the
  README names every management command.

Only the repository's own text is read (no imports), so the test is quick and runs once."""

from __future__ import annotations

import ast
import functools
import re
import unicodedata
from pathlib import Path

import pytest

pytestmark = pytest.mark.db_independent

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("projects", "memoryadmin", "runnerkit", "devtools", "bench", "scripts", "tests")
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
SKIP_PARTS = {".venv", "node_modules", "__pycache__", "migrations", ".demo", "staticfiles"}

# Paths that name memory in a bucket or a runner's files, not files of this repository.
NOT_OURS = re.compile(
    r"^(?:workspace|users|agents|sessions|_history|_prompts|_trash|s3:|https?:|/|~|\.\./|\$)"
    r"|^(?:AGENTS|SOUL|USER|TOOLS|MEMORY|CLAUDE|README|CON|memory)\.md$|[<>*{}\[\]|]"
)
PATH = re.compile(
    r"^[\w.\-/]*\w\.(?:py|md|html|sh|js|css|toml|txt|json|yml|yaml|po|service|timer)$"
    r"|^[\w.\-]+/(?:[\w.\-]+/)*$"
)
DOTTED = re.compile(r"^([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)(?:\(\))?$")
BARE_PY = re.compile(r"(?<![\w./-])((?:[\w\-]+/)*[\w\-]+\.py)\b")


def _files() -> list[Path]:
    out = []
    for top in CODE_DIRS:
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and not SKIP_PARTS.intersection(path.relative_to(ROOT).parts):
                out.append(path)
    for extra in ("templates", "static", "locale", "docs", "examples", ".ci"):
        out += [p for p in (ROOT / extra).rglob("*") if p.is_file()]
    out += [p for p in ROOT.iterdir() if p.is_file()]
    return out


@functools.cache
def _paths() -> tuple[set[str], set[str]]:
    files, dirs = set(), set()
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        files.add(rel)
        parts = rel.split("/")
        for n in range(1, len(parts)):
            dirs.add("/".join(parts[:n]) + "/")
    return files, dirs


def _path_exists(token: str) -> bool:
    files, dirs = _paths()
    token = token.removeprefix("./")
    pool = dirs if token.endswith("/") else files
    return token in pool or any(p.endswith("/" + token) for p in pool)


@functools.cache
def _modules() -> dict[str, list[ast.Module]]:
    """Short and dotted names of every Python module of ours -> its parsed text."""
    out: dict[str, list[ast.Module]] = {}
    for path in _files():
        if path.suffix != ".py" or path.parts[-2:-1] == ("tests",) and path.name.startswith("test_"):
            continue
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for n in range(len(parts)):
            out.setdefault(".".join(parts[n:]), []).append(tree)
    return out


def _defined(node: ast.AST) -> set[str]:
    """Names a module or class body defines (defs, classes, assignments, imports)."""
    names = set()
    for item in getattr(node, "body", []):
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            for target in item.targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in item.names}
        elif isinstance(item, (ast.If, ast.Try, ast.With)):
            names |= _defined(item)
            for handler in getattr(item, "handlers", []):
                names |= _defined(handler)
            names |= _defined(ast.Module(body=getattr(item, "orelse", []), type_ignores=[]))
    if isinstance(node, ast.ClassDef):  # attributes set in methods (self.x = ...)
        for sub in ast.walk(node):
            if (
                isinstance(sub, ast.Attribute)
                and isinstance(sub.ctx, ast.Store)
                and isinstance(sub.value, ast.Name)
                and sub.value.id == "self"
            ):
                names.add(sub.attr)
    return names


@functools.cache
def _classes() -> dict[str, list[ast.ClassDef]]:
    out: dict[str, list[ast.ClassDef]] = {}
    for trees in _modules().values():
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    out.setdefault(node.name, []).append(node)
    return out


def _class_has(cls: ast.ClassDef, name: str) -> bool:
    if name in _defined(cls) or name in {"objects", "DoesNotExist", "pk", "id", "save", "delete"}:
        return True
    # Inherited from one of ours (Django's own bases are taken on trust).
    for base in cls.bases:
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
        if any(_class_has(b, name) for b in _classes().get(base_name, []) if b is not cls):
            return True
        if base_name == "Model":  # Django's models: fields are ours, the rest is Model's
            from django.db.models import Model

            if hasattr(Model, name):
                return True
        elif base_name and base_name not in _classes():
            return True
    # A reverse relation is named by a related_name="..." on another model.
    if name in _literals():
        return True
    return False


def _dotted_ok(token: str) -> bool | None:
    """True/False for a dotted name of ours, None when it is not ours to check."""
    match = DOTTED.match(token)
    if not match:
        return None
    parts = [match.group(1), *match.group(2).lstrip(".").split(".")]
    modules = _modules()
    # The longest leading run of parts that names a module of ours.
    for n in range(len(parts) - 1, 0, -1):
        trees = modules.get(".".join(parts[:n]))
        if trees is None:
            continue
        rest = parts[n:]
        for tree in trees:
            if rest[0] not in _defined(tree):
                if ".".join(parts[: n + 1]) in modules:  # a submodule of a package
                    return _dotted_ok(".".join(parts[: n + 1] + rest[1:])) if rest[1:] else True
                continue
            if len(rest) == 1:
                return True
            classes = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == rest[0]]
            if not classes or any(_class_has(c, rest[1]) for c in classes):
                return True
        return False
    if parts[0] in _classes():
        return any(_class_has(c, parts[1]) for c in _classes()[parts[0]])
    return None


def _backticked(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return [t.strip() for t in re.findall(r"`([^`\n]+)`", text)]


@functools.cache
def _roots() -> set[str]:
    """First parts a path of ours starts with: top-level files and folders, and our packages."""
    files, dirs = _paths()
    return {p.split("/")[0] for p in files} | {d.rstrip("/").split("/")[-1] for d in dirs}


@functools.cache
def _literals() -> set[str]:
    """Every string constant in our code: event types, audit actions and other names we use."""
    return {
        node.value
        for trees in _modules().values()
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def _ours(path: str) -> bool:
    """Whether a path names a file of the repository (not a memory path or another tool's)."""
    first, _, rest = path.partition("/")
    if path.startswith("."):
        return False
    if rest or path.endswith("/"):
        return first in _roots()
    return path.endswith((".py", ".html", ".sh", ".js", ".css", ".toml")) or (
        path.endswith(".md") and path[:-3].isupper()
    )


def _problems_in(token: str) -> str | None:
    if NOT_OURS.search(unicodedata.normalize("NFKC", token)) or " " in token:
        return None
    if PATH.match(token):
        if not _ours(token):
            return None
        return None if _path_exists(token) else f"no such file: {token}"
    if token in _literals():
        return None
    ok = _dotted_ok(token)
    if ok is False:
        return f"not defined: {token}"
    return None


def _docstrings_and_comments(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    chunks = [m.group(0) for m in re.finditer(r"#[^\n]*", source)]
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                chunks.append(doc)
    return chunks


def doc_problems() -> list[str]:
    problems = []
    for doc in DOCS:
        for token in _backticked(doc.read_text(encoding="utf-8")):
            problem = _problems_in(token)
            if problem:
                problems.append(f"{doc.relative_to(ROOT)}: {problem}")
    for path in _files():
        if path.suffix != ".py" or "tests" in path.relative_to(ROOT).parts[:1]:
            continue
        for chunk in _docstrings_and_comments(path):
            tokens = set(_backticked(chunk)) | set(BARE_PY.findall(chunk))
            for token in sorted(tokens):
                problem = _problems_in(token)
                if problem:
                    problems.append(f"{path.relative_to(ROOT)}: {problem}")
    return sorted(set(problems))


def test_docs_docstrings_and_comments_name_only_what_exists():
    assert doc_problems() == []


def test_the_checker_sees_a_missing_path_and_a_missing_name():
    assert _problems_in("memory/nowhere.py") == "no such file: memory/nowhere.py"
    assert _problems_in("store.no_such_function") == "not defined: store.no_such_function"
    assert _problems_in("Project.no_such_field") == "not defined: Project.no_such_field"
    assert _problems_in("json.loads") is None
    assert _problems_in("workspace/notes.md") is None
    assert _problems_in("docs/ARCHITECTURE.md") is None


def _architecture_tree() -> dict[str, set[str]]:
    """The tree block of docs/ARCHITECTURE.md: package folder -> the module files it names."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = re.search(r"```\nprojects/\n(.*?)```", text, re.S).group(1)
    named: dict[str, set[str]] = {"": set()}
    package = ""
    for line in block.splitlines():
        head = re.match(r"^  (\w+)/", line)
        if head:
            package = head.group(1)
            named.setdefault(package, set())
        elif re.match(r"^  \w", line):
            package = ""
        # Only the left column names files; the right column is prose.
        stripped = line.lstrip()
        left = stripped.split("   ")[0] if len(line) - len(stripped) < 20 else ""
        named.setdefault(package, set()).update(re.findall(r"(\w+\.py)", left))
        named[package].update(re.findall(r"\b(\w+)/", left))
    return named


def test_architecture_names_every_module_under_its_package():
    named = _architecture_tree()
    missing = []
    for path in sorted((ROOT / "projects").rglob("*.py")):
        rel = path.relative_to(ROOT / "projects")
        if SKIP_PARTS.intersection(rel.parts) or path.name == "__init__.py" and len(rel.parts) > 1:
            continue
        if rel.parts[0] in ("management", "templatetags") or path.name == "__init__.py":
            continue
        package = rel.parts[0] if len(rel.parts) > 1 else ""
        if path.name not in named.get(package, set()):
            missing.append(rel.as_posix())
    assert missing == []


def test_the_readme_names_every_management_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = sorted(p.stem for p in (ROOT / "projects/management/commands").glob("[!_]*.py"))
    assert commands, "no commands found"
    assert [c for c in commands if not re.search(rf"\b{c}\b", readme)] == []
