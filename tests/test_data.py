"""Carregadores de dados: caminho real, dados locais na escala smoke, mensagens claras."""

import time

import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor
from sklearn.model_selection import train_test_split

from labutils import data


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))
    return tmp_path


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setattr(data, "reachable", lambda *a, **k: OSError("sem rede"))


REAL_FEATURES = [
    "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude",
]  # fmt: skip


def test_smoke_housing_goes_through_sklearn_loader_with_a_learnable_fixture(data_dir):
    bunch = data.load_california_housing("smoke")
    assert bunch.is_fixture and "SINTÉTICOS" in bunch.source
    assert bunch.data.shape == (2_000, 8) and bunch.target.shape == (2_000,)
    assert bunch.feature_names == REAL_FEATURES
    assert (data_dir / "fixtures" / "california_housing_2000" / data.HOUSING_FILE).exists()
    # faixas plausíveis, como no conjunto real (alvo em US$ 100 mil, latitude da Califórnia)
    assert 0.14 < bunch.target.min() and bunch.target.max() <= 5.00001
    assert 32 <= bunch.data[:, 6].min() and bunch.data[:, 6].max() <= 42.1
    assert np.isfinite(bunch.data).all()
    X_tr, X_te, y_tr, y_te = train_test_split(bunch.data, bunch.target, random_state=0)
    model = RandomForestRegressor(n_estimators=20, random_state=0).fit(X_tr, y_tr)
    assert model.score(X_te, y_te) > 0.5


def test_full_housing_uses_the_cached_file_when_present(data_dir):
    data.make_housing_fixture(data.housing_home(), n_samples=300)
    bunch = data.load_california_housing("full")
    assert not bunch.is_fixture and bunch.data.shape == (300, 8)


def test_full_housing_missing_offline_is_a_clear_message(data_dir, offline):
    start = time.perf_counter()
    with pytest.raises(data.DatasetUnavailableError) as err:
        data.load_california_housing("full")
    assert time.perf_counter() - start < 5
    assert "make data" in str(err.value) and "LABUTILS_SCALE=smoke" in str(err.value)


def test_smoke_cifar_is_mock_data_through_tfds(data_dir):
    cifar = data.load_cifar100("smoke")
    assert cifar.is_mock and "ALEATÓRIAS" in cifar.source
    assert (cifar.num_train, cifar.num_test) == (512, 256)
    images, labels = next(iter(cifar.train.batch(600)))
    assert images.shape == (512, 32, 32, 3) and images.dtype.name == "uint8"
    labels = labels.numpy()
    assert labels.dtype == np.int64 and 0 <= labels.min() <= labels.max() < 100
    assert cifar.info.features["label"].num_classes == 100
    assert not (data_dir / "cifar100").exists()  # o mock não suja a pasta de dados


def test_full_cifar_missing_offline_is_a_clear_message(data_dir, offline):
    # o tfds prepara numa pasta "*.incomplete*" e só a renomeia no fim: não conta como dados
    (data_dir / "cifar100" / "3.0.2.incomplete.abc123").mkdir(parents=True)
    start = time.perf_counter()
    with pytest.raises(data.DatasetUnavailableError, match="CIFAR-100 não está em"):
        data.load_cifar100("full")
    assert time.perf_counter() - start < 30


def test_cli_status_reports_missing_data(data_dir, capsys):
    assert data.main(["status"]) == 1
    out = capsys.readouterr().out
    assert "California Housing: ausente" in out and out.count("ausente") == 2
    data.make_housing_fixture(data.housing_home(), n_samples=50)
    data.main(["status"])
    assert "California Housing: presente" in capsys.readouterr().out


def test_corrupt_housing_cache_names_the_file_to_delete_or_is_downloaded_again(
    data_dir, monkeypatch, capsys
):
    cached = data.make_housing_fixture(data.housing_home(), n_samples=300)
    raw = cached.read_bytes()
    cached.write_bytes(raw[: len(raw) // 3])  # um download interrompido
    with pytest.raises(data.DatasetUnavailableError) as err:
        data.load_california_housing("full", download=False)
    assert f"rm {cached}" in str(err.value) and "download interrompido" in str(err.value)
    monkeypatch.setattr(data, "_fetch", lambda _, home, *a: data.make_housing_fixture(home, 120))
    bunch = data.load_california_housing("full")
    assert bunch.data.shape == (120, 8)
    assert "corrompido" in capsys.readouterr().out


def test_rehearsal_data_have_the_real_size_and_say_they_are_synthetic(tmp_path, monkeypatch):
    """O ensaio (``LABUTILS_SYNTHETIC_DATA=1``, escala full): os mesmos carregadores, dados
    sintéticos do tamanho real, e a fonte diz isso (os notebooks imprimem a fonte)."""
    monkeypatch.setenv("LABUTILS_SYNTHETIC_DATA", "1")
    monkeypatch.setenv("LABUTILS_DATA_DIR", str(tmp_path))
    housing = data.load_california_housing("full", download=False)
    assert housing.data.shape == (data.HOUSING_ROWS, 8) and housing.is_fixture
    assert "SINTÉTICOS" in housing.source
    cifar = data.load_cifar100("full", download=False)
    assert (cifar.num_train, cifar.num_test) == (data.CIFAR_TRAIN, data.CIFAR_TEST)
    assert cifar.is_mock and "ALEATÓRIAS" in cifar.source and "ensaio" in cifar.source
    image, label = next(iter(cifar.train))
    assert image.shape == (32, 32, 3) and 0 <= int(label) < 100
    monkeypatch.delenv("LABUTILS_SYNTHETIC_DATA")
    with pytest.raises(data.DatasetUnavailableError):  # sem o ensaio, os reais são exigidos
        data.load_cifar100("full", download=False)
