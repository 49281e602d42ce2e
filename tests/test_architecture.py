"""The layout's dependency rules (``dapo_bench.ALLOWED_IMPORTS``) hold for every import in the
package, module-level or inside a function; no import circle anywhere (between modules of one
folder too, and one closed by an import inside a function), in the package and in bench/; the
verifiers import no torch; every registry is listed by ``dapo-bench list``; tests/ mirrors the
package (a test directory per package directory, no test module left at the top but the
whole-project ones, unique file names); a module name that repeats in the package means one
thing in each place (``SHARED_NAMES``).

Not covered: modules named by a string (a registry's ``modules=[...]``, which fills the registry
on first use, and a task spec's ``source: python`` generator, see
``test_task_specs_name_only_modules_a_task_may_import``): they are imports of data, not of code.
"""

import ast
import re
from pathlib import Path

import dapo_bench

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"verifiers": ROOT / "verifiers", "": ROOT / "dapo_bench"}
BENCH = ROOT / "bench"  # scripts: each runs with bench/ on sys.path, so a module is its stem


def part_of(module: str) -> str | None:
    """'dapo_bench.training.loop' -> 'training'; ground-floor modules -> 'ground'."""
    parts = module.split(".")
    if parts[0] != "dapo_bench" or len(parts) < 2:
        return None
    head = parts[1]
    if head in dapo_bench.GROUND:
        return "ground"
    return head


def modules():
    for prefix, base in SOURCES.items():
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            name = ".".join(["dapo_bench", *([prefix] if prefix else []), *rel.parts])
            yield name.removesuffix(".__init__"), path


def imports(path: Path, module: str) -> list[tuple[int, str]]:
    out = []
    pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.append((node.lineno, base))
    return out


