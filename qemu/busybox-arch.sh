#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The static busybox of another architecture, for that architecture's initramfs:
#   qemu/busybox-arch.sh ARCH DEST      e.g. arm64 work/arm64/busybox
# Debian's busybox-static:ARCH, fetched with `apt-get download` (dpkg learns the
# foreign architecture once, then `apt-get update`) and unpacked with dpkg-deb;
# nothing is installed on the host.  Idempotent: an existing DEST is kept.
set -eu
arch=$1
dest=$2
[ -x "$dest" ] && exit 0
if [ "$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; else
	echo "busybox-arch: error: need root or sudo to add dpkg architecture $arch" >&2; exit 1
fi
if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
	echo "busybox-arch: dpkg --add-architecture $arch, apt-get update"
	$sudo dpkg --add-architecture "$arch"
	$sudo apt-get update -q >/dev/null
fi
dir=$(dirname "$dest")
mkdir -p "$dir/deb"
(cd "$dir/deb" && rm -f busybox-static_*.deb && apt-get download -q "busybox-static:$arch" >/dev/null)
rm -rf "$dir/deb/root"
dpkg-deb -x "$dir"/deb/busybox-static_*_"$arch".deb "$dir/deb/root"
cp "$dir/deb/root/bin/busybox" "$dest.tmp"
mv "$dest.tmp" "$dest"
echo "busybox-arch: $dest ($(dpkg-deb -f "$dir"/deb/busybox-static_*_"$arch".deb Version))"
