"""The benchmark (`python3 -m qemu.bench`, `make bench`); see __main__."""
