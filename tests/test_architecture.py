"""The layout's dependency rules (``dapo_bench.ALLOWED_IMPORTS``) hold for every import in the
package, module-level or inside a function; the verifiers import no torch; every registry is
listed by ``dapo-bench list``."""

import ast
import re
from pathlib import Path

import dapo_bench

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"verifiers": ROOT / "verifiers", "": ROOT / "dapo_bench"}


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
