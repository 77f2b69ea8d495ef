"""Tests of scripts/minivmm-qemu (docs/machines.md "Running kvm-unit-tests").

A fake minivmm ($MINIVMM, a script in the test's tmp dir) prints its argv
as JSON and exits with $FAKE_STATUS (but for `info --cpu-features` and
`info --limits`, which the real minivmm, $MINIVMM_REAL, answers: they need
no KVM), so the exact minivmm command line for
kvm-unit-tests' own argv is checked without /dev/kvm. The missing-kernel
message is compared with the real qemu-system-x86_64's (the project's
package list has qemu-system-x86); without it that test fails.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "minivmm-qemu")

# What kvm-unit-tests' x86/run passes before the test's own options (with a
# QEMU that lists pc-testdev but not pci-testdev, as minivmm-qemu does).
X86_RUN = ["--no-reboot", "-nodefaults", "-global", "kvm-pit.lost_tick_policy=discard",
           "-device", "pc-testdev", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x4",
           "-display", "none", "-serial", "stdio", "-machine", "accel=kvm", "-kernel"]

FAKE = """#!{python}
import json, os, sys
if sys.argv[1:2] == ["info"]:
    os.execv(os.environ["MINIVMM_REAL"], [os.environ["MINIVMM_REAL"]] + sys.argv[1:])
