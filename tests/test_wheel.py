"""The wheel `make wheel` builds is portable: its extension needs glibc 2.17
or older (manylinux2014), so the copy shipped to executors loads on
CentOS 7, Amazon Linux 2, RHEL 8, Ubuntu 20.04 and later.

The wheels are read from ``SLIDEWISE_TEST_WHEELS`` (``make test`` sets it to
``dist``, after packing the test build's wheel there, and then a missing
wheel fails), else ``dist`` (skipped when it holds none). The glibc symbol
versions the ``.so`` needs are read from its ELF ``.gnu.version_r`` section
here, in Python (no binutils needed); the reader is checked against
``objdump -T`` where binutils is installed."""

import os
import re
import shutil
import struct
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_GLIBC = (2, 17)
SHT_GNU_VERNEED = 0x6FFFFFFE


def version_needs(data: bytes) -> set:
    """The symbol versions (``GLIBC_2.14``, ...) an ELF file needs: the
    Vernaux names of its SHT_GNU_verneed section, by the section headers."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    bits = {1: 32, 2: 64}[data[4]]
    e = {1: "<", 2: ">"}[data[5]]
    if bits == 64:
        shoff, = struct.unpack_from(e + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 0x3A)
    else:
        shoff, = struct.unpack_from(e + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(e + "HH", data, 0x2E)

    def section(i):  # (type, offset, link, info) of section header i
        at = shoff + i * shentsize
        if bits == 64:
            _, typ, _, _, off, _, link, info = struct.unpack_from(e + "IIQQQQII", data, at)
        else:
            _, typ, _, _, off, _, link, info = struct.unpack_from(e + "IIIIIIII", data, at)
        return typ, off, link, info

    out = set()
    for i in range(shnum):
        typ, off, link, count = section(i)
        if typ != SHT_GNU_VERNEED:
            continue
        strtab = section(link)[1]

        def name(at):
            return data[strtab + at: data.index(b"\0", strtab + at)].decode()

        at = off
        for _ in range(count):  # Verneed entries, each with its Vernaux list
            _, cnt, _, aux, nxt = struct.unpack_from(e + "HHIII", data, at)
            a = at + aux
            for _ in range(cnt):
                _, _, _, vname, anext = struct.unpack_from(e + "IHHII", data, a)
                out.add(name(vname))
                a += anext
            at += nxt
    return out


def glibc_needed(versions) -> tuple:
    """The newest GLIBC_x.y among ``versions``, as (x, y); (0, 0) if none."""
    got = [tuple(int(x) for x in m.groups()) for v in versions
           if (m := re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", v))]
    return max(got, default=(0, 0))


def _wheels():
    d = os.environ.get("SLIDEWISE_TEST_WHEELS")
    path = os.path.join(ROOT, d or "dist")
    found = sorted(os.path.join(path, n) for n in os.listdir(path) if n.endswith(".whl")) \
        if os.path.isdir(path) else []
    if not found:
        msg = f"no wheel in {path}: build one with `make wheel` (PROFILE=dev packs the test build)"
        if d:
            pytest.fail(msg)
        pytest.skip(msg)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="manylinux wheels are built on Linux")
def test_wheel_needs_glibc_2_17_or_older():
    for whl in _wheels():
        assert re.search(r"-manylinux2014_\w+\.manylinux_2_17_\w+\.whl$|-manylinux_2_17_\w+\.whl$", whl), whl
        with zipfile.ZipFile(whl) as z:
            libs = [n for n in z.namelist() if re.search(r"\.so(\.|$)", n)]
            assert libs == ["slidewise/_slidewise.abi3.so"], libs
            needs = version_needs(z.read(libs[0]))
        assert any(v.startswith("GLIBC_") for v in needs), needs  # read, not an empty answer
        assert glibc_needed(needs) <= MAX_GLIBC, (whl, sorted(needs))


def _elf_files():
    """ELF files of this machine to check the reader on: this Python, a
    system binary, the installed extension."""
    import slidewise._slidewise as ext

    cands = [os.path.realpath(sys.executable), shutil.which("ls"), ext.__file__]
    return [p for p in cands if p and os.path.isfile(p)]


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) is not installed")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF files")
def test_version_reader_agrees_with_objdump():
    """The reader above gives objdump's answer; among the files checked, the
    system's own binaries need a glibc newer than 2.17 on any current Linux,
    so the wheel test can fail."""
    newest = []
    for p in _elf_files():
        out = subprocess.run(["objdump", "-T", p], capture_output=True, text=True, check=True).stdout
        want = set(re.findall(r"\((GLIBC_[\d.]+|GCC_[\d.]+|CXXABI_[\d.]+|GLIBCXX_[\d.]+)\)", out))
        want |= set(re.findall(r"\s(GLIBC_[\d.]+)\s", out))
        with open(p, "rb") as f:
            got = version_needs(f.read())
        assert {v for v in got if v.startswith("GLIBC_")} == {v for v in want if v.startswith("GLIBC_")}, p
        newest.append(glibc_needed(got))
    assert max(newest) > MAX_GLIBC, newest
