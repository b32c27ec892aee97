#!/usr/bin/env python3
"""Fails when files import each other in a circle, or a crate imports one it may not.

Reads every Rust crate under crates/ (and python/src) and the Python package python/schedlab,
draws one arrow per file that takes a name from another file of the same crate or package, and
prints every circle of arrows (a strongly connected group of two or more files) with the names
that tie each arrow. It also holds each crate's schedlab dependencies (Cargo.toml) against the
floors (MAY_IMPORT below) and fails on any `schedlab_x::cli` path in library code (only the
binary's dispatch, crates/cli, may name another crate's argv layer).
Exit 0: all hold; exit 1: circles or crate imports (listed); exit 2: usage error.

What counts as an import (Rust): a private `use crate::..`/`super::..`/`self::..`, or such a path
written inline in code. Paths are followed to the file that defines the name: a name a module
re-exports (`pub use child::Name` in a lib.rs or mod.rs) leads to the file that defines it, so a
facade that re-exports its children is not itself an arrow, and neither is a `mod` line.
Code under `#[cfg(test)]` is left out (test modules may reach anywhere). Python: `import`
and `from .. import` lines anywhere in a file (lazy imports inside functions count);
`__init__.py` re-exports are followed to the defining module.

    python3 scripts/import-circles.py            # the repository this script lives in
    python3 scripts/import-circles.py --root DIR
    python3 scripts/import-circles.py --edges    # also print every arrow
    python3 scripts/import-circles.py --self-test
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

# ---------------------------------------------------------------- Rust


def strip_rust(text: str) -> str:
    """The code without comments, string and char literals (replaced by spaces, lines kept)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        m = re.match(r'b?r(#*)"', text[i : i + 10])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            # a char literal ('a', '\n', '\u{..}'), not a lifetime ('a)
            m = re.match(r"'(\\[^']{1,10}|[^\\'])'", text[i : i + 14])
            if m:
                out.append(" ")
                i += m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def drop_cfg_test(code: str) -> str:
    """`code` without the items marked `#[cfg(test)]` (a module's braces, or one item up to `;`)."""
    while True:
        m = re.search(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", code)
        if not m:
            return code
        j = m.end()
        depth, end = 0, None
        while j < len(code):
            ch = code[j]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = j + 1
                    break
            elif ch == ";" and depth == 0:
                end = j + 1
                break
            j += 1
        end = len(code) if end is None else end
        code = code[: m.start()] + "\n" * code.count("\n", m.start(), end) + code[end:]


def split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def expand_use(tree: str, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """`a::{b, c::{d, self}}` -> [(a, b), (a, c, d), (a, c)]; `as` renames are dropped."""
    tree = re.sub(r"\s+", " ", tree).strip()
    tree = re.sub(r"\s+as\s+\w+$", "", tree)
    brace = tree.find("{")
    if brace >= 0 and tree.endswith("}"):
        head = [s for s in tree[:brace].split("::") if s.strip()]
        inner = tree[brace + 1 : -1]
        out: list[tuple[str, ...]] = []
        for part in split_top(inner):
            out += expand_use(part, prefix + tuple(h.strip() for h in head))
        return out
    segs = tuple(s.strip() for s in tree.split("::") if s.strip())
    if segs and segs[-1] == "self":
        segs = segs[:-1]
    return [prefix + segs]


class RustCrate:
    def __init__(self, src: Path, root: Path):
        self.src = src
        self.root = root
        self.files: dict[tuple[str, ...], Path] = {}
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src)
            parts = list(rel.with_suffix("").parts)
            if parts in (["lib"], ["main"]):
                mod: tuple[str, ...] = ()
            elif parts[-1] == "mod":
                mod = tuple(parts[:-1])
            else:
                mod = tuple(parts)
            if parts and parts[0] == "bin":
                continue
            # lib.rs wins over main.rs as the crate root when both exist
            if mod == () and mod in self.files and parts == ["main"]:
                continue
            self.files[mod] = f
        self.code = {m: drop_cfg_test(strip_rust(f.read_text(errors="replace"))) for m, f in self.files.items()}
        self.uses: dict[tuple[str, ...], list[tuple[bool, tuple[str, ...]]]] = {}
        for m, code in self.code.items():
            items: list[tuple[bool, tuple[str, ...]]] = []
            for u in re.finditer(r"(\bpub\s*(?:\([^)]*\))?\s+)?\buse\s+([^;]+);", code):
                for p in expand_use(u.group(2)):
                    items.append((u.group(1) is not None, p))
            inline = re.sub(r"(\bpub\s*(?:\([^)]*\))?\s+)?\buse\s+[^;]+;", ";", code)
            inline = re.sub(r"\bpub\s*\(\s*(?:crate|super|self|in\s+[\w:]+)\s*\)", "", inline)
            for p in re.finditer(r"\b((?:crate|super|self)(?:\s*::\s*\w+)+)", inline):
                items.append((False, tuple(s.strip() for s in p.group(1).split("::"))))
            self.uses[m] = items

    def base(self, mod: tuple[str, ...], path: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """The module a path starts from and the rest of it (None: another crate)."""
        cur = mod
        rest = list(path)
        if rest and rest[0] == "crate":
            cur, rest = (), rest[1:]
        elif rest and rest[0] in ("self", "super"):
            while rest and rest[0] in ("self", "super"):
                if rest[0] == "super":
                    cur = cur[:-1]
                rest = rest[1:]
        else:
            # `use name::...` in edition 2021: a child module of this one, else an external crate
            if rest and (mod + (rest[0],)) in self.files:
                cur = mod
            else:
                return None
        return cur, tuple(rest)

    def resolve(self, mod: tuple[str, ...], path: tuple[str, ...], depth: int = 0) -> tuple[str, ...] | None:
        """The module (file) that defines what `path`, written in `mod`, names."""
        b = self.base(mod, path)
        if b is None:
            return None
        cur, rest = b
        i = 0
        while i < len(rest) and (cur + (rest[i],)) in self.files:
            cur = cur + (rest[i],)
            i += 1
        if i < len(rest) and depth < 8:
            name = rest[i]
            for is_pub, p in self.uses.get(cur, []):
                if is_pub and p and p[-1] in (name, "*") and p[-1] != "self":
                    target = self.resolve(cur, p if p[-1] == name else p[:-1] + (name,), depth + 1)
                    if target is not None and target != cur and (p[-1] == name or self.defines(target, name)):
                        return target
        return cur

    def item(self, mod: tuple[str, ...], path: tuple[str, ...]) -> str:
        """The first name of `path` past its modules (the module's own name for a bare module)."""
        b = self.base(mod, path)
        cur, rest = b if b else ((), path)
        for seg in rest:
            if (cur + (seg,)) not in self.files:
                return seg
            cur = cur + (seg,)
        return rest[-1] if rest else "self"

    def defines(self, mod: tuple[str, ...], name: str) -> bool:
        return re.search(rf"\b(fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)\s+{re.escape(name)}\b", self.code.get(mod, "")) is not None

    def edges(self) -> dict[tuple[Path, Path], set[str]]:
        out: dict[tuple[Path, Path], set[str]] = defaultdict(set)
        for m, items in self.uses.items():
            for is_pub, p in items:
                if is_pub or not p:
                    continue
                t = self.resolve(m, p)
                if t is None or t == m:
                    continue
                out[(self.files[m], self.files[t])].add(self.item(m, p))
        return out


# ---------------------------------------------------------------- Python


class PyPackage:
    def __init__(self, pkg: Path):
        self.pkg = pkg
        self.name = pkg.name
        self.files = {f.stem: f for f in sorted(pkg.glob("*.py"))}
        self.imports: dict[str, list[tuple[str, str]]] = {}
        for stem, f in self.files.items():
            found: list[tuple[str, str]] = []
            for line in f.read_text(errors="replace").splitlines():
                s = line.strip()
                m = re.match(r"from\s+(\.+\w*|[\w.]+)\s+import\s+\(?(.*?)\)?\s*$", s)
                if m:
                    mod, names = m.group(1), [n.split(" as ")[0].strip() for n in m.group(2).split(",")]
                    if mod.startswith("."):
                        mod = self.name + ("." + mod.lstrip(".") if mod.lstrip(".") else "")
                    for n in names:
                        if n:
                            found.append((mod, n))
                    continue
                m = re.match(r"import\s+([\w.]+)", s)
                if m:
                    found.append((m.group(1), ""))
            self.imports[stem] = found

    def target(self, mod: str, name: str, depth: int = 0) -> str | None:
        if mod == self.name:
            if name in self.files:
                return name
            if depth < 4:
                for m2, n2 in self.imports.get("__init__", []):
                    if n2 == name:
                        return self.target(m2, name, depth + 1)
            return "__init__" if "__init__" in self.files else None
        if mod.startswith(self.name + "."):
            stem = mod[len(self.name) + 1 :].split(".")[0]
            return stem if stem in self.files else None
        return None

    def edges(self) -> dict[tuple[Path, Path], set[str]]:
        out: dict[tuple[Path, Path], set[str]] = defaultdict(set)
        for stem, found in self.imports.items():
            if stem == "__init__":
                continue
            for mod, name in found:
                t = self.target(mod, name)
                if t is None or t == stem:
                    continue
                out[(self.files[stem], self.files[t])].add(name or mod)
        return out


# ---------------------------------------------------------------- crates

# Who may import whom (docs/guide/architecture.md): each crate's schedlab dependencies.
MAY_IMPORT: dict[str, set[str]] = {
    "policy": set(),
    "workload": set(),
    "report": set(),
    "prims": {"report"},
    "sim": {"policy", "workload", "report"},
    "sched": {"policy", "workload", "prims", "report"},
    # kernel: policy for its model of a qdisc's counterpart; sched for the traffic file's parser,
    # a known deviation from DESIGN.md (sim, sched and kernel should meet only in predict) until
    # that parser moves down into workload.
    "kernel": {"policy", "sched", "workload", "report"},
    "echo": {"report"},
    "rdma": {"kernel", "report"},
    "predict": {"sim", "sched", "kernel", "policy", "workload", "report"},
    "sweep": {"sim", "sched", "kernel", "prims", "policy", "workload", "report"},
}


def crate_rules(root: Path) -> list[str]:
    """Cargo dependencies against MAY_IMPORT, and `other_crate::cli::` paths in library code."""
    bad: list[str] = []
    for toml in sorted(root.glob("crates/*/Cargo.toml")):
        name = toml.parent.name
        deps = set(re.findall(r"^schedlab-([a-z]+)(?:\.workspace)?\s*=", toml.read_text(), re.M))
        if name == "cli":
            continue
        allowed = MAY_IMPORT.get(name)
        if allowed is None:
            bad.append(f"{toml.relative_to(root)}: crate `{name}` has no row in MAY_IMPORT (scripts/import-circles.py): say which crates it may import")
            continue
        for d in sorted(deps - allowed):
            bad.append(f"{toml.relative_to(root)}: `{name}` depends on `{d}`, which it may not import (allowed: {', '.join(sorted(allowed)) or 'nothing of ours'})")
    for f in sorted(list(root.glob("crates/*/src/**/*.rs")) + list(root.glob("python/src/**/*.rs"))):
        rel = str(f.relative_to(root))
        if rel.startswith("crates/cli/"):
            continue
        code = drop_cfg_test(strip_rust(f.read_text(errors="replace")))
        for m in sorted(set(re.findall(r"\b(schedlab_\w+)\s*::\s*cli\b", code))):
            bad.append(f"{rel}: uses `{m}::cli`, another crate's argv layer; use that crate's library face (Config, run)")
    return bad


# ---------------------------------------------------------------- circles


def circles(edges: dict[tuple[Path, Path], set[str]]) -> list[list[Path]]:
    """Strongly connected groups of two or more files (Tarjan)."""
    graph: dict[Path, list[Path]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
        graph.setdefault(b, [])
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def check(root: Path, show_edges: bool = False) -> int:
    units: list[tuple[str, dict[tuple[Path, Path], set[str]]]] = []
    for toml in sorted(root.glob("crates/*/Cargo.toml")) + sorted(root.glob("python/Cargo.toml")):
        src = toml.parent / "src"
        if src.is_dir():
            units.append((str(toml.parent.relative_to(root)), RustCrate(src, root).edges()))
    for init in sorted(root.glob("python/*/__init__.py")):
        units.append((str(init.parent.relative_to(root)), PyPackage(init.parent).edges()))
    if not units:
        print(f"import-circles: no crate or package found under {root}", file=sys.stderr)
        return 2
    found = 0
    arrows = 0
    for unit, edges in units:
        arrows += len(edges)
        if show_edges:
            for (a, b), names in sorted(edges.items()):
                print(f"{a.relative_to(root)} -> {b.relative_to(root)}: {', '.join(sorted(names))}")
        for group in circles(edges):
            found += 1
            members = set(group)
            print(f"circle {found} in {unit}: {', '.join(str(g.relative_to(root)) for g in group)}")
            for (a, b), names in sorted(edges.items()):
                if a in members and b in members:
                    print(f"  {a.relative_to(root)} -> {b.relative_to(root)}: {', '.join(sorted(names))}")
    rules = crate_rules(root) if (root / "crates").is_dir() else []
    for r in rules:
        print(r)
    if rules:
        print(f"import-circles: {len(rules)} crate import(s) against the floors", file=sys.stderr)
    if found or rules:
        if not found:
            return 1
        print(f"import-circles: {found} circle(s) of imports between files; break each by moving the shared names to a file both may import", file=sys.stderr)
        return 1
    print(f"import-circles: no circle among {arrows} file-to-file imports in {len(units)} crates and packages; crate imports follow the floors")
    return 0


def quiet_check(root: Path) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return check(root)


def self_test() -> int:
    """The check must find a planted circle in each language and accept the facade patterns."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        src = root / "crates/policy/src"
        (src / "m").mkdir(parents=True)
        (root / "crates/policy/Cargo.toml").write_text("[package]\nname='schedlab-policy'\n")
        (src / "lib.rs").write_text("pub mod x;\npub mod y;\npub mod m;\npub use m::Thing;\n")
        (src / "m/mod.rs").write_text("mod inner;\npub use inner::Thing;\npub fn helper() {}\n")
        (src / "m/inner.rs").write_text("use super::helper;\npub struct Thing;\n")
        (src / "x.rs").write_text("use crate::Thing;\n// use crate::y::g;\npub fn f() { let s = \"crate::y::g\"; }\n")
        (src / "y.rs").write_text("pub fn g() { crate::x::f() }\n#[cfg(test)]\nmod tests { use crate::x::f; }\n")
        pkg = root / "python/pk"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("from pk.a import run\n")
        (pkg / "a.py").write_text("def run():\n    from pk import b\n")
        (pkg / "b.py").write_text("import json\n")
        if quiet_check(root) != 0:
            print("self-test: a tree without circles was rejected", file=sys.stderr)
            return 1
        (src / "x.rs").write_text("use crate::y::g;\n")
        (src / "m/mod.rs").write_text("mod inner;\npub use inner::Thing;\npub fn helper() { crate::x::f2() }\n")
        (pkg / "b.py").write_text("from .a import run\n")
        rust = RustCrate(src, root).edges()
        py = PyPackage(pkg).edges()
        if circles(rust) != [sorted([src / "x.rs", src / "y.rs"])]:
            print(f"self-test: Rust circle x.rs <-> y.rs not found: {circles(rust)}", file=sys.stderr)
            return 1
        if circles(py) != [sorted([pkg / "a.py", pkg / "b.py"])]:
            print(f"self-test: Python circle a.py <-> b.py not found: {circles(py)}", file=sys.stderr)
            return 1
        if quiet_check(root) != 1:
            print("self-test: the check passed a tree with circles", file=sys.stderr)
            return 1
        (root / "crates/policy/Cargo.toml").write_text("[dependencies]\nschedlab-report = { path = '../report' }\n")
        (src / "x.rs").write_text("use schedlab_sim::cli;\npub fn f() { cli::parse_count(\"1\"); }\n")
        rules = crate_rules(root)
        if len(rules) != 2 or "may not import" not in rules[0] or "argv layer" not in rules[1]:
            print(f"self-test: floor and cli rules not both found: {rules}", file=sys.stderr)
            return 1
    print("import-circles self-test: ok (planted circles, a floor breach and a cli reach found; facades and test modules accepted)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--edges", action="store_true", help="print every file-to-file import")
    ap.add_argument("--self-test", action="store_true", help="check the checker on planted circles")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    return check(a.root.resolve(), a.edges)


if __name__ == "__main__":
    sys.exit(main())
