#!/usr/bin/env bash
# Instala pacotes do Debian para os testes de navegador e da sala; nunca faz o make test falhar:
# sem root, sem apt-get ou com o apt quebrado, avisa e os testes que dependem deles são PULADOS
# (o motivo aparece no resumo do pytest).
# Uso: tools/apt_install.sh "o que fica sem" pacote...
what="$1"; shift
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "Sem root (ou sem apt-get) para instalar $*: $what. Para rodá-los: sudo apt-get install $*"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# o make test instala o navegador e o firewall ao mesmo tempo: um apt-get por vez (o dpkg é um só)
mkdir -p build && exec 9>build/apt.lock && { ! command -v flock >/dev/null || flock 9; }
# com prazo: um espelho que não responde não prende o make test
install() { timeout 300 apt-get "$@" update -q && timeout 900 apt-get "$@" install -y -q "${PKGS[@]}"; }
PKGS=("$@")
install && exit 0
# Em alguns contêineres o /tmp não aceita os arquivos temporários do usuário _apt (o apt verifica as
# assinaturas com ele): de novo, como root e com uma pasta temporária própria.
tmp="$(pwd)/build/apt-tmp"; mkdir -p "$tmp" && chmod 1777 "$tmp"
TMPDIR="$tmp" install -o APT::Sandbox::User=root && exit 0
echo "O apt-get não instalou $*: $what."
exit 0
