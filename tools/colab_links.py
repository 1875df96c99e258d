"""Escreve no topo de cada lição o selo "Abrir no Colab" e a primeira célula, que só age no
Colab, a partir de um só ajuste: o repositório publicado (o fork do instrutor) e o ramo.

    python tools/colab_links.py --repo dono/nome --branch main     (make colab-links REPO=... BRANCH=...)

Rodar de novo troca o selo e a célula (reconhecidos pelo id da célula); nada mais muda. Na
solução da lição 07, o selo do aluno vai num marcador STUB, e a cópia do aluno é regenerada.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import make_student_notebook  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
SOLUTION = NOTEBOOKS / "07_exercicio_multiworker_solucao.ipynb"
#: até o instrutor publicar o fork dele (o README diz como): o clone falha dizendo o endereço
PLACEHOLDER_REPO = "DONO/lab-paralelo"
BADGE_ID, SETUP_ID = "colab-badge", "colab-setup"
REPO_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
BADGE_SVG = "https://colab.research.google.com/assets/colab-badge.svg"

SETUP_CELL = """\
# Google Colab: baixa o laboratório e instala o que falta nele; fora do Colab, não faz nada.
import os
import subprocess
import sys

REPO, BRANCH = "{repo}", "{branch}"  # make colab-links REPO=dono/nome BRANCH=ramo
if "google.colab" in sys.modules:
{legacy}    # numa nova execução desta célula, o clone já está no sys.path
    root = next(
        (p for p in sys.path if os.path.isfile(os.path.join(p, "labutils", "colab.py"))),
        os.path.abspath(REPO.split("/")[1]),
    )
    if not os.path.isdir(root):
        os.environ["GIT_TERMINAL_PROMPT"] = "0"  # repositório errado: erro, não senha
        url = f"https://github.com/{{REPO}}.git"
        subprocess.run(["git", "clone", "-q", "--depth", "1", "-b", BRANCH, url, root], check=True)
    # no sys.path, e não `pip install -e`: o .pth dele só vale depois de reiniciar o runtime;
    # no PYTHONPATH, para os processos filhos (os workers do Ray, os nós do `ray start`)
    if root not in sys.path:
        sys.path.insert(0, root)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.getenv("PYTHONPATH")]))
    os.chdir(os.path.join(root, "notebooks"))  # as lições leem caminhos a partir de notebooks/
    from labutils import colab

    colab.install()
else:
    print("Fora do Colab: esta célula não faz nada.")"""


def colab_url(repo: str, branch: str, notebook: str) -> str:
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/notebooks/{notebook}"


def badge(repo: str, branch: str, notebook: str) -> str:
    return f"[![Abrir no Colab]({BADGE_SVG})]({colab_url(repo, branch, notebook)})"


def badge_source(repo: str, branch: str, path: Path) -> str:
    """O Markdown do selo; na solução da 07, o do aluno vai no marcador STUB."""
    if path != SOLUTION:
        return badge(repo, branch, path.name)
    student = make_student_notebook.student_path(path).name
    return "\n".join(
        [
            "<!-- BEGIN SOLUTION -->",
            f"<!-- STUB: {badge(repo, branch, student)} -->",
            badge(repo, branch, path.name),
            "<!-- END SOLUTION -->",
        ]
    )


#: só na lição 07, que usa o tf_keras do Colab; as 05 e 06 usam o Keras 3, como nos pinos (com
#: o tf_keras, a 05 para em `tf.keras.version()`, medido no make colab-check)
LEGACY_KERAS = """\
    # antes do TensorFlow: o tf.keras vira o tf_keras do Colab (o Keras 2 desta lição)
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
"""


def setup_source(repo: str, branch: str, legacy_keras: bool = False) -> str:
    return SETUP_CELL.format(repo=repo, branch=branch, legacy=LEGACY_KERAS if legacy_keras else "")


def lessons() -> list[Path]:
    """As lições 00–06 e a solução da 07 (a cópia do aluno é gerada dela)."""
    return sorted(p for p in NOTEBOOKS.glob("0[0-7]_*.ipynb") if "_aluno" not in p.name)


def apply(nb: nbformat.NotebookNode, repo: str, branch: str, path: Path) -> None:
    """Põe (ou troca) o selo e a célula no topo de ``nb``."""
    nb.cells = [c for c in nb.cells if c.get("id") not in (BADGE_ID, SETUP_ID)]
    badge_cell = nbformat.v4.new_markdown_cell(badge_source(repo, branch, path), id=BADGE_ID)
    setup_cell = nbformat.v4.new_code_cell(
        setup_source(repo, branch, path == SOLUTION), id=SETUP_ID
    )
    nb.cells[:0] = [badge_cell, setup_cell]


def write(path: Path, repo: str, branch: str) -> bool:
    """Atualiza ``path``; ``True`` se o arquivo mudou."""
    before = path.read_text(encoding="utf-8")
    nb = nbformat.reads(before, as_version=4)
    apply(nb, repo, branch, path)
    after = nbformat.writes(nb) + "\n"
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=PLACEHOLDER_REPO, help="dono/nome no GitHub")
    parser.add_argument("--branch", default="main")
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="só estes (padrão: as lições e a solução da 07)"
    )
    args = parser.parse_args(argv)
    if not REPO_PATTERN.match(args.repo) or not re.match(r"^[\w./-]+$", args.branch):
        parser.error(f"REPO=dono/nome e BRANCH=ramo do GitHub (recebi {args.repo} {args.branch})")
    for path in [p.resolve() for p in args.notebooks] or lessons():
        changed = write(path, args.repo, args.branch)
        print(f"{'atualizei' if changed else 'em dia:  '} {path.relative_to(ROOT)}")
        if path == SOLUTION:
            target = make_student_notebook.student_path(path)
            target.write_text(make_student_notebook.render(path), encoding="utf-8")
            print(f"regenerei {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
