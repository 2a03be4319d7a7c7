#!/bin/sh
# Install the Debian packages memplan needs, when missing (python3-torch and
# python3-torchvision for the PyTorch exporter's test, tests/cli/t0800).  As
# root it runs apt-get; otherwise it names the packages and stops.
need=""
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in gcc make libjansson-dev libglpk-dev coinor-libcbc-dev coinor-libclp-dev libssl-dev python3-torch python3-torchvision; do
	have "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "memplan: installing$need"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq $need >/dev/null || {
		echo "memplan: apt-get install$need failed" >&2; exit 1; }
else
	echo "memplan: missing Debian packages:$need (run: sudo apt-get install$need)" >&2
	exit 1
fi