def import_graph(sources: dict[str, Path] = SOURCES,
                 scripts: Path | None = BENCH) -> dict[str, set[str]]:
    """module -> the modules it imports (module level or inside a function), each import
    resolved to the most specific module it names (``from a import b``: ``a.b`` when that is a
    module, else ``a``)."""
    paths: dict[str, Path] = {}
    for prefix, base in sources.items():
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            name = ".".join(["dapo_bench", *([prefix] if prefix else []), *rel.parts])
            paths[name.removesuffix(".__init__")] = path
    if scripts is not None:
        paths.update({p.stem: p for p in sorted(scripts.glob("*.py"))})
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base
                        for a in node.names}
        graph[module] = {t for t in out if t in paths and t != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_anywhere():
    """No two modules import each other, directly or round a longer loop, in the package
    (between parts or inside one folder) or among the bench/ scripts."""
    assert not circles(import_graph()), circles(import_graph())


def test_the_layer_rules_have_no_circle():
    parts = {p: set(deps) for p, deps in dapo_bench.ALLOWED_IMPORTS.items()}
    assert not circles(parts), circles(parts)


def test_the_circle_test_sees_a_lazy_import_inside_a_folder(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "training").mkdir(parents=True)
    (pkg / "training" / "__init__.py").write_text("")
    (pkg / "training" / "a.py").write_text("from dapo_bench.training.b import g\n")
    (pkg / "training" / "b.py").write_text(
        "def g():\n    from dapo_bench.training import a\n    return a\n")
    graph = import_graph({"": pkg}, None)
    assert circles(graph) == [["dapo_bench.training.a", "dapo_bench.training.b"]]
    (pkg / "training" / "b.py").write_text("def g():\n    return 1\n")
    assert not circles(import_graph({"": pkg}, None))


def test_every_import_follows_the_layer_rules():
    bad = []
    for module, path in modules():
        src = part_of(module)
        if src in (None, "ground"):
            allowed = {"ground"}
        else:
            assert src in dapo_bench.ALLOWED_IMPORTS, f"{module}: part {src} has no rule"
            allowed = {src, "ground", *dapo_bench.ALLOWED_IMPORTS[src]}
        for line, target in imports(path, module):
            dst = part_of(target)
            if dst is not None and dst not in allowed:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {src} -> {dst} ({target})")
    assert not bad, "\n".join(bad)


def test_the_rule_test_catches_an_upward_import(tmp_path):
    mod = tmp_path / "x.py"
    mod.write_text("def f():\n    from dapo_bench.training.loop import train_loop\n")
    (target,) = [t for _, t in imports(mod, "dapo_bench.generation.x")]
    assert part_of(target) == "training"
    assert "training" not in dapo_bench.ALLOWED_IMPORTS["generation"]


def test_task_specs_are_data_and_name_only_the_parts_they_may():
    """tasks/ (the YAML specs, installed as dapo_bench.task_specs) holds data only, and the
    "module:NAME" strings in it name only ``SPEC_REFERENCES`` parts: arith's default_model
    names dapo_bench.toy (a reference upward from tasks that no import shows, stated here)."""
    specs = ROOT / "tasks"
    assert '"dapo_bench.task_specs" = "tasks"' in (ROOT / "pyproject.toml").read_text()
    assert {p.suffix for p in specs.iterdir() if p.name != "__pycache__"} == {".yaml", ".py"}
    assert (specs / "__init__.py").read_text() == ""
    refs = {}
    for path in sorted(specs.glob("*.yaml")):
        for line, text in enumerate(path.read_text().splitlines(), 1):
            for m in re.finditer(r"\b(dapo_bench(?:\.\w+)+):\w+", text):
                refs[f"{path.name}:{line}"] = part_of(m[1])
    assert "toy" in refs.values()  # the reference this test exists to state
    bad = {k: v for k, v in refs.items() if v not in dapo_bench.SPEC_REFERENCES}
    assert not bad, bad


def test_verifiers_import_no_torch_or_transformers():
    heavy = re.compile(r"^(torch|transformers|vllm|deepspeed)(\.|$)")
    bad = [f"{path}:{line}: {t}" for module, path in modules()
           if module.startswith("dapo_bench.verifiers")
           for line, t in imports(path, module) if heavy.match(t)]
    assert not bad, bad


def test_list_shows_every_registry():
    from dapo_bench.commands.listing import REGISTRIES

    listed = {attr for _, attr in REGISTRIES}
    found = set()
    for _, path in modules():
        for m in re.finditer(r"^(\w+)\s*(?::[^=\n]*)?=\s*Registry\(", path.read_text(), re.MULTILINE):
            found.add(m[1])
    assert found and found == listed, (found - listed, listed - found)


TESTS = ROOT / "tests"
# tests/ mirrors the package: tests/<x>/ holds the tests of dapo_bench/<x>/ (tests/verifiers/<x>/
# those of verifiers/<x>/, installed as dapo_bench.verifiers.<x>). At the top level stand only
# the tests of the whole project and of dapo_bench's own top-level modules (and the shared
# helpers: conftest.py, _*.py).
TOP_LEVEL_TESTS = {
    "test_architecture.py",  # the whole project: layers, circles, this layout
    "test_foundation.py",  # registry.py, config.py, io.py, ledger.py, errors.py
    "test_models.py",  # models.py
    "test_multirank.py",  # dist.py without a process group
    "test_work_queue.py",  # dist.WorkQueue under torchrun
    "test_telemetry.py",  # telemetry.py (--report-to)
}


def _test_dirs() -> list[Path]:
    return sorted(d for d in TESTS.rglob("*") if d.is_dir() and d.name != "__pycache__"
                  and "__pycache__" not in d.parts)


def test_every_test_directory_mirrors_a_package_directory():
    """tests/<x>/ exists only where dapo_bench/<x>/ (or verifiers/<x>/) does."""
    for d in _test_dirs():
        rel = d.relative_to(TESTS)
        mirror = ROOT / rel if rel.parts[0] == "verifiers" else ROOT / "dapo_bench" / rel
        assert (mirror / "__init__.py").is_file(), f"tests/{rel.as_posix()}/ mirrors no package"


def test_only_whole_project_tests_stand_at_the_top_of_tests():
    top = {p.name for p in TESTS.glob("test_*.py")}
    assert top <= TOP_LEVEL_TESTS, f"move into tests/<package>/: {sorted(top - TOP_LEVEL_TESTS)}"


def test_test_module_names_are_unique_across_the_tree():
    """pytest's default import mode imports a test module by its basename (no __init__.py)."""
    names = [p.name for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts]
    assert sorted(names) == sorted(set(names)), sorted({n for n in names if names.count(n) > 1})


# A module name that stands in several packages means one thing in each (issue 46: no two
# files of one name with different meanings); a new repeat needs its shared meaning here.
SHARED_NAMES = {
    "__init__.py": "a package",
    "base.py": "the package's interfaces (a backend's, a method's, a verifier's)",
    "config.py": "settings dataclasses (how they load; DAPO's own)",
    "audit.py": "the DAPO run audit (its CLI in commands/, its checks in methods/dapo/)",
    "train.py": "a training run (its CLI in commands/, the run in run/)",
    "pool.py": "a verifier kind's pool of worker processes",
    "worker.py": "a verifier kind's worker process",
    "report.py": "the results.json a package writes (an eval task's block; a training run's)",
    "rows.py": "a package's row formats (DAPO's artifacts; verify's inputs and outputs)",
    "sft.py": "supervised fine-tuning (the method; its loop)",
    "spec.py": "a YAML spec parsed into dataclasses (a leaderboard's; a task's)",
}


def test_a_repeated_module_name_means_one_thing():
    names: dict[str, list[str]] = {}
    for _, path in modules():
        names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    repeated = {n for n, paths in names.items() if len(paths) > 1}
    assert repeated <= set(SHARED_NAMES), {n: names[n] for n in repeated - set(SHARED_NAMES)}
    assert set(SHARED_NAMES) <= repeated, "stale: " + str(set(SHARED_NAMES) - repeated)
