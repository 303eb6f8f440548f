#!/usr/bin/env python3
"""cpuid_patch.py - copies an x86-64 ELF file (a shared library such as ONNX Runtime's) with each of
its cpuid instructions replaced by ud2, and lists their file offsets in OUT.cpuid-sites.

usage: tools/bench/real/cpuid_patch.py IN OUT

Under the cpuid_cap preload library with MI_CPUID_CAP_SITES=OUT.cpuid-sites, each such ud2 traps
and is answered as a cpuid that reports an AVX2-only CPU: the way to run a library's AVX2 kernels
on an AVX-512 machine whose CPU or hypervisor lacks CPUID faulting (tools/bench/real/cpuid_cap.c).
The instructions are found by disassembling the executable sections (objdump -d), so a byte pair
0F A2 inside another instruction is never touched; each one's bytes are checked before the
change. OUT and its list are written next to each other through temporary files and renamed into
place, so a failed run leaves no half-written file. Prints the number of sites; exit 2 on an
error (not an ELF64 x86-64 file, no objdump, no cpuid instruction).
"""
import hashlib
import os
import re
import struct
import subprocess
import sys

CPUID, UD2 = b"\x0f\xa2", b"\x0f\x0b"


def fail(msg):
    sys.exit(f"cpuid_patch.py: {msg}")


def exec_segments(data, path):
    """(vaddr, file offset, size) of each executable PT_LOAD segment of an ELF64 x86-64 file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        fail(f"{path}: not a little-endian ELF64 file")
    machine, = struct.unpack_from("<H", data, 18)
    if machine != 62:
        fail(f"{path}: not an x86-64 file (e_machine {machine})")
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    segs = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1 and p_flags & 1:  # PT_LOAD, PF_X
            segs.append((p_vaddr, p_offset, p_filesz))
    return segs


def cpuid_addresses(path):
    """Virtual addresses of the cpuid instructions objdump finds in the executable sections."""
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, check=True).stdout
    except FileNotFoundError:
        fail("objdump (binutils) is not installed")
    except subprocess.CalledProcessError as e:
        fail(f"objdump -d {path}: {e.stderr.strip().splitlines()[-1] if e.stderr.strip() else e}")
    return [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+cpuid\s*$", out, re.M)]


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) == 2 else 2)
    src, dst = sys.argv[1], sys.argv[2]
    try:
        data = bytearray(open(src, "rb").read())
    except OSError as e:
        fail(f"{src}: {e.strerror}")
    segs = exec_segments(data, src)
    offsets = []
    for va in cpuid_addresses(src):
        seg = next((s for s in segs if s[0] <= va < s[0] + s[2]), None)
        if seg is None:
            fail(f"{src}: cpuid at 0x{va:x} is outside every executable segment")
        off = va - seg[0] + seg[1]
        if data[off:off + 2] != CPUID:
            fail(f"{src}: the bytes at file offset 0x{off:x} (cpuid at 0x{va:x}) are not 0F A2")
        data[off:off + 2] = UD2
        offsets.append(off)
    if not offsets:
        fail(f"{src}: no cpuid instruction found (nothing to cap)")
    sites = dst + ".cpuid-sites"
    digest = hashlib.sha256(open(src, "rb").read()).hexdigest()
    for path, body, mode in ((dst, bytes(data), "wb"),
                             (sites, f"# cpuid sites of {os.path.abspath(src)} (sha256 {digest}), now ud2\n" +
                              "".join(f"{o:x}\n" for o in offsets), "w")):
        tmp = path + ".part"
        with open(tmp, mode) as f:
            f.write(body)
        os.chmod(tmp, os.stat(src).st_mode & 0o777)
        os.replace(tmp, path)
    print(f"{len(offsets)} cpuid sites of {src} patched to ud2 in {dst}; listed in {sites}")


if __name__ == "__main__":
    main()
