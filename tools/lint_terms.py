"""Uma palavra por conceito (``make lint``): as variantes a evitar no texto das lições (células
de markdown) e no README, com o termo certo. Trechos de código (entre crases ou em blocos ```)
não contam: lá vale o nome da API (``dashboard=True``). "nos", sem acento, é "em + os"."""

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
#: (o termo certo, as variantes a evitar)
RULES = [
    ("escalabilidade fraca/forte (scaling)", r"\bescal(onamento|a|amento)\s+(fraca|fraco|forte)\b"),
    ("escalonador / escalonamento (scheduler)", r"\bagenda(dor|dores|mento)\b"),
    ("nó principal (head node)", r"\bn[óÓ]s?\s+(mestres?|cabeças?|centra(l|is)|head)\b"),
    ("nó de trabalho (worker)", r"\bn[óÓ]s?\s+(workers?|trabalhador(es)?)\b"),
    ("painel (dashboard)", r"\bdashboard\b"),
    ("armazém de objetos (object store)", r"\bobject\s+store\b"),
]
#: o termo em inglês pode vir entre parênteses logo depois do certo: "painel (*dashboard*)"
GLOSS = re.compile(r"(painel|nó principal|objetos)[\s*_]*\([\s*_]*$", re.I)
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def variants(text: str) -> list[str]:
    prose = CODE.sub(" ", text)
    return [
        f"use «{right}», não «{m.group(0)}»"
        for right, pattern in RULES
        for m in re.finditer(pattern, prose, re.I)
        if not GLOSS.search(prose[max(0, m.start() - 20) : m.start()])
    ]


def main() -> int:
    texts = [("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]
    for path in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        texts += [(f"{path.name}, célula {i}", c.source) for i, c in enumerate(cells)
                  if c.cell_type == "markdown"]  # fmt: skip
    found = [f"{where}: {v}" for where, text in texts for v in variants(text)]
    print("\n".join(found), file=sys.stderr)
    return int(bool(found))


if __name__ == "__main__":
    raise SystemExit(main())
