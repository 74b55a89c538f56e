"""Checks that a file is a whole 64-bit ELF shared library for this machine before dlopen.

dlopen maps a library's segments without checking them against the file's size; touching a page
past the end of a truncated file (an interrupted copy or download) is a SIGBUS that kills the
interpreter, not an exception. This reads the ELF header and program headers (a few KB) and
says what is wrong. Hand-written over `struct` because the package has no runtime dependency
(pyelftools would be one) and only sizes and offsets are needed.
"""
import os
import platform
import stat
import struct
from typing import Optional

_ELF_MAGIC = b"\x7fELF"
_ELFCLASS64, _ELFDATA2LSB, _ET_DYN = 2, 1, 3
# e_machine of the platforms tpcomm builds for (platform.machine() names).
_MACHINES = {"x86_64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21}
_MACHINE_NAMES = {62: "x86-64", 183: "AArch64", 21: "PowerPC64", 3: "i386", 40: "ARM"}
# Elf64_Ehdr after e_ident: e_type, e_machine, e_version, e_entry, e_phoff, e_shoff, e_flags,
# e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx.
_EHDR = struct.Struct("<HHIQQQIHHHHHH")
_PHDR = struct.Struct("<IIQQQQQQ")  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, ...
_EHDR_SIZE = 16 + _EHDR.size  # 64


def problem(path: str) -> Optional[str]:
    """None if `path` looks like a whole shared library for this machine, else what is wrong."""
    try:
        # Only a regular file can be a library. A FIFO would block open() until some writer
        # came (forever), a device would be read as it streams: refuse them unopened, and open
        # non-blocking so that one swapped in after the check cannot block either.
        why = _not_regular(os.stat(path).st_mode)
        if why:
            return why
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            why = _not_regular(st.st_mode)
            if why:
                return why
            size = st.st_size
            head = f.read(_EHDR_SIZE)
            if len(head) < _EHDR_SIZE:
                return f"{size} bytes: too short for an ELF header (truncated?)"
            why = _header_problem(head)
            if why:
                return why
            (_, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
             _) = _EHDR.unpack_from(head, 16)
            ph_end = phoff + phnum * phentsize
            if phnum and phentsize != _PHDR.size:
                return f"program header entries of {phentsize} bytes (ELF64 has {_PHDR.size})"
            if ph_end > size:
                return _truncated("the program headers end", ph_end, size)
            if shoff and shoff + shnum * shentsize > size:
                return _truncated("the section header table ends", shoff + shnum * shentsize,
                                  size)
            f.seek(phoff)
            table = f.read(phnum * phentsize)
    except OSError as e:
        return f"cannot read it: {e.strerror or e}"
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz, _, _ = _PHDR.unpack_from(table, i * _PHDR.size)
        if p_offset + p_filesz > size:
            return _truncated(f"segment {i} (type {p_type:#x}) ends", p_offset + p_filesz, size)
    return None


def _not_regular(mode: int) -> Optional[str]:
    if stat.S_ISREG(mode):
        return None
    kinds = [(stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a directory"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    kind = next((name for test, name in kinds if test(mode)), f"file type {stat.S_IFMT(mode):#o}")
    return f"{kind}, not a regular file: not opened"


def _header_problem(head: bytes) -> Optional[str]:
    if head[:4] != _ELF_MAGIC:
        return f"not an ELF file (it starts with {head[:4]!r})"
    if head[4] != _ELFCLASS64:
        return f"ELF class {head[4]}, not 64-bit (ELFCLASS64)"
    if head[5] != _ELFDATA2LSB:
        return "a big-endian ELF file; this machine is little-endian"
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    if e_type != _ET_DYN:
        return f"ELF type {e_type}, not a shared library (ET_DYN)"
    host = platform.machine()
    want = _MACHINES.get(host)
    if want is not None and e_machine != want:
        built = _MACHINE_NAMES.get(e_machine, f"machine {e_machine}")
        return f"built for {built}, this machine is {host}"
    return None


def _truncated(what: str, end: int, size: int) -> str:
    return f"{what} at byte {end}, but the file has {size} bytes (truncated or corrupt)"