print(json.dumps({{"argv": sys.argv[1:], "pid": os.getpid()}}))
sys.exit(int(os.environ.get("FAKE_STATUS", "0")))
"""


@pytest.fixture
def env(tmp_path):
    fake = tmp_path / "minivmm"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    (tmp_path / "x86").mkdir()
    for name in ("smptest.flat", "vmexit.flat", "eventinj.flat"):
        (tmp_path / "x86" / name).write_bytes(b"\0")
    (tmp_path / "envfile").write_text("TARGET=qemu\n")
    e = dict(os.environ, MINIVMM=str(fake))
    e.pop("FAKE_STATUS", None)
    return tmp_path, e


def run(env, args, status=0, script=SCRIPT):
    tmp, e = env
    if status:
        e = dict(e, FAKE_STATUS=str(status))
    return subprocess.run([script] + args, cwd=tmp, env=e, capture_output=True, text=True,
                          check=False)


def minivmm_argv(env, args):
    p = run(env, args)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    return json.loads(p.stdout)["argv"]


def pc(*rest, cpus="1", memory="128M"):
    return ["run", "--machine", "pc", "-q", "--kernel", rest[0], "--cpus", cpus, "--memory",
            memory] + list(rest[1:])


def test_smptest_argv(env):
    got = minivmm_argv(env, X86_RUN + ["x86/smptest.flat", "-smp", "2", "-initrd", "envfile"])
    assert got == pc("x86/smptest.flat", "--initrd", "envfile", "--pit", "--pc-testdev",
                     cpus="2")


def test_vmexit_cpuid_argv(env):
    got = minivmm_argv(env, X86_RUN + ["x86/vmexit.flat", "-smp", "1", "-append", "cpuid",
                                       "-initrd", "envfile"])
    assert got == pc("x86/vmexit.flat", "--cmdline", "cpuid", "--initrd", "envfile", "--pit",
                     "--pc-testdev")


def test_eventinj_gets_pc_testdev(env):
    got = minivmm_argv(env, X86_RUN + ["x86/eventinj.flat", "-smp", "1", "-initrd", "envfile"])
    assert got == pc("x86/eventinj.flat", "--initrd", "envfile", "--pit", "--pc-testdev")


def test_pit_off_drops_the_pit(env):
    # vmexit_ipi: smp = 2, test_args = 'ipi', qemu_params = -machine pit=off.
    got = minivmm_argv(env, X86_RUN + ["x86/vmexit.flat", "-smp", "2", "-append", "ipi",
                                       "-machine", "pit=off", "-initrd", "envfile"])
    assert got == pc("x86/vmexit.flat", "--cmdline", "ipi", "--initrd", "envfile",
                     "--pc-testdev", cpus="2")


def test_accel_props_in_machine_option(env):
    got = minivmm_argv(env, ["-machine", "accel=kvm,pit=off", "-kernel", "x86/vmexit.flat"])
    assert got == pc("x86/vmexit.flat")


@pytest.mark.parametrize("accel", [["-enable-kvm"], ["-accel", "kvm"], ["--enable-kvm"],
                                   ["-machine", "pc,accel=kvm"], ["-M", "pc-i440fx-7.2"]])
def test_accel_and_machine_forms(env, accel):
    assert minivmm_argv(env, accel + ["-kernel", "x86/smptest.flat"]) == pc(
        "x86/smptest.flat", "--pit")


def test_default_memory_is_qemus_128m(env):
    assert minivmm_argv(env, ["-enable-kvm", "-kernel", "x86/smptest.flat"])[9] == "128M"


@pytest.mark.parametrize("value,memory", [("2048", "2048M"), ("2560", "2560M"), ("3g", "3072M"),
                                          ("1G", "1024M"), ("512M", "512M"), ("64m", "64M"),
                                          ("size=256", "256M"), ("1.5G", "1536M")])
def test_memory_forms(env, value, memory):
    got = minivmm_argv(env, ["-enable-kvm", "-m", value, "-kernel", "x86/smptest.flat"])
    assert got[8:10] == ["--memory", memory]


@pytest.mark.parametrize("value,cpus", [("3", "3"), ("cpus=4", "4"), ("2,maxcpus=2", "2")])
def test_smp_forms(env, value, cpus):
    got = minivmm_argv(env, ["-enable-kvm", "-smp", value, "-kernel", "x86/smptest.flat"])
    assert got[6:8] == ["--cpus", cpus]


def max_cpus():
    with open(os.path.join(ROOT, "hypercalls/abi/minivmm_abi/boot.h"), encoding="utf-8") as f:
        return int(re.search(r"#define MVMM_MAX_CPUS (\d+)u", f.read()).group(1))


def test_smp_up_to_the_abi_maximum(env):
    n = str(max_cpus())
    got = minivmm_argv(env, ["-enable-kvm", "-smp", n, "-kernel", "x86/smptest.flat"])
    assert got[6:8] == ["--cpus", n]


def test_smp_past_the_maximum_in_qemus_words(env):
    # kvm-unit-tests' --probe-maxsmp greps 'SMP CPUs' and takes the last word.
    n = max_cpus()
    p = run(env, ["-enable-kvm", "-smp", str(n + 1), "-kernel", "_NO_FILE_4Uhere_"])
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [
        f"minivmm-qemu: Invalid SMP CPUs {n + 1}. The max CPUs supported by machine "
        f"'minivmm-pc' is {n}"]


def test_memory_above_minivmms_ram_is_refused_before_the_kernel(env):
    # x86/unittests.cfg's svm tests ask for -m 4g: refused before the kernel
    # check, so kvm-unit-tests' premature-failure probe makes it a SKIP.
    p = run(env, ["-enable-kvm", "-m", "4g", "-kernel", "_NO_FILE_4Uhere_"])
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [
        "minivmm-qemu: -m 4096M: minivmm's RAM is 8 to 3072 MiB"]
    got = minivmm_argv(env, ["-enable-kvm", "-m", "3g", "-kernel", "x86/smptest.flat"])
    assert got[got.index("--memory") + 1] == "3072M"


@pytest.mark.parametrize("args,named", [
    (["-machine", "accel=tcg"], "tcg"),
    (["-accel", "tcg"], "tcg"),
    (["-machine", "accel=hvf"], "hvf"),
    (["-M", "q35,kernel-irqchip=off"], "kernel-irqchip=off"),
    (["-M", "q35", "-device", "intel-iommu"], "kernel-irqchip=split"),
    (["-M", "microvm"], "microvm"),
    (["-machine", "accel=kvm,kernel-irqchip=split"], "kernel-irqchip=split"),
    (["-device", "edu"], "edu"),
    (["-M", "q35,kernel-irqchip=split", "-device", "intel-iommu,intremap=off"], "intremap=on"),
    (["-M", "q35,kernel-irqchip=split", "-device", "intel-iommu,eim=on"], "eim=off"),
    (["-M", "q35,kernel-irqchip=split", "-device", "intel-iommu,caching-mode=on"],
     "intel-iommu"),
    (["-machine", "vmport=on"], "vmport=on"),
    (["-device", "hyperv-testdev,foo=1"], "hyperv-testdev,foo=1"),
    (["-device", "intel-iommu,intremap=on,eim=off"], "intel-iommu"),
    (["-device", "isa-debug-exit"], "isa-debug-exit"),
    (["-device", "isa-debug-exit,iobase=0x501,iosize=0x2"], "iobase=0x501"),
    (["-device", "testdev,chardev=testlog"], "testdev"),
    (["-chardev", "file,id=testlog,path=msr.out"], "-chardev"),
    (["-overcommit", "cpu-pm=on"], "-overcommit"),
    (["-mon", "chardev=mon,mode=control"], "-mon"),
    (["-serial", "file:out"], "-serial"),
    (["-global", "kvm-pit.lost_tick_policy=delay"], "lost_tick_policy=delay"),
    (["-smp", "2,sockets=2"], "sockets"),
    (["-smp", "1,maxcpus=4"], "maxcpus"),
    (["-m", "512,maxmem=1G"], "maxmem"),
    (["-m", "1.3M"], "-m 1.3M"),
    (["-bogus"], "-bogus"),
    (["disk.img"], "disk.img"),
])
def test_refusals_are_one_line_naming_the_option(env, args, named):
    # Checked before the kernel, as QEMU does: kvm-unit-tests' probe with a
    # missing kernel then SKIPs the test with this line as the reason.
    p = run(env, ["-enable-kvm"] + args + ["-kernel", "_NO_FILE_4Uhere_"])
    assert p.returncode == 1
    assert p.stdout == ""  # minivmm never ran
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("minivmm-qemu: ") and named in lines[0]


def test_no_kernel_is_refused(env):
    p = run(env, ["-enable-kvm"])
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [
        "minivmm-qemu: -kernel is required (minivmm's PC machine boots a Multiboot image; "
        "it has no firmware)"]


@pytest.mark.parametrize("probe", [["-device", "?"], ["-device", "help"]])
def test_device_list_has_what_x86_run_greps(env, probe):
    p = run(env, probe)
    assert p.returncode == 0
    assert '"pc-testdev"' in p.stdout and '"isa-debug-exit"' in p.stdout
    # No PCI bus: x86/run then passes no -device pci-testdev.
    assert "pci-testdev" not in p.stdout


def test_help_and_version_read_as_qemus(env):
    assert "QEMU" in run(env, ["--help"]).stdout  # arch-run.bash's search_qemu_binary
    first = run(env, ["-h"]).stdout.splitlines()[0]
    # env_params: IFS='[ .]' read -r _ _ _ QEMU_MAJOR QEMU_MINOR QEMU_MICRO rest
    words = re.split(r"[ .]", first)
    assert words[:3] == ["QEMU", "emulator", "version"] and words[3:6] == ["0", "0", "0"]
    assert run(env, ["--version"]).stdout.splitlines() == [first]
    assert run(env, ["-version"]).stdout.splitlines() == [first]


@pytest.mark.parametrize("kernel", ["_NO_FILE_4Uhere_", "/nonexistent/x86/smptest.flat"])
def test_missing_kernel_as_qemu_reports_it(env, kernel):
    qemu = shutil.which("qemu-system-x86_64")
    assert qemu, "qemu-system-x86_64 is not installed (package qemu-system-x86)"
    args = ["-kernel", kernel, "-nodefaults", "-display", "none"]
    want = subprocess.run([qemu] + args, capture_output=True, text=True, check=False)
    got = run(env, args)
    assert (got.returncode, got.stderr, got.stdout) == (want.returncode, want.stderr, "")
    # What kvm-unit-tests' qemu_parse_premature_failure greps.
    assert re.search(r"[Cc]ould not (load|open) kernel", got.stderr)


@pytest.mark.parametrize("status", [1, 3, 123, 124])
def test_guest_status_passes_through(env, status):
    p = run(env, ["-enable-kvm", "-kernel", "x86/smptest.flat"], status=status)
    assert p.returncode == status


def test_minivmm_is_execed(env):
    # The same process: signals from timeout(1) reach minivmm itself.
    tmp, e = env
    p = subprocess.Popen([SCRIPT, "-enable-kvm", "-kernel", "x86/smptest.flat"], cwd=tmp, env=e,
                         stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate()
    assert json.loads(out)["pid"] == p.pid


def test_verbose_notes_and_command_line(env):
    tmp, e = env
    p = run(env, ["-v"] + X86_RUN + ["x86/vmexit.flat", "-append", "cpuid 'a b'",
                                     "-device", "pci-testdev", "-cpu", "max", "-name", "t",
                                     "-vnc", "none", "-nographic"])
    assert p.returncode == 0
    lines = p.stderr.splitlines()
    for option in ["--no-reboot", "-nodefaults", "-global kvm-pit.lost_tick_policy=discard",
                   "-display none", "-device pci-testdev", "-cpu max", "-name t", "-vnc none",
                   "-nographic"]:
        assert any(line.startswith(f"minivmm-qemu: {option}: ignored (") for line in lines), (
            option, lines)
    assert lines[-1] == (f"minivmm-qemu: exec {e['MINIVMM']} run --machine pc -q --kernel "
                         "x86/vmexit.flat --cpus 1 --memory 128M --cmdline 'cpuid '\"'\"'a "
                         "b'\"'\"'' --pit --pc-testdev")
    assert len(lines) == 10


def test_cpu_features_minivmm_knows_are_passed_and_the_model_is_ignored(env):
    p = run(env, ["-v", "-enable-kvm", "-cpu", "qemu64,-x2apic,+tsc-deadline,pcid=off,umip,"
                  "vendor=GenuineIntel,migratable=no,host-phys-bits", "-kernel",
                  "x86/smptest.flat"])
    assert p.returncode == 0, p.stderr
    argv = json.loads(p.stdout)["argv"]
    assert argv[-4:] == ["--cpu-features", "-x2apic,+tsc-deadline,-pcid,+umip", "--cpu-vendor",
                         "GenuineIntel"]
    assert "minivmm-qemu: -cpu qemu64: ignored (minivmm has no CPU models" in p.stderr
    assert "minivmm-qemu: -cpu ...,migratable=no: ignored (" in p.stderr
    assert "minivmm-qemu: -cpu ...,host-phys-bits: ignored (" in p.stderr


def test_enforce_is_passed(env):
    argv = minivmm_argv(env, ["-enable-kvm", "-cpu", "max,+pcid,enforce", "-kernel",
                              "x86/smptest.flat"])
    assert argv[-3:] == ["--cpu-features", "+pcid", "--cpu-enforce"]


def test_intel_iommu_argv_is_the_q35_machine(env):
    # intel_iommu: smp = 4, qemu_params = -M q35,kernel-irqchip=split
    # -device intel-iommu,intremap=on,eim=off -device edu. QEMU's q35 has a
    # PIT; minivmm's q35 has none (KVM's PIT needs KVM's IOAPIC), said with -v.
    args = X86_RUN + ["x86/smptest.flat", "-smp", "4", "-M", "q35,kernel-irqchip=split",
                      "-device", "intel-iommu,intremap=on,eim=off", "-device", "edu"]
    got = minivmm_argv(env, args)
    assert got == ["run", "--machine", "q35", "-q", "--kernel", "x86/smptest.flat", "--cpus",
                   "4", "--memory", "128M", "--pc-testdev", "--split-irqchip", "--intel-iommu",
                   "--edu"]
    p = run(env, ["-v"] + args)
    assert "the PIT QEMU's q35 has: ignored (minivmm's q35 machine has none" in p.stderr


def test_q35_alone_is_kvms_full_irqchip_with_its_pit(env):
    # x86/run x86/smptest.flat -smp 2 -M q35: QEMU's q35 default, kernel-irqchip=on.
    got = minivmm_argv(env, X86_RUN + ["x86/smptest.flat", "-smp", "2", "-M", "q35"])
    assert got == pc("x86/smptest.flat", "--pit", "--pc-testdev", cpus="2")[:2] + ["q35"] + \
        pc("x86/smptest.flat", "--pit", "--pc-testdev", cpus="2")[3:]


def test_device_list_has_the_q35_devices(env):
    p = run(env, ["-device", "help"])
    assert 'name "intel-iommu", bus System' in p.stdout and 'name "edu", bus PCI' in p.stdout


def test_hv_passthrough_is_hyperv(env):
    # hyperv_clock, hyperv_stimer: qemu_params = -cpu host,hv_passthrough.
    argv = minivmm_argv(env, ["-enable-kvm", "-cpu", "host,hv_passthrough", "-kernel",
                              "x86/smptest.flat"])
    assert argv[-1] == "--hyperv" and "--cpu-features" not in argv


def test_hyperv_testdev_is_hyperv_testdev(env):
    # hyperv_synic, hyperv_connections: -cpu host,hv_passthrough -device hyperv-testdev.
    argv = minivmm_argv(env, ["-enable-kvm", "-cpu", "host,hv_passthrough", "-device",
                              "hyperv-testdev", "-kernel", "x86/smptest.flat"])
    assert argv[-2:] == ["--hyperv", "--hyperv-testdev"]


def test_host_and_max_alone_change_nothing(env):
    for model in ("host", "max"):
        argv = minivmm_argv(env, ["-enable-kvm", "-cpu", model, "-kernel", "x86/smptest.flat"])
        assert "--cpu-features" not in argv and "--cpu-vendor" not in argv


@pytest.mark.parametrize("cpu,named", [
    ("max,+vmx-mbec", "'vmx-mbec' is not a CPU feature minivmm can change"),
    ("host,hv_vapic", "'hv_vapic' is not a CPU feature minivmm can change"),
    ("IvyBridge,phys-bits=36", "phys-bits=36 is not a CPU feature minivmm can set"),
])
def test_cpu_features_it_cannot_change_are_refused_before_the_kernel(env, cpu, named):
    # kvm-unit-tests' premature-failure probe: the refusal, not the missing kernel.
    p = run(env, ["-enable-kvm", "-cpu", cpu, "-kernel", "_NO_FILE_4Uhere_"])
    assert p.returncode == 1
    assert p.stderr == f"minivmm-qemu: -cpu {cpu}: {named} (minivmm info --cpu-features lists them)\n"


def test_without_v_nothing_on_stderr(env):
    # kvm-unit-tests reads status 1 with anything but warnings on stderr as a failure.
    p = run(env, X86_RUN + ["x86/smptest.flat", "-cpu", "max", "-device", "pci-testdev"])
    assert p.returncode == 0 and p.stderr == ""


def test_no_minivmm_binary(env, tmp_path):
    # A copy outside any checkout, so no build/release/minivmm is found.
    copy = tmp_path / "co" / "scripts" / "minivmm-qemu"
    copy.parent.mkdir(parents=True)
    shutil.copy(SCRIPT, copy)
    _, e = env
    e.pop("MINIVMM")
    e["PATH"] = str(tmp_path / "empty")
    p = subprocess.run([sys.executable, str(copy), "-enable-kvm", "-kernel", "x86/smptest.flat"],
                       cwd=tmp_path, env=e, capture_output=True, text=True, check=False)
    assert p.returncode == 1
    assert len(p.stderr.splitlines()) == 1
    assert p.stderr.startswith("minivmm-qemu: no minivmm binary: set $MINIVMM")
