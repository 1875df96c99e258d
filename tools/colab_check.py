"""As lições com as versões do Google Colab, sem o Colab (``make colab-check``).

Roda no ambiente ``build/colab/venv`` (feito pelo ``make colab-check`` a partir de
``tools/colab_constraints.txt``: o Python, o TensorFlow, o numpy... do Colab, sem o Ray). Cada
lição roda num kernel novo, na escala ``smoke``, como no Colab: um módulo ``google.colab`` de
mentira já carregado (o Colab o carrega ao abrir o kernel), o que faz a primeira célula agir; a
pasta de trabalho tem o clone (aqui, um link para esta cópia: a célula não clona o que já existe),
e a célula instala o que falta (o Ray, o Optuna) com as restrições. Grava ``docs/colab.md``.

    build/colab/venv/bin/python tools/colab_check.py [--only 00 01] [--out docs/colab.md]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import platform
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.colab_links import SETUP_ID  # noqa: E402

WORK = ROOT / "build" / "colab"
NOTEBOOKS = ["00", "01", "02", "03", "04", "05", "06", "07"]
#: o google.colab de mentira: só o que as lições usam (a moldura do painel)
STUB = {
    "__init__.py": '"""google.colab de mentira (make colab-check)."""\n',
    "output.py": (
        "def serve_kernel_port_as_iframe(port, **kwargs):\n"
        "    print(f'[google.colab de mentira] painel na porta {port}')\n"
    ),
}
VERSIONS = [
    "tensorflow",
    "tf-keras",
    "keras",
    "numpy",
    "pandas",
    "scikit-learn",
    "ipython",
    "ray",
    "optuna",
    "aiohttp",
    "yarl",
]


def notebook_for(prefix: str) -> Path:
    found = [
        p for p in sorted((ROOT / "notebooks").glob(f"{prefix}_*.ipynb")) if "_aluno" not in p.name
    ]
    return found[0]


def repo_name(nb: nbformat.NotebookNode) -> str:
    """O nome do repositório na primeira célula (a pasta onde ela procura o clone)."""
    cell = next(c for c in nb.cells if c.get("id") == SETUP_ID)
    return re.search(r'REPO, BRANCH = "[^"/]+/([^"]+)"', cell.source)[1]


def prepare(name: str) -> tuple[Path, Path]:
    """A pasta de trabalho do "Colab" (com o clone = link para esta cópia) e a do stub."""
    content = WORK / "content"
    content.mkdir(parents=True, exist_ok=True)
    link = content / name
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)
    stub = WORK / "stub" / "google" / "colab"
    stub.mkdir(parents=True, exist_ok=True)
    for file, text in STUB.items():
        (stub / file).write_text(text)
    return content, stub.parents[1]


def run_one(path: Path, timeout: int) -> tuple[str, float, str]:
    """(✅ ou o erro, segundos, a saída da primeira célula)."""
    nb = nbformat.read(path, as_version=4)
    content, stub = prepare(repo_name(nb))
    # o Colab carrega o google.colab ao abrir o kernel: é isso que a 1ª célula testa
    nb.cells.insert(0, nbformat.v4.new_code_cell("import google.colab  # noqa: F401"))
    env = {
        "PYTHONPATH": str(stub),
        "LABUTILS_SCALE": "smoke",
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(Path.home()),
    }
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(content)}},
    )
    client.km = client.create_kernel_manager()
    started = time.monotonic()
    status = "✅"
    try:
        client.start_new_kernel(env=env)
        client.start_new_kernel_client()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    except (CellExecutionError, CellTimeoutError) as err:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # sem as cores do traceback
        lines = [ln for ln in text.splitlines() if ln.strip()]
        status = f"❌ célula {index}: {lines[-1][:200] if lines else type(err).__name__}"
    finally:
        client._cleanup_kernel()
    setup = next(c for c in nb.cells if c.get("id") == SETUP_ID)
    out = "".join(o.get("text", "") for o in setup.get("outputs", []) if "text" in o)
    return status, time.monotonic() - started, out.strip()


def versions() -> dict[str, str]:
    found = {}
    for name in VERSIONS:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "—"
    return {"python": platform.python_version(), **found}


def changed() -> list[str]:
    from labutils import colab

    return colab.changed_packages()


#: o que mudou para as lições rodarem com as versões do Colab, e o que não funciona lá
NOTES = """\
## O que teve de mudar para as versões do Colab

- **O clone também no `PYTHONPATH`** (1ª célula): com o clone só no `sys.path` do kernel, os
  processos filhos — os workers do Ray, os nós do `ray start` da lição 04, os processos da
  verificação da 07 — não achavam o `labutils` (`ModuleNotFoundError` nas lições 03, 04 e 07).
- **psutil 5.9.5** (o do Colab): não tem `Process.net_connections` (veio no 6.0);
  `labutils.cluster.network` usa `Process.connections` onde ele falta (lição 04).
