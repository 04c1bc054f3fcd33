#!/bin/busybox sh
# drivers/firmware/efi: the kernel booted as an EFI application (OVMF): every runtime
# service call goes through efi_runtime_lock (runtime-wrappers.c), and efivarfs reads
# and writes variables under efivars_lock (vars.c).  List OVMF's variables, read them,
# write one of our own and read it back (the store is a fresh copy for each boot).
[ -d /sys/firmware/efi ] || { echo "# workload efi: not booted through EFI"; exit 1; }
mount -t efivarfs none /sys/firmware/efi/efivars || exit 1
v=/sys/firmware/efi/efivars
n=$(ls $v | wc -l)
[ "$n" -gt 0 ] || { echo "# workload efi: no variables"; exit 1; }
cat $v/* > /dev/null || exit 1
# attributes (NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS), then the data
f=$v/S2mTest-2e7a6f1c-8d0b-4c57-9a3e-5b1f0c2d4e6f
printf '\007\000\000\000s2m' > $f || exit 1
[ "$(tail -c 3 $f)" = "s2m" ] || { echo "# workload efi: our variable reads back wrong"; exit 1; }
echo "# workload efi: $n variables read, one written and read back"
