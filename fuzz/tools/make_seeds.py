#!/usr/bin/env python3
"""Writes the seed corpus under fuzz/corpus/<target>/: a handful of small,
structured inputs per target in the formats documented at the top of each
fuzz/targets/<target>.cc. Rerun after changing an input format:

    python3 fuzz/tools/make_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus")

u8 = lambda v: struct.pack("<B", v & 0xFF)
u16 = lambda v: struct.pack("<H", v & 0xFFFF)
u32 = lambda v: struct.pack("<I", v & 0xFFFFFFFF)
u64 = lambda v: struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)

GDT_GPA = 0xC0000000
TLS_DESC = 0x00CFF2000000FFFF
# FuzzVm::Number's list, in its order.
KNOWN = [1, 3, 5, 10, 13, 15, 17, 18, 24, 26, 29, 40, 41, 42, 43, 44, 64, 0, 2, 63, 65, 127, 128]
IPI_VECTOR = 0x21


def nr(n):  # FuzzVm::Number: byte b, b % 8 != 7, index b / 8
    return u8(KNOWN.index(n) * 8)


def raw(v):  # FuzzVm::Arg tag 0
    return u8(0) + u64(v)


def small(v):  # FuzzVm::Arg tag 1
    return u8(1) + u8(v)


def tls_gpa(slot):  # FuzzVm::Arg tag 5: slot 7 + k
    return u8(5) + u8(slot - 7)


def vm_header(ram=0, fill=0, gdt=0, cpus=1, self_cpu=0, blocked=0, registered=0):
    """RAM 0x4000, GDT 4096 bytes; then the fake vCPUs: how many, the caller,
    which are blocked, which registered a run-state area (each at
    0x4000 + 8 n, inside RAM for ram=2)."""
    areas = b"".join(u8(1) for cpu in range(cpus) if registered >> cpu & 1)
    return (u8(ram) + u8(fill) + u8(gdt) + u8(cpus - 1) + u8(self_cpu) + u32(blocked) +
            u32(registered) + areas)


def call(n, *args, cpl=0):  # kind 1: HandleExit
    a = list(args) + [small(0)] * (5 - len(args))
    return u8(1) + u8(cpl) + nr(n) + b"".join(a)


def poke(off, data):
    return u8(0) + u32(off) + u8(len(data)) + data


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def dispatcher():
    d = os.path.join(CORPUS, "hypercall_dispatcher")
    text = b"hello from the guest\n"
    write(f"{d}/console_write", vm_header() + poke(0x1800, text) +
          call(18, small(0), small(len(text)), raw(0x1800)))
    write(f"{d}/update_descriptor_tls", vm_header() +
          call(10, tls_gpa(7), raw(TLS_DESC)) + call(10, tls_gpa(9), raw(0)))
    write(f"{d}/update_descriptor_reserved", vm_header() + call(10, raw(GDT_GPA + 8), raw(TLS_DESC)))
    write(f"{d}/cr0_if_timer", vm_header() + call(5, small(1)) + call(41, raw(0x80050033)) +
          call(40, small(1)) + call(40, small(0)) + call(15, raw(12345)))
    write(f"{d}/mmu_update_one", vm_header(ram=2) +
          poke(0x2000, u64(0x10008) + u64(0x3003)) + call(1, raw(0x2000), small(1)))
    # mmuext_op: NEW_BASEPTR to frames 0x10 then 0x11, then a batch whose
    # second op is refused (frame 0: the VMM's page), then an unknown command.
    def ext(cmd, arg1, arg2=0):
        return u32(cmd) + u32(0) + u64(arg1) + u64(arg2)
    write(f"{d}/mmuext_op_baseptr", vm_header(ram=2) +
          poke(0x3000, ext(5, 0x10) + ext(5, 0x11) + ext(5, 0) + ext(6, 0x10)) +
          call(26, raw(0x3000), small(2)) + call(26, raw(0x3018), small(2)) +
          call(26, raw(0x3048), small(1)))
    report = b"workload=ctx\nswitches=10\n"
    write(f"{d}/report", vm_header() + poke(0x1000, report) + call(42, raw(0x1000), small(len(report))))
    write(f"{d}/stack_switch_sched", vm_header() + call(3, small(0x10), raw(0xFFFF800000001000)) +
          call(29, small(0)) + call(29, small(2), small(7)))
    write(f"{d}/cpl3_refused", vm_header() + call(18, small(0), small(1), small(0), cpl=31))
    write(f"{d}/user_hypercall_huge", vm_header() + call(64, raw(1 << 63), small(0)))
    # Four vCPUs, the caller vCPU 1, vCPUs 2 and 3 blocked, all registered
    # (RAM 0x12000 holds their areas): IPIs to all, a flush of the others,
    # then the refusals (own bit, a vCPU the VM lacks, another vector).
    write(f"{d}/send_ipi_flush_tlb_others",
          vm_header(ram=2, cpus=4, self_cpu=1, blocked=0b1100, registered=0b1111) +
          call(43, small(0b1111), small(IPI_VECTOR)) + call(44, small(0b1101)) +
          call(44, small(0b0010)) + call(43, small(0b10000), small(IPI_VECTOR)) +
          call(43, small(0b1), small(0x20)))


def multicall():
    d = os.path.join(CORPUS, "multicall")

    def entry(n, *args):
        a = list(args) + [small(0)] * (6 - len(args))
        return nr(n) + u8(0) + b"".join(a)

    def mc(entries, place=0, k=0x800, count_mode=5, ram=0):
        # Placement mode, operand, n, count mode, entries.
        return (vm_header(ram=ram) + u8(place) + u16(k) + u16(len(entries)) + u8(count_mode) +
                b"".join(entries))

    write(f"{d}/two_entries", mc([entry(40, small(1)), entry(10, tls_gpa(8), raw(TLS_DESC))]))
    # An entry whose argument points back into the list (Arg tag 10: anchor + u16).
    write(f"{d}/self_pointing", mc([entry(18, small(0), small(64), u8(10) + u16(0)),
                                    entry(42, u8(10) + u16(16), small(32))]))
    write(f"{d}/nested", mc([entry(13, u8(10) + u16(0), small(1))]))
    write(f"{d}/over_page_tables", mc([entry(1, u8(10) + u16(0), small(1))], place=3, ram=2))
    write(f"{d}/at_gdt", mc([entry(29, small(0))], place=5))
    write(f"{d}/crossing_ram_end", mc([entry(5, small(0))] * 3, place=2, k=64))
    write(f"{d}/too_many", mc([entry(40, small(0))], count_mode=3))


def descriptor():
    d = os.path.join(CORPUS, "descriptor")

    def store(table, mode, operand, width, data):
        return u16(table) + u8(mode) + operand + u8(width) + data

    write(f"{d}/tls_ok", u64(TLS_DESC) + store(4096, 0, u8(0), 8, u64(TLS_DESC)))
    write(f"{d}/code_segment", u64(0x00AFFA000000FFFF) + store(4096, 0, u8(1), 8, u64(0x00AFFA000000FFFF)))
    write(f"{d}/tss_desc", u64(0x0000890030000067) + store(80, 0, u8(2), 8, u64(0x0000890030000067)))
    write(f"{d}/misaligned_short", u64(0) + store(4096, 1, u16(0x39), 4, u32(0xFFFF)))
    write(f"{d}/wrapping_offset", u64(TLS_DESC) + store(4096, 2, u8(7), 8, u64(TLS_DESC)))
    write(f"{d}/dpl0", u64(0x00CF92000000FFFF) + store(72, 3, u8(0), 8, u64(0x00CF92000000FFFF)))


def elf(loads, notes=(), entry=0x100000, phnum_extra=0):
    """A minimal ELF64: header, program headers, then segment bytes."""
    phs, blobs = [], []
    for paddr, data, memsz, flags in loads:
        phs.append((1, flags, data, paddr, memsz, 0x1000))
    for note in notes:
        phs.append((4, 4, note, 0, len(note), 4))
    off = 64 + 56 * len(phs)
    table = b""
    for typ, flags, data, paddr, memsz, align in phs:
        table += struct.pack("<IIQQQQQQ", typ, flags, off, paddr, paddr, len(data), memsz, align)
        blobs.append(data)
        off += len(data)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    hdr = ident + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, entry, 64, 0, 0, 64, 56,
                              len(phs) + phnum_extra, 64, 0, 0)
    return hdr + table + b"".join(blobs)


def pvh_note(value, size=4):
    desc = struct.pack("<I" if size == 4 else "<Q", value)
    return struct.pack("<III", 4, size, 18) + b"Xen\0" + desc


def elf_loader():
    d = os.path.join(CORPUS, "elf_loader")
    code = b"\xf4\xeb\xfd"  # hlt; jmp .-1
    write(f"{d}/minimal", elf([(0x100000, code, 3, 5)]))
    write(f"{d}/bss", elf([(0x100000, code, 0x3000, 5)]))
    write(f"{d}/two_loads_pvh", elf([(0x100000, code, 0x1000, 5), (0x101000, b"data", 0x2000, 6)],
                                     notes=[pvh_note(0x100000)]))
    write(f"{d}/pvh_8byte", elf([(0x100000, code, 16, 5)], notes=[pvh_note(0x100001, 8)]))
    write(f"{d}/overlap", elf([(0x100000, code, 0x2000, 5), (0x101000, code, 0x100, 5)]))
    write(f"{d}/below_1m", elf([(0x8000, code, 3, 5)], entry=0x8000))
    write(f"{d}/too_big", elf([(0x100000, code, 0x40000, 5)]))


def uart():
    d = os.path.join(CORPUS, "uart")
    wr = lambda off, data: u8(1 | off << 1) + u8(len(data)) + data
    rd = lambda off, n=1: u8(off << 1) + u8(n)
    write(f"{d}/hello", b"".join(wr(0, bytes([c])) + rd(5) for c in b"hi\n"))
    # Linux 8250 probing: DLAB divisor, FIFO enable, loopback test.
    write(f"{d}/linux_probe", wr(3, b"\x83") + wr(0, b"\x01") + wr(1, b"\x00") + wr(3, b"\x03") +
          wr(2, b"\x07") + rd(2) + wr(4, b"\x1f") + rd(6) + wr(0, b"\x55") + rd(5) + rd(0) +
          wr(4, b"\x0b") + wr(7, b"\xa5") + rd(7))
    write(f"{d}/wide_access", wr(0, b"abcdefgh") + rd(0, 9) + u8(0x10) + u64(0xFFFFFFFFFFFFFFFE) + u8(4))


def port_bus():
    d = os.path.join(CORPUS, "port_bus")
    reg = lambda base, length: u8(0) + u8(2) + u16(base) + u8(2) + u16(length) + u8(1)
    find = lambda addr, size: u8(1) + u8(2) + u16(addr) + u8(size)
    write(f"{d}/vm_ports", reg(0xEC, 4) + reg(0x3F8, 8) + reg(0xF4, 1) + find(0xEC, 4) +
          find(0x3FF, 1) + find(0x3FF, 2) + find(0xF4, 1))
    write(f"{d}/overlap", reg(0x100, 16) + reg(0x108, 16) + reg(0x110, 1) + find(0x110, 1))
    # A range ending exactly at 2^64 (tag 3: max - u8; tag 7: 1 << 4).
    write(f"{d}/top_of_space", u8(0) + u8(3) + u8(15) + u8(7) + u8(4) + u8(1) +
          u8(1) + u8(9) + u8(1) + u8(0) + u8(1) + u8(3) + u8(0) + u8(2))
    write(f"{d}/many", b"".join(reg(i * 4, 4) for i in range(34)) + find(0, 4) + find(33 * 4, 4))


def q35_devices():
    d = os.path.join(CORPUS, "q35_devices")
    ram = lambda off, data: u8(0) + u32(off) + u8(len(data)) + data
    cfg_addr = lambda devfn, reg: u8(1) + u8(1) + u8(4) + u32(0x80000000 | devfn << 8 | reg)
    cfg_wr = lambda data, port=4: u8(1) + u8(1 | port << 1) + u8(len(data)) + data
    cfg_rd = lambda n, port=4: u8(1) + u8(port << 1) + u8(n)
    edu_wr = lambda off, v, n=4: u8(2 | 8) + u32(off) + u8(n) + (u32(v) if n == 4 else u64(v))
    edu_rd = lambda off, n=4: u8(2) + u32(off) + u8(n)
    vtd_wr = lambda off, v, n=4: u8(4 | 8) + u16(off) + u8(n) + (u32(v) if n == 4 else u64(v))
    vtd_rd = lambda off, n=4: u8(4) + u16(off) + u8(n)
    apic_wr = lambda off, v: u8(3 | 8) + u16(off) + u8(4) + u32(v)
    # PCI enumeration of edu, bus mastering on, liveness and factorial.
    write(f"{d}/pci_edu", cfg_addr(0x08, 0) + cfg_rd(4) + cfg_addr(0x08, 0x10) +
          cfg_wr(u32(0xFFFFFFFF)) + cfg_rd(4) + cfg_wr(u32(0xFEA00000)) + cfg_addr(0x08, 4) +
          cfg_wr(u16(6)) + edu_wr(4, 0x12345678) + edu_rd(4) + edu_wr(8, 10) + edu_rd(8))
    # The IOMMU's tables: root (bus 0) at 0x1000 -> context at 0x2000, edu's
    # entry -> level 3 at 0x3000 -> 2 at 0x4000 -> 1 at 0x5000, IOVA 0 -> page
    # 0x8000 read-write; IRT at 0x6000 entry 1 vector 0x41; QI at 0x7000.
    tables = (ram(0x1000, u64(0x2001)) + ram(0x2000 + 0x08 * 16, u64(0x3001) + u64(1 | 1 << 8)) +
              ram(0x3000, u64(0x4003)) + ram(0x4000, u64(0x5003)) + ram(0x5000, u64(0x8003)) +
              ram(0x6000 + 16, u64(1 | 0x41 << 16) + u64(0x0008 | 1 << 18)))
    enable = (vtd_wr(0x90, 0x7000, 8) + vtd_wr(0x18, 1 << 26) + vtd_wr(0x20, 0x1000, 8) +
              vtd_wr(0x18, 1 << 30 | 1 << 26) + vtd_wr(0xB8, 0x6000 | 7, 8) +
              vtd_wr(0x18, 1 << 24 | 1 << 30 | 1 << 26) + vtd_wr(0x18, 0xC7000000 & ~(1 << 25)) +
              vtd_wr(0x18, 0xC7000000) + vtd_rd(0x1C))
    pci_on = cfg_addr(0x08, 4) + cfg_wr(u16(6))
    dma = (edu_wr(0x80, 0, 8) + edu_wr(0x88, 0x40000, 8) + edu_wr(0x90, 64, 8) + edu_wr(0x98, 1, 8) +
           edu_wr(0x80, 0x40000, 8) + edu_wr(0x88, 0x2000, 8) + edu_wr(0x98, 3, 8) +
           vtd_rd(0x34) + vtd_rd(0x220, 8) + vtd_rd(0x228, 8))
    write(f"{d}/iommu_dma", tables + enable + pci_on + dma)
    # Interrupt remapping: edu's MSI to IRTE 1, the IOAPIC's pin 17 likewise,
    # a queued wait descriptor with a status write.
    msi = (cfg_addr(0x08, 0x44) + cfg_wr(u32(0xFEE00000 | 1 << 5 | 1 << 4)) + cfg_addr(0x08, 0x4C) +
           cfg_wr(u16(0)) + cfg_addr(0x08, 0x42) + cfg_wr(u16(0x81)) + edu_wr(0x60, 1) +
           edu_wr(0x64, 1))
    ioapic = (apic_wr(0, 0x10 + 2 * 17 + 1) + apic_wr(0x10, 1 << 17 | 1 << 16) + apic_wr(0, 0x10 + 2 * 17) +
              apic_wr(0x10, 0x8041) + u8(5 | 8) + u8(17) + u8(6) + u8(0x41) + u8(5) + u8(17))
    qi = ram(0x7000, u64(5 | 1 << 5 | 0xABCD << 32) + u64(0x9000)) + vtd_wr(0x88, 0x10, 8) + vtd_rd(0x80, 8)
    write(f"{d}/interrupt_remapping", tables + enable + pci_on + msi + ioapic + qi +
          u8(7) + u64(0xFEE00000 | 1 << 5 | 1 << 4) + u32(0) + u16(0x0008) +
          u8(7 | 8) + u64(0xFEE00000 | 1 << 12) + u32(0x30) + u16(0))


if __name__ == "__main__":
    dispatcher()
    multicall()
    descriptor()
    elf_loader()
    uart()
    port_bus()
    q35_devices()
