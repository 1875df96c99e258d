"""Gera ``tools/colab_constraints.txt`` a partir do ``pip-freeze.txt`` do Colab
(github.com/googlecolab/backend-info): cada pacote na versão que o Colab traz, menos os da lista
do que pode mudar (``labutils.colab.MAY_CHANGE``). O ``pip install -c`` da primeira célula das
lições instala o que falta sem trocar nada do que o Colab já tem (trocar o ``ipython`` que o
``google-colab`` fixa derruba o runtime: colabtools#5580).

    python tools/colab_constraints.py CAMINHO/pip-freeze.txt --snapshot "2026-08-19 a724079"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labutils import colab  # noqa: E402


def constraints(freeze: str, snapshot: str) -> str:
    """O texto do arquivo de restrições, de um ``pip freeze`` do Colab."""
    kept = []
    for line in freeze.splitlines():
        line = line.strip()
        # as linhas "nome @ url" (google-colab, torch+cpu...) não são do índice de pacotes
        if not line or line.startswith("#") or "==" not in line:
            continue
        if colab.canonical(line.split("==")[0]) in colab.MAY_CHANGE:
            continue
        kept.append(line)
    header = [
        "# Os pacotes do Google Colab, nas versões dele: restrições (pip install -c) da 1ª célula",
        f"# das lições. Fonte: googlecolab/backend-info, pip-freeze.txt, {snapshot}.",
        f"# Fora daqui, de propósito (podem mudar): {', '.join(sorted(colab.MAY_CHANGE))}.",
        "# Gerado por tools/colab_constraints.py; não edite à mão.",
    ]
    return "\n".join(header + kept) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("freeze", type=Path, help="o pip-freeze.txt do backend-info")
    parser.add_argument("--snapshot", required=True, help="data e commit do backend-info")
    args = parser.parse_args()
    colab.CONSTRAINTS.write_text(constraints(args.freeze.read_text(), args.snapshot))
    print(f"gravei {colab.CONSTRAINTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
