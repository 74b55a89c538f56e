#!/usr/bin/env python3
"""Regenerates the binary seeds of the inspector fuzz targets (corpus/{inspect_file,fatbin,
cubin_elf}/): real nvcc output of the CPU tests' fixture kernel (tests/cpu/fixtures/kernel.cu),
cut down to the sections the inspector reads, plus hand-made edge cases (truncated, aliased,
escaped section counts). The JSON seeds are plain files written by hand. Needs nvcc and objcopy;
run it after a change of nvcc's fat binary layout and commit the result.
"""
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL = os.path.join(HERE, "..", "cpu", "fixtures", "kernel.cu")
CORPUS = os.path.join(HERE, "corpus")

# (seed name, nvcc flags): one image kind / variant / compression each.
OBJECTS = [
    ("sm80", ["-gencode", "arch=compute_80,code=sm_80"]),
    ("ptx80_zstd", ["-gencode", "arch=compute_80,code=compute_80"]),
    ("sm80_compress_all", ["-gencode", "arch=compute_80,code=sm_80", "-Xfatbin", "-compress-all"]),
    ("sm90a", ["-gencode", "arch=compute_90a,code=sm_90a"]),
    ("sm120_ptx120", ["-gencode", "arch=compute_120,code=sm_120",
                      "-gencode", "arch=compute_120,code=compute_120"]),
    ("lto90_rdc", ["-rdc=true", "-gencode", "arch=compute_90,code=lto_90"]),
]
CUBINS = [("sm80", "sm_80"), ("sm120", "sm_120")]


def run(*cmd):
    subprocess.run(cmd, check=True)


def write(folder, name, data):
    os.makedirs(os.path.join(CORPUS, folder), exist_ok=True)
    with open(os.path.join(CORPUS, folder, name), "wb") as f:
        f.write(data)


def elf(sections, extra_headers=()):
    """A minimal ELF64 LE relocatable file: sections = [(name, type, bytes)]; extra_headers =
    [(name, index of the section whose bytes it points at)] to alias one section's bytes."""
    names = b"\0"
    offsets = {}
    for name, _, _ in list(sections) + [(n, 0, b"") for n, _ in extra_headers] + [(".shstrtab", 0, b"")]:
        offsets.setdefault(name, len(names))
        if offsets[name] == len(names):
            names += name.encode() + b"\0"
    body = b""
    placed = []  # (name offset, type, file offset, size)
    pos = 64
    for name, typ, data in list(sections) + [(".shstrtab", 3, names)]:
        placed.append((offsets[name], typ, pos + len(body), len(data)))
        body += data + b"\0" * (-len(data) % 8)
    for name, index in extra_headers:
        _, typ, off, size = placed[index]
        placed.insert(-1, (offsets[name], typ, off, size))
    shoff = 64 + len(body)
    shnum = len(placed) + 1
    ehdr = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    ehdr += struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, shnum, shnum - 1)
    table = b"\0" * 64
    for name_off, typ, off, size in placed:
        table += struct.pack("<IIQQQQIIQQ", name_off, typ, 0, 0, off, size, 0, 0, 8, 0)
    return ehdr + body + table


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in OBJECTS:
            obj = os.path.join(tmp, name + ".o")
            run("nvcc", "-c", *flags, KERNEL, "-o", obj)
            small = os.path.join(tmp, name + ".small.o")
            run("objcopy", "--only-section=.nv_fatbin", "--only-section=__nv_relfatbin", obj, small)
            write("inspect_file", name + ".o", open(small, "rb").read())
            for section in (".nv_fatbin", "__nv_relfatbin"):
                raw = os.path.join(tmp, name + section)
                run("objcopy", "-O", "binary", "--only-section=" + section, obj, raw)
                if os.path.getsize(raw):
                    write("fatbin", name + ".fatbin", open(raw, "rb").read())
        for name, arch in CUBINS:
            cubin = os.path.join(tmp, name + ".cubin")
            run("nvcc", "-cubin", "-arch=" + arch, KERNEL, "-o", cubin)
            write("cubin_elf", name + ".cubin", open(cubin, "rb").read())

    fatbin = open(os.path.join(CORPUS, "fatbin", "sm80.fatbin"), "rb").read()
    cubin = open(os.path.join(CORPUS, "cubin_elf", "sm80.cubin"), "rb").read()
    prog = 1  # SHT_PROGBITS
    # Whole files: the ways a file can be cut short or lie about its sections.
    write("inspect_file", "empty", b"")
    write("inspect_file", "archive", b"!<arch>\n")
    write("inspect_file", "elf_header_cut", elf([(".nv_fatbin", prog, fatbin)])[:40])
    write("inspect_file", "elf32", b"\x7fELF\x01\x01\x01" + b"\0" * 57)
    whole = elf([(".nv_fatbin", prog, fatbin)])
    write("inspect_file", "section_table_cut", whole[:-40])
    past_end = bytearray(whole)  # the .nv_fatbin section (header [1]) claims more than the file
    shoff, = struct.unpack_from("<Q", past_end, 40)
    struct.pack_into("<Q", past_end, shoff + 64 + 32, len(whole))
    write("inspect_file", "fatbin_past_end", bytes(past_end))
    write("inspect_file", "aliased_x4",
          elf([(".nv_fatbin", prog, fatbin)], [(".nv_fatbin", 0)] * 3))
    write("inspect_file", "two_containers", elf([(".nv_fatbin", prog, fatbin + b"\0" * 8 + fatbin)]))
    escaped = bytearray(whole)  # e_shnum 0 and e_shstrndx 0xffff: both read from section [0]
    shoff, = struct.unpack_from("<Q", escaped, 40)
    shnum, shstrndx = struct.unpack_from("<HH", escaped, 60)
    struct.pack_into("<HH", escaped, 60, 0, 0xFFFF)
    struct.pack_into("<Q", escaped, shoff + 32, shnum)
    struct.pack_into("<I", escaped, shoff + 40, shstrndx)
    write("inspect_file", "escaped_counts", bytes(escaped))
    # Fat binary sections.
    write("fatbin", "container_header_cut", fatbin[:12])
    write("fatbin", "entry_header_cut", fatbin[:16 + 40])
    write("fatbin", "zero_padding", b"\0" * 8 + fatbin + b"\0" * 16 + fatbin)
    # Embedded cubins: no section table, a string table index out of range.
    no_table = bytearray(cubin)
    struct.pack_into("<Q", no_table, 40, 0)
    write("cubin_elf", "no_section_table", bytes(no_table))
    bad_names = bytearray(cubin)
    struct.pack_into("<H", bad_names, 62, 0xFFFE)
    write("cubin_elf", "bad_shstrndx", bytes(bad_names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
