"""Lição 01 sem Ray: o tamanho da demonstração do ``ray.put`` cabe no armazém de objetos."""

from __future__ import annotations

from tools.lesson_code import load


def test_the_put_demo_fits_in_half_of_the_object_store():
    size_mb = load("01_fundamentos_ray").tamanho_demo_mb
    gib = 1024**3
    assert size_mb(20 * gib, 11, teto_mb=200) == 200  # cabe: o teto da escala
    assert size_mb(2 * gib, 11, teto_mb=200) == 93  # macOS: 11 cópias de 93 MB em 1 GiB
    assert 11 * size_mb(2 * gib, 11, teto_mb=200) * 1024**2 <= gib
    assert size_mb(10 * 1024**2, 11, teto_mb=200) == 1  # ao menos 1 MB
