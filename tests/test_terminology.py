"""Uma palavra por conceito em todas as lições (o termo que se usa em português na prática).

Cada regra diz o termo certo e as variantes que não devem aparecer no texto das lições (células
de markdown) nem no README. ("nos", sem acento, é "em + os": "nos workers" não é variante.) Trechos de código (entre crases, ou blocos ```) não contam: lá vale o
nome da API (``dashboard=True``, ``ray start --head``).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))

#: (o termo certo, expressão das variantes a evitar)
RULES = [
    ("escalabilidade fraca/forte (scaling)", r"\bescalonamento\s+(fraco|forte)\b"),
    ("escalabilidade fraca/forte (scaling)", r"\bescala(mento)?\s+(fraca|forte)\b"),
    ("escalonador / escalonamento (scheduler, scheduling)", r"\bagenda(dor|dores|mento)\b"),
    ("nó principal (head node)", r"\bn[óÓ]s?\s+(mestres?|cabeças?|centra(l|is)|head)\b"),
    ("nó de trabalho (worker)", r"\bn[óÓ]s?\s+(workers?|trabalhador(es)?)\b"),
    ("painel (dashboard)", r"\bdashboard\b"),
    ("armazém de objetos (object store)", r"\bobject\s+store\b"),
]
#: o termo em inglês pode vir entre parênteses logo depois do certo: "painel (*dashboard*)"
GLOSS = re.compile(r"(painel|nó principal|objetos)[\s*_]*\([\s*_]*$", re.I)

CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)


def prose(text: str) -> str:
    """O texto sem os trechos de código (blocos ``` e trechos entre crases)."""
    return CODE.sub(" ", text)


def variants(text: str) -> list[str]:
    """``termo certo ← variante encontrada`` para cada variante no texto (sem o código)."""
    found = []
    for right, pattern in RULES:
        text_only = prose(text)
        for match in re.finditer(pattern, text_only, re.I):
            if GLOSS.search(text_only[max(0, match.start() - 20) : match.start()]):
                continue
            found.append(f"use «{right}», não «{match.group(0)}»")
    return found


def texts(path: Path) -> list[tuple[str, str]]:
    """``(onde, texto)`` do README, ou de cada célula de markdown de um notebook."""
    if path.suffix == ".md":
        return [(path.name, path.read_text(encoding="utf-8"))]
    nb = nbformat.read(str(path), as_version=4)
    return [(f"célula {i}", c.source) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]


@pytest.mark.parametrize("path", [ROOT / "README.md", *NOTEBOOKS], ids=lambda p: p.name)
def test_one_word_per_concept(path):
    found = [f"{where}: {v}" for where, text in texts(path) for v in variants(text)]
    assert not found, f"{path.name}:\n" + "\n".join(found)


def test_the_rules_catch_each_variant_and_spare_the_right_terms():
    wrong = (
        "O escalonamento fraco mantém o lote por réplica. O agendador do Ray decide. "
        "O nó mestre guarda o GCS; cada nó worker roda tarefas. Abra o dashboard. "
        "Os bytes vão ao object store."
    )
    assert len(variants(wrong)) == 6, variants(wrong)
    right = (
        "A escalabilidade fraca mantém o lote por réplica. O escalonador do Ray decide. "
        "O nó principal (head node) guarda o GCS; cada nó de trabalho roda tarefas. Abra o "
        "painel (dashboard) com `ray.init(include_dashboard=True)` ou `--dashboard-port`; "
        "o **painel**\n  (*dashboard*) mostra os nós. O **armazém de objetos** (*object store*) "
        "guarda os bytes; `ray.put` os põe no armazém de objetos."
    )
    assert variants(right) == []
    assert variants("o lote chega nos workers; nos nós de trabalho") == []  # "nos" = em + os