- **tensorflow-metadata**: o 1.21.0 do Colab foi gerado com o protobuf 6.31 e o Colab traz o
  5.29.6; o `tensorflow_datasets` não carrega (`VersionError`). A 1ª célula instala o 1.17.3 com
  `--no-deps`, só se o import dos protos falhar (`labutils.colab.REPAIRS`).
- **Keras**: a 1ª célula liga `TF_USE_LEGACY_KERAS=1` (o tf_keras 2.20 do Colab) só na lição 07;
  as 05 e 06 usam o Keras 3.13 do Colab, como nos pinos (com o tf_keras, a 05 parava em
  `tf.keras.version()`, medido aqui).

## O que não funciona no Colab

- **O cluster da sala**: uma máquina do Colab não aceita conexões de fora; a lição 04 roda o
  `LocalCluster` (nó principal e nós de trabalho na mesma máquina).
- **Arquivos entre notebooks**: cada notebook tem o seu runtime; `data/` e `results/` somem com
  ele. A lição 06 treina um modelo rápido se não achar o da 05; para guardá-los, Drive com
  `LABUTILS_DATA_DIR` e `LABUTILS_RESULTS_DIR` (a lição 00 diz como).
- **GPU**: o caminho de GPU das lições não foi rodado numa GPU; use o runtime de CPU.
- **Velocidades**: as 2 vCPUs são 1 núcleo com SMT; o `jsonschema` 4.26 do Colab importa o
  `rfc3987_syntax`, que deixa cada processo do Ray ~1 s mais lento ao subir (o laboratório fixa o
  4.24.1; no Colab ele não é trocado).
- **Não conferido aqui**: o clone de verdade (`git clone` do fork) e a moldura do painel
  (`serve_kernel_port_as_iframe`, aqui um `google.colab` de mentira).
"""


def earlier_rows(path: Path) -> dict[str, tuple[str, str]]:
    """As linhas de uma execução anterior (``--keep``): nome → (resultado, tempo)."""
    found = {}
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    for name, status, seconds in re.findall(r"^\| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$", text, re.M):
        if seconds.strip() != "—":
            found[name] = (status.strip(), seconds.strip())
    return found


def report(
    rows: list[tuple[str, str, float, str]],
    skipped: list[str],
    earlier: dict[str, tuple[str, str]] | None = None,
) -> str:
    snapshot = (ROOT / "tools" / "colab_constraints.txt").read_text().splitlines()[1]
    lines = [
        "# As lições com as versões do Google Colab (`make colab-check`)",
        "",
        "Gerado por `tools/colab_check.py` em "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, escala `smoke`, num ambiente "
        "feito com as restrições `tools/colab_constraints.txt` (os pacotes do Colab nas versões "
        "dele;" + snapshot.split("Fonte:")[1].rstrip(".") + "). Cada lição roda num kernel novo "
        "com um `google.colab` de mentira carregado, o que faz a primeira célula agir; ela acha o "
        "clone já na pasta de trabalho (um link para esta cópia) e instala o que falta.",
        "",
        "| lição | resultado | tempo |",
        "| --- | --- | --- |",
    ]
    table = {name: (status, f"{seconds:.0f} s") for name, status, seconds, _ in rows}
    table |= {name: (earlier or {}).get(name, ("não rodou", "—")) for name in skipped}
    lines += [f"| `{name}` | {status} | {secs} |" for name, (status, secs) in sorted(table.items())]
    first = next((out for *_, out in rows if out), "")
    lines += [
        "",
        "## Versões usadas",
        "",
        "| pacote | versão |",
        "| --- | --- |",
    ]
    lines += [f"| {k} | {v} |" for k, v in versions().items()]
    diff = changed()
    lines += [
        "",
        "Pacotes do Colab que mudaram depois da primeira célula: "
        + (", ".join(diff) if diff else "nenhum")
        + f" ({', '.join('`' + n + '`' for n in ('aiohttp', 'yarl'))} podem mudar; ficam fora "
        "das restrições).",
        "",
        "Saída da primeira célula na primeira lição desta execução: "
        f"`{first.splitlines()[0] if first else 'nenhuma (só linhas guardadas)'}`",
        "",
        NOTES,
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=NOTEBOOKS, help="ex.: --only 00 05")
    parser.add_argument("--timeout", type=int, default=900, help="segundos por célula")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "colab.md")
    parser.add_argument(
        "--keep", action="store_true", help="as lições fora de --only guardam a linha anterior"
    )
    args = parser.parse_args()
    rows = []
    for prefix in args.only:
        path = notebook_for(prefix)
        status, seconds, out = run_one(path, args.timeout)
        print(f"{path.name:45s} {status}  {seconds:.0f} s", flush=True)
        rows.append((path.name, status, seconds, out))
    skipped = [notebook_for(p).name for p in NOTEBOOKS if p not in args.only]
    earlier = earlier_rows(args.out) if args.keep else {}
    args.out.write_text(report(rows, skipped, earlier), encoding="utf-8")
    print(f"gravei {args.out}")
    return 0 if all(status == "✅" for _, status, _, _ in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
