"""Collectors: thin readers of kernel data (procfs, cgroupfs) and psutil, plus the per-tick collector."""
