"""Os dados do laboratório, sempre pelos carregadores reais (``fetch_california_housing`` e
``tfds.load``), em ``data/``: os reais na escala ``full``; na ``smoke`` e no ensaio, dados locais
(um California Housing SINTÉTICO, o ``tfds.testing.mock_data``), e a ``source`` diz isso.
Antes de a sala ficar sem internet: ``python -m labutils.data download`` (ou ``status``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labutils.config import DATA_DIR_ENV, data_dir, sizes, synthetic_data
from labutils.system import reachable

#: de onde o scikit-learn e o tfds baixam cada conjunto
HOSTS = {"California Housing": "ndownloader.figshare.com", "CIFAR-100": "www.cs.toronto.edu"}
HOUSING_FILE = "cal_housing_py3.pkz"  # nome que o scikit-learn dá ao arquivo em cache
#: tamanhos reais, os do ensaio com dados sintéticos (``LABUTILS_SYNTHETIC_DATA=1``)
HOUSING_ROWS = 20_640
CIFAR_TRAIN, CIFAR_TEST = 50_000, 10_000


class DatasetUnavailableError(RuntimeError):
    """O conjunto de dados não está em ``data/`` e não pôde ser baixado."""


def _fetch(name: str, where: Path, download: bool, fetch) -> None:
    """Baixa com ``fetch()``; sem rede (ou sem ``download``), o que falta, onde e como obter."""
    message = (
        f"O conjunto {name} não está em {where} e não foi possível baixá-lo (sem acesso a "
        f"{HOSTS[name]}). Numa máquina com internet rode `make data` e copie a pasta data/ para "
        f"{data_dir()} (ou aponte {DATA_DIR_ENV} para ela); ou use LABUTILS_SCALE=smoke, que usa "
        "dados locais."
    )
    if not download or reachable(HOSTS[name], 443) is not None:
        raise DatasetUnavailableError(message)
    try:
        fetch()
    except Exception as err:  # os erros de rede variam de tipo
        raise DatasetUnavailableError(f"{message}\n(erro: {err})") from err


# ---------------------------------------------------------------- California Housing


def housing_home() -> Path:
    return data_dir() / "california_housing"


def make_housing_fixture(home: Path, n_samples: int = 2_000, seed: int = 0) -> Path:
    """Um arquivo SINTÉTICO no formato do cache do scikit-learn: o esquema e faixas plausíveis do
    real, com um alvo (em US$ 100 mil) que depende das variáveis (o modelo tem o que aprender)."""
    import joblib
    import numpy as np

    rng = np.random.default_rng(seed)
    households = np.maximum(rng.lognormal(6.0, 0.6, n_samples).round(), 2.0)
    ave_rooms = np.clip(rng.normal(5.4, 1.2, n_samples), 1.5, 12.0)
    total_rooms = (ave_rooms * households).round()
    total_bedrooms = (total_rooms * np.clip(rng.normal(0.21, 0.03, n_samples), 0.1, 0.4)).round()
    population = (households * np.clip(rng.normal(3.0, 0.8, n_samples), 1.0, 8.0)).round()
    income = np.clip(rng.lognormal(1.3, 0.45, n_samples), 0.5, 15.0)
    age = rng.integers(1, 53, n_samples).astype(float)
    lat = rng.uniform(32.5, 42.0, n_samples)
    lon = rng.uniform(-124.3, -114.3, n_samples)
    coast = np.exp(-np.abs(lon + 122.0) / 2.0)  # mais caro perto da costa
    value = 0.45 * income + 0.012 * age + 1.2 * coast + 0.08 * ave_rooms
    value = value + rng.normal(0.0, 0.25, n_samples) + 0.4 * np.sin(income * 1.7)
    value = np.clip(value, 0.15, 5.00001) * 100_000
    # Ordem das colunas do cache do scikit-learn: alvo, renda, idade, cômodos, quartos,
    # população, domicílios, latitude, longitude.
    table = np.column_stack(
        [value, income, age, total_rooms, total_bedrooms, population, households, lat, lon]
    )
    home.mkdir(parents=True, exist_ok=True)
    path = home / HOUSING_FILE
    partial = path.with_name(path.name + ".parcial")
    joblib.dump(table, partial, compress=6)
    os.replace(partial, path)  # nunca deixa um arquivo pela metade com o nome final
    return path


def load_california_housing(scale: str | None = None, *, download: bool = True) -> Any:
    """O ``Bunch`` do scikit-learn, com ``is_fixture`` (dados sintéticos?) e ``source``."""
    from sklearn.datasets import fetch_california_housing

    def read(home: Path) -> Any:
        return fetch_california_housing(data_home=str(home), download_if_missing=False)

    size = sizes(scale)
    if size.is_smoke or synthetic_data():
        rows = size.housing_examples or HOUSING_ROWS  # o ensaio: o tamanho real
        home = data_dir() / "fixtures" / f"california_housing_{rows}"
        if not (home / HOUSING_FILE).exists():
            make_housing_fixture(home, n_samples=rows)
        bunch = read(home)
        bunch.is_fixture = True
        bunch.source = (
            f"dados SINTÉTICOS ({len(bunch.target)} linhas) com o esquema do California Housing, "
            f"não os reais ({home})"
        )
        return bunch

    home = housing_home()
    cached = home / HOUSING_FILE
    if cached.exists():
        try:
            bunch = read(home)
        except Exception as err:  # arquivo truncado: joblib/zlib/pickle levantam tipos variados
            if not download:
                raise DatasetUnavailableError(
                    f"O arquivo {cached} não pôde ser lido ({type(err).__name__}: {err}), "
                    f"talvez um download interrompido. Apague-o e rode de novo:\n  rm {cached}"
                ) from err
            print(f"Arquivo {cached} corrompido ({type(err).__name__}); baixando de novo.")
            cached.unlink()
    if not cached.exists():  # um download interrompido cai no arquivo corrompido acima
        _fetch(
            "California Housing", home, download, lambda: fetch_california_housing(data_home=home)
        )
        bunch = read(home)
    bunch.is_fixture = False
    bunch.source = f"California Housing real ({home})"
    return bunch


# ---------------------------------------------------------------- CIFAR-100


@dataclass
class Cifar100:
    """CIFAR-100 como ``tf.data.Dataset`` de pares ``(imagem uint8 32×32×3, rótulo 0–99)``."""

    train: Any
    test: Any
    info: Any
    num_train: int
    num_test: int
    is_mock: bool
    source: str
    num_classes: int = 100


def load_cifar100(scale: str | None = None, *, download: bool = True) -> Cifar100:
    """CIFAR-100 pelo ``tfds.load``; na escala ``smoke`` e no ensaio, imagens ALEATÓRIAS do
    ``tfds.testing.mock_data``, que só vale no processo que o ativa (chame-a no worker)."""
    import tensorflow_datasets as tfds
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.ERROR)
    size = sizes(scale)
    load = {"name": "cifar100", "split": ["train", "test"], "as_supervised": True}
    if size.is_smoke or synthetic_data():  # o ensaio: o tamanho real
        n_train = size.cifar_train_examples or CIFAR_TRAIN
        n_test = size.cifar_test_examples or CIFAR_TEST
        # pasta temporária: o mock cria pastas vazias que não devem ir para data/
        mock_dir = Path(tempfile.gettempdir()) / "labutils-tfds-mock"
        with tfds.testing.mock_data(num_examples=max(n_train, n_test)):
            (train, test), info = tfds.load(**load, with_info=True, data_dir=str(mock_dir))
        source = (
            f"tfds.testing.mock_data: {n_train} + {n_test} imagens ALEATÓRIAS "
            f"(escala {size.scale}{'' if size.is_smoke else ', ensaio'}), não o CIFAR-100 real"
        )
        return Cifar100(train.take(n_train), test.take(n_test), info, n_train, n_test, True, source)

    where = data_dir()
    try:
        (train, test), info = tfds.load(**load, with_info=True, data_dir=str(where), download=False)
    except AssertionError:  # não está em data/: o mesmo load, baixando
        _fetch("CIFAR-100", where, download, lambda: tfds.load(**load, data_dir=str(where)))
        (train, test), info = tfds.load(**load, with_info=True, data_dir=str(where), download=False)
    n_train, n_test = (info.splits[split].num_examples for split in load["split"])
    return Cifar100(train, test, info, n_train, n_test, False, f"CIFAR-100 ({where})")


# ---------------------------------------------------------------- linha de comando


def datasets_present() -> dict[str, bool]:
    """Quais conjuntos reais já estão na pasta de dados."""
    housing = (housing_home() / HOUSING_FILE).exists()
    cifar = any((data_dir() / "cifar100").glob("*/dataset_info.json"))
    return {"California Housing": housing, "CIFAR-100": cifar}


def _status() -> int:
    present = datasets_present()
    print(f"pasta de dados: {data_dir()}")
    for name, found in present.items():
        print(f"  {name + ':':19} {'presente' if found else 'ausente'}")
    return 0 if all(present.values()) else 1


def _download(only: str | None) -> int:
    ok = True
    for name in ("housing", "cifar100") if only is None else (only,):
        try:
            if name == "housing":
                rows = load_california_housing("full").data.shape[0]
                print(f"California Housing: {rows} linhas em {housing_home()}")
            else:
                cifar = load_cifar100("full")
                print(
                    f"CIFAR-100: {cifar.num_train} treino + {cifar.num_test} teste em {data_dir()}"
                )
        except DatasetUnavailableError as err:
            print(err, file=sys.stderr)
            ok = False
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labutils.data", description="Prepara os dados do laboratório em data/."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    down = sub.add_parser("download", help="baixa os conjuntos de dados reais para data/")
    down.add_argument("--only", choices=["housing", "cifar100"], help="baixa só um deles")
    sub.add_parser("status", help="mostra quais conjuntos já estão em data/")
    args = parser.parse_args(argv)
    if args.command == "download":
        return _download(args.only)
    return _status()


if __name__ == "__main__":
    raise SystemExit(main())
