#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_host_facts
short_description: Gather NVIDIA GPU, IOMMU, SEV-SNP and driver facts of a GPU host
version_added: 0.1.0
description:
  - Reads sysfs, procfs, the kernel command line, systemd/tmpfiles/udev configuration and the kernel log
    of the current boot, and returns what an inference deployment needs to know about the host as
    C(ansible_facts['gpu_host']).
  - GPUs are found in sysfs (vendor C(0x10de), PCI class C(0x0300xx) or C(0x0302xx)), so a GPU whose
    firmware failed to boot, which C(nvidia-smi) no longer lists, is still reported. The architecture
    comes from a device-ID table built from the NVIDIA driver's name table and pci.ids; unknown IDs
    from C(0x2900) up count as V(blackwell), other unknown IDs as V(unknown).
  - Only physical functions count as GPUs. SR-IOV virtual functions (a function with a C(physfn) link, as a vGPU
    host creates them; they carry the GPU's own IDs and class) are listed apart in
    RV(ansible_facts.gpu_host.gpu_virtual_functions) and by address in each GPU's C(virtual_functions).
  - For each GPU the IOMMU group and the group's default domain type are read from
    C(/sys/kernel/iommu_groups/<N>/type), which is the only per-device truth about passthrough.
  - DMA faults are found in the kernel log (AMD-Vi event log entries such as C(IO_PAGE_FAULT),
    C(ILLEGAL_DEV_TABLE_ENTRY) and C(RMP_*), also when an older kernel split one over two log records, Intel
    C(DMAR) faults, NVRM Xid 143) and attributed to a PCI address and, when it is one, to the GPU.
  - "GPU health comes from the NVIDIA Xid events of the kernel log (C(NVRM: Xid (PCI:dddd:bb:dd): N, ...) in the
    forms of the driver generations, follow-up events C(caused by previous Xid N), and the 'fallen off the bus'
    messages that carry no Xid number), each attributed to its GPU."
  - Virtual machines are recognised by the C(hypervisor) CPU flag; the character device drivers of
    C(/proc/devices) and the NVIDIA device nodes (C(/dev/nvidia*), C(/dev/nvidia-caps/*)) are listed for
    consumers that check a unit's C(DeviceAllow=).
  - Boot-time units and scripts that write C(identity) into an IOMMU group C(type) file are listed in
    RV(ansible_facts.gpu_host.identity_units).
  - Writes nothing, except the support bundle when O(capture) is set. A host without an NVIDIA GPU gives
    RV(ansible_facts.gpu_host.gpus=[]) and RV(ansible_facts.gpu_host.pci_scan), not an error.
author: llmserve developers (@llmserve)
attributes:
  diff_mode:
    details: The module only reads.
  facts:
    support: full
options:
  root:
    description:
      - Directory that stands for C(/) on the host. Every sysfs, procfs, C(/dev) and C(/etc) path is read below
        it, with symbolic links resolved inside it, so a fixture tree or an unpacked O(capture) can stand in for
        a real host.
      - Such a replay tree cannot hold device nodes without privileges, so for any root other than C(/) the
        NVIDIA device nodes are also read from its table C(.gpu_host_facts/device-nodes) (lines
        C(c MAJOR:MINOR PATH)); a real node at the same path wins. On C(/) only real nodes count.
    type: path
    default: /
  kernel_log:
    description:
      - File holding the kernel log of the current boot (for example a saved C(dmesg) output or
        C(/var/log/kern.log)). The path is read as given, not below O(root).
      - When not set and O(root=/), the module runs C(journalctl -k -b -o short-monotonic) and falls back
        to C(dmesg) when the journal gives nothing. When not set and O(root) is another directory, no kernel
        log is read and RV(ansible_facts.gpu_host.kernel_log_source) is V(none).
      - Reading the kernel log of a live host usually needs root (or membership of C(adm)/C(systemd-journal)).
    type: path
  capture:
    description:
      - Also write a support bundle to this path on the host (a gzip tar, mode 0600, replaced atomically; the
        directory must exist). It holds exactly what the facts were read from, so that the host can be replayed
        elsewhere with O(root) (unpack it with C(tar -xzf) and pass O(root) and O(kernel_log)) or turned into a test
        fixture (C(tests/fixtures/hosts/materialize.py --import-capture BUNDLE NAME)).
      - "Contents: every file, link and directory read below C(/sys) and C(/proc); from C(/etc) and C(/usr) only
        the units and scripts reported in RV(ansible_facts.gpu_host.identity_units) (other unit and cron files are
        read by the scan but never copied, they may hold unrelated secrets); the NVIDIA device nodes as the table
        C(.gpu_host_facts/device-nodes); the kernel log lines the parsers use (NVRM, nvidia, AMD-Vi, DMAR, IOMMU,
        SEV, hypervisor and their continuation lines, at most 5000 lines of 2048 characters) as C(var/log/kern.log);
        and C(.gpu_host_facts/capture.json) with the time, the kernel log source and the counts."
      - Kernel log lines can name processes and devices; look at the bundle before you share it.
      - Reports V(changed) (in check mode too, where nothing is written).
    type: path
  next_boot:
    description:
      - Also read the host as it will boot next into RV(ansible_facts.gpu_host.next_boot) - the kernel GRUB boots, the
        command line C(update-grub) writes, the NVIDIA module built for that kernel, the modprobe.d files inside its
        initramfs, the user-space driver and fabric manager versions, the NVIDIA and kernel packages with their holds,
        and whether unattended-upgrades would upgrade them.
      - It reads the NVIDIA module file of the next kernel (tens of MiB, decompressed in memory) and the
        C(modprobe.d) files of its initramfs; V(false) skips all of it.
      - A support bundle (O(capture)) does not hold these files; a replay of a bundle reads its own tree's.
    type: bool
    default: true
    version_added: 0.1.0
notes:
  - C(/sys/module/nvidia/parameters) is not used, the driver creates no files there; driver options are read
    from C(/proc/driver/nvidia/params).
  - Kernel log messages are rate limited, so an empty fault list does not prove that no fault happened.
  - The C(RegistryDwords) string is parsed with the driver's own grammar (C(plugins/module_utils/nvidia_registry.py)).
seealso:
  - name: sysfs-kernel-iommu_groups
    description: Kernel ABI documentation of the IOMMU group C(type) file.
    link: https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-kernel-iommu_groups
extends_documentation_fragment: [ansible.builtin.action_common_attributes, ansible.builtin.action_common_attributes.facts,
                                 llmserve.sglang.attributes]
"""

EXAMPLES = r"""
- name: Gather the GPU host facts
  become: true
  llmserve.sglang.gpu_host_facts:

- name: Show the GPUs and their IOMMU domain types
  ansible.builtin.debug:
    msg: "{{ ansible_facts['gpu_host']['gpus'] | map(attribute='iommu_domain_type') | list }}"

- name: Read a fixture tree instead of the host, with a saved kernel log
  llmserve.sglang.gpu_host_facts:
    root: /srv/fixtures/blackwell4_amd_snp_dmafq
    kernel_log: /srv/fixtures/blackwell4_amd_snp_dmafq/var/log/kern.log

- name: Capture what the facts are read from (support bundle)
  become: true
  llmserve.sglang.gpu_host_facts:
    capture: /root/gpu-host-capture.tar.gz

- name: Bring the bundle to the controller
  become: true
  ansible.builtin.fetch:
    src: /root/gpu-host-capture.tar.gz
    dest: captures/
"""

RETURN = r"""
capture:
  description: What the support bundle holds (only with O(capture)).
  returned: when O(capture) is set
  type: dict
  contains:
    path:
      description: The O(capture) path.
      type: str
    written:
      description: Whether the file was written (false in check mode).
      type: bool
    size:
      description: Size of the written file in bytes, null when not written.
      type: int
    files:
      description: Regular files in the bundle (kernel log, device table and capture.json included).
      type: int
    links:
      description: Symbolic links in the bundle.
      type: int
    dirs:
      description: Directories in the bundle.
      type: int
    bytes:
      description: Bytes of file content before compression.
      type: int
    device_nodes:
      description: NVIDIA device nodes in the device table.
      type: int
    kernel_log_lines:
      description: Kernel log lines kept.
      type: int
    kernel_log_lines_omitted:
      description: Relevant kernel log lines left out beyond the limit.
      type: int
    truncated:
      description: Files cut to the 4 MiB limit.
      type: list
      elements: str
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    gpu_host:
      description: Everything the module found.
      returned: always
      type: dict
      contains:
        root:
          description: The O(root) that was read.
          type: str
          sample: /
        kernel_release:
          description: Content of C(/proc/sys/kernel/osrelease), null when missing.
          type: str
          sample: 6.12.30-amd64
        gpus:
          description: >-
            One entry per NVIDIA display-class PCI physical function, in PCI address order. SR-IOV virtual functions
            are not GPUs here (see RV(ansible_facts.gpu_host.gpu_virtual_functions)).
          type: list
          elements: dict
          contains:
            index:
              description: Position in PCI address order (what nvidia-smi shows when every GPU is healthy).
              type: int
              sample: 0
            pci_address:
              description: PCI address C(dddd:bb:dd.f).
              type: str
              sample: "0000:01:00.0"
            vendor_id:
              description: PCI vendor ID.
              type: str
              sample: "0x10de"
            device_id:
              description: PCI device ID.
              type: str
              sample: "0x2bb5"
            subsystem_vendor_id:
              description: PCI subsystem vendor ID.
              type: str
              sample: "0x10de"
            subsystem_device_id:
              description: PCI subsystem device ID.
              type: str
              sample: "0x204e"
            pci_class:
              description: PCI class code.
              type: str
              sample: "0x030200"
            name:
              description: Product name from the device-ID table, C(NVIDIA device 0xXXXX) when unknown.
              type: str
              sample: NVIDIA RTX PRO 6000 Blackwell Server Edition
            chip:
              description: Chip code name, null when unknown.
              type: str
              sample: GB202
            architecture:
              description: >-
                V(maxwell), V(pascal), V(volta), V(turing), V(ampere), V(ada), V(hopper), V(blackwell),
                V(rubin) or V(unknown).
              type: str
              sample: blackwell
            architecture_known:
              description: False when the architecture was inferred from the device ID range.
              type: bool
            numa_node:
              description: NUMA node of the device, null when the platform gives none (C(-1)).
              type: int
              sample: 0
            local_cpulist:
              description: CPUs local to the device.
              type: str
              sample: 0-63,128-191
            iommu_group:
              description: IOMMU group number, null without an IOMMU.
              type: int
              sample: 14
            iommu_group_devices:
              description: PCI addresses of every device in the same group.
              type: list
              elements: str
            iommu_domain_type:
              description: >-
                Default domain type of the group: V(DMA), V(DMA-FQ), V(identity), V(blocked), V(unmanaged)
                (V(unknown) if the kernel says so), null without an IOMMU group.
              type: str
              sample: DMA-FQ
            iommu_instance:
              description: IOMMU unit serving the device (C(ivhdN) on AMD, C(dmarN) on Intel), null if none.
              type: str
              sample: ivhd0
            driver:
              description: Bound kernel driver, null when none is bound.
              type: str
              sample: nvidia
            model:
              description: Model name the loaded NVIDIA driver reports, null without the driver.
              type: str
            uuid:
              description: GPU UUID from the driver, null when the driver does not report it.
              type: str
            vbios:
              description: Video BIOS version from the driver.
              type: str
            device_minor:
              description: C(/dev/nvidiaN) minor number.
              type: int
            dma_faults:
              description: Number of RV(ansible_facts.gpu_host.dma_faults) events attributed to this GPU.
              type: int
            xid_events:
              description: Number of RV(ansible_facts.gpu_host.xid_events) attributed to this GPU.
              type: int
            virtual_functions:
              description: PCI addresses of this GPU's SR-IOV virtual functions, empty when SR-IOV is off.
              type: list
              elements: str
              sample: ["0000:01:00.4", "0000:01:00.5"]
        gpu_virtual_functions:
          description: >-
            The SR-IOV virtual functions of NVIDIA GPUs (display-class functions with a C(physfn) link), in PCI address
            order. They are slices of a GPU for virtual machines, not GPUs of this host, and are never counted, selected
            or paired as GPUs. Their DMA faults are not counted in the GPU's C(dma_faults).
          type: list
          elements: dict
          contains:
            pci_address:
              description: PCI address of the virtual function.
              type: str
              sample: "0000:01:00.4"
            physical_function:
              description: PCI address of its physical function (the C(physfn) link).
              type: str
              sample: "0000:01:00.0"
            gpu_index:
              description: >-
                RV(ansible_facts.gpu_host.gpus) index of the physical function, null if that is no listed GPU.
              type: int
              sample: 0
            device_id:
              description: PCI device ID (the GPU's own).
              type: str
              sample: "0x2bb5"
            pci_class:
              description: PCI class code.
              type: str
              sample: "0x030200"
            name:
              description: Product name from the device-ID table.
              type: str
            iommu_group:
              description: IOMMU group number, null without an IOMMU.
              type: int
            iommu_domain_type:
              description: Default domain type of that group, null without an IOMMU group.
              type: str
            driver:
              description: Bound kernel driver (for example C(vfio-pci)), null when none is bound.
              type: str
        pci_scan:
          description: What the PCI scan saw, to explain a host without GPU.
          type: dict
          contains:
            sysfs:
              description: Whether C(/sys/bus/pci/devices) exists.
              type: bool
            devices:
              description: Number of PCI functions.
              type: int
            vendors:
              description: Number of PCI functions per vendor ID.
              type: dict
              sample: {"0x1af4": 5, "0x8086": 1, "0x10de": 1}
            nvidia_functions:
              description: >-
                NVIDIA functions that are not GPUs (HDMI audio, NVSwitch, ...), each with C(pci_address),
                C(device_id), C(pci_class) and C(driver). SR-IOV virtual functions of GPUs are in
                RV(ansible_facts.gpu_host.gpu_virtual_functions) instead.
              type: list
              elements: dict
        virtualization:
          description: Whether the host is a virtual machine.
          type: dict
          contains:
            hypervisor:
              description: The CPU reports the C(hypervisor) flag in C(/proc/cpuinfo) (x86 guests).
              type: bool
            hypervisor_vendor:
              description: From the boot message C(Hypervisor detected) or C(/sys/hypervisor/type), null if unknown.
              type: str
              sample: KVM
            evidence:
              description: What showed it.
              type: list
              elements: str
        char_devices:
          description: The C(Character devices) section of C(/proc/devices), in file order.
          type: list
          elements: dict
          contains:
            major:
              description: Major number.
              type: int
              sample: 238
            name:
              description: Driver name (what systemd's C(DeviceAllow=char-NAME) matches).
              type: str
              sample: nvidia-uvm
        device_nodes:
          description: >-
            The character device nodes C(/dev/nvidia*) and C(/dev/nvidia-caps/*), by path (numbers from C(st_rdev);
            below a root other than C(/) also from the tree's device table).
          type: list
          elements: dict
          contains:
            path:
              description: Host path of the node.
              type: str
              sample: /dev/nvidia-uvm
            major:
              description: Major number.
              type: int
              sample: 238
            minor:
              description: Minor number.
              type: int
              sample: 0
        iommu:
          description: IOMMU state of the host.
          type: dict
          contains:
            enabled:
              description: >-
                True when the kernel has IOMMU groups or IOMMU units (the boot line
                C(iommu: Default domain type) is ignored, it is printed even without an IOMMU).
              type: bool
            vendor:
              description: V(amd), V(intel) or null.
              type: str
            instances:
              description: Entries of C(/sys/class/iommu).
              type: list
              elements: str
            group_count:
              description: Number of IOMMU groups.
              type: int
            group_types:
              description: Number of groups per default domain type.
              type: dict
            identity_groups:
              description: Groups whose default domain is V(identity), each with C(group) and C(devices).
              type: list
              elements: dict
            cmdline:
              description: >-
                Kernel command line values of C(iommu), C(amd_iommu), C(intel_iommu), C(iommu.passthrough)
                and C(iommu.strict) (null when absent).
              type: dict
            cmdline_nvidia:
              description: Every C(nvidia.NVreg_*) option on the kernel command line, without the C(nvidia.) prefix.
              type: dict
            passthrough_requested:
              description: True for C(iommu=pt)/C(iommu.passthrough=1), false for C(iommu=nopt)/C(iommu.passthrough=0), else null.
              type: bool
            iommu_off:
              description: C(iommu=off) is on the command line.
              type: bool
            amd_iommu_off:
              description: C(amd_iommu=off) is on the command line.
              type: bool
            amd_iommu_pgtbl_v2:
              description: C(amd_iommu=pgtbl_v2) is on the command line (SEV-SNP refuses v2 page tables).
              type: bool
            intel_iommu_off:
              description: C(intel_iommu=off) is on the command line.
              type: bool
            strict:
              description: C(iommu.strict) as a boolean, null when absent.
              type: bool
        sev_snp:
          description: Whether the host runs with AMD SEV-SNP enabled.
          type: bool
        sev_snp_evidence:
          description: What showed SEV-SNP (the C(kvm_amd) parameter, boot messages).
          type: list
          elements: str
        nvidia_driver:
          description: The loaded NVIDIA kernel driver.
          type: dict
          contains:
            loaded:
              description: Whether nvidia.ko is loaded.
              type: bool
            version:
              description: Driver version, null when not loaded.
              type: str
              sample: 595.45.04
            flavor:
              description: V(open) or V(proprietary) kernel module, null when unknown.
              type: str
            modules:
              description: >-
                Loaded NVIDIA kernel modules and their reference counts, from C(/sys/module) or else
                C(/proc/modules).
              type: dict
              sample: {nvidia: 12, nvidia_uvm: 0}
            params:
              description: C(/proc/driver/nvidia/params) by key; numbers as integers, strings unquoted.
              type: dict
              sample: {DmaRemapPeerMmio: 1, RegistryDwords: DmaRemapPeerMmio=1}
            registry_dwords:
              description: The C(RegistryDwords) string parsed with the driver's grammar.
              type: dict
              sample: {DmaRemapPeerMmio: 1}
            registry_dwords_notes:
              description: Parts of C(RegistryDwords) the driver ignores or reads differently than they look.
              type: list
              elements: str
            nvidia_smi:
              description: >-
                Path of C(nvidia-smi), null when not installed. With another O(root) it is the file's real path below
                that root.
              type: str
        dma_faults:
          description: IOMMU/DMA fault events of this boot's kernel log.
          type: list
          elements: dict
          contains:
            source:
              description: V(amd-vi), V(intel-dmar) or V(nvrm).
              type: str
            kind:
              description: >-
                Event type, for example V(IO_PAGE_FAULT), V(ILLEGAL_DEV_TABLE_ENTRY), V(RMP_PAGE_FAULT),
                V(DMAR_WRITE_FAULT) or V(XID_143).
              type: str
            pci_address:
              description: Device the event names, null when it names none.
              type: str
            gpu:
              description: Whether that device is one of RV(ansible_facts.gpu_host.gpus).
              type: bool
            gpu_index:
              description: Index of that GPU, null otherwise.
              type: int
            gpu_name:
              description: Name of that GPU, null otherwise.
              type: str
            address:
              description: Faulting address, when logged.
              type: str
            domain:
              description: AMD-Vi protection domain, when logged.
              type: str
            timestamp:
              description: Seconds since boot, when the log line carries them.
              type: float
            detail:
              description: Rest of the message.
              type: str
            line:
              description: The log line (shortened to 300 characters).
              type: str
        dma_faults_dropped:
          description: Fault events beyond the first 500 that were counted but not listed.
          type: int
        xid_events:
          description: NVIDIA GPU error events (Xid) of this boot's kernel log, in log order.
          type: list
          elements: dict
          contains:
            source:
              description: Always V(nvrm).
              type: str
            kind:
              description: V(xid), or V(fallen-off-bus) for the "fallen off the bus" messages without a number.
              type: str
            code:
              description: The Xid code, null for V(fallen-off-bus).
              type: int
              sample: 79
            pci_address:
              description: The GPU's PCI address (function 0; the driver logs domain, bus and device).
              type: str
            gpu:
              description: Whether that address is one of RV(ansible_facts.gpu_host.gpus).
              type: bool
            gpu_index:
              description: Index of that GPU, null otherwise.
              type: int
            gpu_name:
              description: Name of that GPU, null otherwise.
              type: str
            gpu_instance:
              description: MIG GPU instance the driver attributed the event to, null without MIG.
              type: int
            compute_instance:
              description: MIG compute instance, null without MIG.
              type: int
            pid:
              description: Process ID the driver logged, null when unknown.
              type: int
            process:
              description: Process name the driver logged, null when unknown.
              type: str
            text:
              description: The message after the code (without pid, name and the cause).
              type: str
              sample: GPU has fallen off the bus.
            caused_by:
              description: The Xid named by C(caused by previous Xid N), null otherwise.
              type: int
            timestamp:
              description: Seconds since boot, when the line carries them.
              type: float
            time:
              description: The date and time the line carries (syslog, journal or C(dmesg -T) form), null otherwise.
              type: str
            line:
              description: The log line (shortened to 300 characters).
              type: str
        xid_events_dropped:
          description: Xid events beyond the first 500 that were counted but not listed.
          type: int
        kernel_log_source:
          description: V(file), V(journalctl), V(dmesg) or V(none).
          type: str
        kernel_log_path:
          description: The O(kernel_log) file, null otherwise.
          type: str
        kernel_log_lines:
          description: Number of kernel log lines read.
          type: int
        kernel_log_error:
          description: Why no kernel log could be read, null when one was read or none was wanted.
          type: str
        identity_units:
          description: Boot-time units, rules and scripts that write V(identity) into IOMMU group C(type) files.
          type: list
          elements: dict
          contains:
            kind:
              description: V(systemd), V(tmpfiles), V(udev), V(rc-local), V(sysv) or V(cron).
              type: str
            name:
              description: Unit or file name.
              type: str
              sample: gpu-iommu-identity.service
            path:
              description: Host path of the unit or file.
              type: str
            enabled:
              description: Whether it runs at the next boot.
              type: bool
            masked:
              description: Whether a systemd unit is masked.
              type: bool
            scripts:
              description: Scripts run by the unit that write V(identity).
              type: list
              elements: str
            evidence:
              description: "C(path:line: text) of the lines that mention V(identity)."

              type: list
              elements: str
        next_boot:
          description:
            - The host as it will boot next (only with O(next_boot)). Read, never changed; a host whose boot files
              cannot be read has only C(error).
          returned: when O(next_boot) is true
          type: dict
          contains:
            kernel:
              description: Kernel release the host boots next, null when none can be told.
              type: str
              sample: 6.8.0-62-generic
            kernel_source:
              description: >-
                How the kernel was chosen: V(grub_default) (C(GRUB_DEFAULT) resolved in C(/boot/grub/grub.cfg)),
                V(grub_saved) (C(GRUB_DEFAULT=saved) and C(/boot/grub/grubenv)), V(newest_installed) (no usable
                grub.cfg: the newest C(/boot/vmlinuz-*) is assumed), V(running) or V(unknown).
              type: str
            kernel_detail:
              description: The same in words, with the menu entry.
              type: str
            kernel_is_running:
              description: Whether the next kernel is the running one.
              type: bool
            installed_kernels:
              description: Kernel releases with an image in C(/boot), oldest first.
              type: list
              elements: str
            grub:
              description: >-
                GRUB's files: C(files) (C(/etc/default/grub) then C(/etc/default/grub.d/*.cfg), as grub-mkconfig
                sources them), C(default), C(cmdline_linux), C(cmdline_linux_default), C(unevaluated) (lines that are
                not plain assignments, each C(file), C(line), C(text), C(why), C(cmdline)), C(grub_cfg) (whether
                grub.cfg exists), C(grub_cfg_args) (the chosen entry's C(linux) line after the image) and
                C(update_pending) (the evaluated command line differs from the one grub.cfg holds: C(update-grub) has
                not run since the change; null when unknown).
              type: dict
            cmdline:
              description: >-
                The command line C(update-grub) writes for the next kernel (C(GRUB_CMDLINE_LINUX) and
                C(GRUB_CMDLINE_LINUX_DEFAULT)), null without GRUB's files.
              type: str
            cmdline_origins:
              description: For each word of RV(ansible_facts.gpu_host.next_boot.cmdline), the file that added it.
              type: dict
              sample: {"iommu=pt": /etc/default/grub.d/50-gpu.cfg}
            iommu:
              description: The IOMMU words of that command line, in the form of RV(ansible_facts.gpu_host.iommu).
              type: dict
            iommu_grub_cfg:
              description: The same for the command line grub.cfg holds now, when an C(update-grub) is pending.
              type: dict
            nvidia_module:
              description: >-
                The NVIDIA module the next kernel loads (the first readable one of C(nvidia_modules), DKMS first),
                null when there is none.
              type: dict
            nvidia_modules:
              description: >-
                Every NVIDIA module file below C(/lib/modules/<kernel>): C(path), C(name), C(source) (V(dkms),
                V(packaged) or V(other)), C(version) and C(vermagic) (from the ELF C(.modinfo) section, plain or
                xz, gzip, zstd compressed), C(flavor) (V(open) or V(proprietary)), C(in_modules_dep) (C(depmod) knows
                it) and C(error).
              type: list
              elements: dict
            modules_dir:
              description: C(/lib/modules/<kernel>), null when the kernel has no modules directory.
              type: str
            modules_dep:
              description: Whether C(modules.dep) exists for the next kernel.
              type: bool
            loaded_module_version:
              description: Version of the loaded nvidia.ko (as in RV(ansible_facts.gpu_host.nvidia_driver.version)).
              type: str
            userspace_version:
              description: Version of the NVML library the loader finds (the target of C(libnvidia-ml.so.1)).
              type: str
            userspace_path:
              description: The C(libnvidia-ml.so.1) link it was read from.
              type: str
            userspace_versions:
              description: Every C(libnvidia-ml.so.<version>) found in the library directories.
              type: list
              elements: str
            fabric_manager_version:
              description: Upstream version of the installed fabric manager package, null when not installed.
              type: str
            fabric_manager_package:
              description: Its package name.
              type: str
            initramfs:
              description: >-
                The next kernel's initramfs: C(path), C(exists), C(compression), C(error) and C(nvidia_options)
                (C({file: ["nvidia NVreg_X=1", ...]}) for each modprobe.d file inside it that sets NVIDIA options).
              type: dict
            modprobe_nvidia_options:
              description: The same for the modprobe.d files on the root file system.
              type: dict
            packages:
              description: >-
                The NVIDIA and kernel packages (dpkg): C(name), C(version), C(upstream_version), C(role) (V(driver),
                V(userspace), V(fabric_manager) or V(kernel)), C(held), C(state), C(blacklisted_by) (the
                unattended-upgrades blacklist entry that covers it) and C(upgraded_unattended) (unattended-upgrades
                is on, and the package is neither held nor blacklisted; origins are not evaluated).
              type: list
              elements: dict
            dpkg:
              description: Whether a dpkg status file was found.
              type: bool
            unattended_upgrades:
              description: >-
                C(installed), C(enabled) (C(APT::Periodic::Unattended-Upgrade) is set and not 0), C(interval) and
                C(blacklist) (C(Unattended-Upgrade::Package-Blacklist)), from C(apt-config dump) on the live host,
                from the files of C(/etc/apt/apt.conf.d) in a tree.
              type: dict
            error:
              description: Why the next boot could not be read (only then).
              type: str
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmserve.sglang.plugins.module_utils import dma_faults as faults
from ansible_collections.llmserve.sglang.plugins.module_utils import gpu_sysfs
from ansible_collections.llmserve.sglang.plugins.module_utils import host_capture
from ansible_collections.llmserve.sglang.plugins.module_utils import host_packages
from ansible_collections.llmserve.sglang.plugins.module_utils import next_boot
from ansible_collections.llmserve.sglang.plugins.module_utils.nvidia_registry import inspect_registry_dwords

NVIDIA_SMI_PATHS = ('/usr/bin/nvidia-smi', '/usr/local/bin/nvidia-smi', '/usr/sbin/nvidia-smi')


def build_module():
    return AnsibleModule(
        argument_spec=dict(
            root=dict(type='path', default='/'),
            kernel_log=dict(type='path'),
            capture=dict(type='path'),
            next_boot=dict(type='bool', default=True),
        ),
        supports_check_mode=True,
    )


def read_kernel_log(module, host, kernel_log):
    """Return ``(lines, info)`` where ``info`` holds the ``kernel_log_*`` facts."""
    info = {'kernel_log_source': 'none', 'kernel_log_path': None, 'kernel_log_lines': 0,
            'kernel_log_error': None}
    if kernel_log:
        try:
            with open(kernel_log, 'rb') as handle:
                text = handle.read().decode('utf-8', 'replace')
        except (IOError, OSError) as exc:
            module.fail_json(msg='kernel_log %s cannot be read: %s' % (kernel_log, exc))
        lines = text.splitlines()
        info.update(kernel_log_source='file', kernel_log_path=kernel_log, kernel_log_lines=len(lines))
        return lines, info
    if not host.is_live:
        return [], info
    errors = []
    fallback = None
    commands = (
        ('journalctl', ['-k', '-b', '-o', 'short-monotonic', '--no-pager', '-q']),
        ('dmesg', []),
    )
    for name, args in commands:
        binary = module.get_bin_path(name)
        if not binary:
            errors.append('%s not found' % name)
            continue
        rc, out, err = module.run_command([binary] + args)
        if rc != 0:
            errors.append('%s failed (rc=%d): %s' % (name, rc, (err or out).strip()[:200]))
            continue
        lines = [line for line in out.splitlines() if line.strip()]
        if lines:
            info.update(kernel_log_source=name, kernel_log_lines=len(lines))
            return lines, info
        if fallback is None:
            fallback = name
        errors.append('%s printed nothing' % name)
    if fallback is not None:
        info.update(kernel_log_source=fallback, kernel_log_error='; '.join(errors))
    else:
        info['kernel_log_error'] = '; '.join(errors)
    return [], info


def find_nvidia_smi(module, host):
    if host.is_live:
        found = module.get_bin_path('nvidia-smi')
        if found and host.recorder is not None and found in NVIDIA_SMI_PATHS:
            host.recorder.file(found)
            host.recorder.modes[found] = 0o755
        return found
    for path in NVIDIA_SMI_PATHS:
        if host.isfile(path):
            return host.resolve(path)
    return None


def _count_events(events, gpus, key):
    counts = faults.count_by_device(events)
    for gpu in gpus:
        gpu[key] = counts.get(gpu['pci_address'], 0)


def read_apt_config(module, host):
    """``apt-config dump`` on the live host (APT merges its files itself); ``None`` elsewhere or without APT."""
    if not host.is_live:
        return None
    binary = module.get_bin_path('apt-config')
    if not binary:
        return None
    rc, out, _err = module.run_command([binary, 'dump'])
    return out if rc == 0 else None


def gather_next_boot(module, host, kernel_release, driver):
    """The ``next_boot`` facts; a host whose boot files cannot be read gets ``error`` instead of a failed module."""
    try:
        packages = host_packages.read_packages(host, read_apt_config(module, host))
        return next_boot.read_next_boot(host, kernel_release, driver['version'], packages)
    except (IOError, OSError, ValueError) as exc:
        return {'error': 'the next boot could not be read: %s' % exc}


def collect(module, root, kernel_log, recorder=None, with_next_boot=True):
    """Read the host below ``root`` (noting every read in ``recorder``); return ``(facts, kernel log lines)``."""
    host = gpu_sysfs.HostRoot(root, recorder=recorder)
    if not os.path.isdir(host.root):
        module.fail_json(msg='root %s is not a directory' % root)
    log_lines, log_info = read_kernel_log(module, host, kernel_log)

    cmdline = host.read('/proc/cmdline', default='')
    iommu, groups = gpu_sysfs.read_iommu(host, cmdline)
    gpus, virtual_functions = gpu_sysfs.scan_gpu_functions(host, groups)
    snp, snp_evidence = gpu_sysfs.detect_sev_snp(host, log_lines)

    driver = gpu_sysfs.read_nvidia_driver(host)
    values, notes = inspect_registry_dwords(driver['params'].get('RegistryDwords') or '')
    driver['registry_dwords'] = values
    driver['registry_dwords_notes'] = notes
    driver['nvidia_smi'] = find_nvidia_smi(module, host)

    events, dropped = faults.parse_kernel_log(log_lines)
    faults.attribute_faults(events, gpus)
    _count_events(events, gpus, 'dma_faults')
    xids, xids_dropped = faults.parse_xid_events(log_lines)
    faults.attribute_faults(xids, gpus)
    _count_events(xids, gpus, 'xid_events')

    facts = {
        'root': host.root,
        'kernel_release': host.read_value('/proc/sys/kernel/osrelease') or None,
        'gpus': gpus,
        'gpu_virtual_functions': virtual_functions,
        'pci_scan': gpu_sysfs.scan_pci(host),
        'iommu': iommu,
        'sev_snp': snp,
        'sev_snp_evidence': snp_evidence,
        'virtualization': gpu_sysfs.detect_virtualization(host, log_lines),
        'nvidia_driver': driver,
        'char_devices': gpu_sysfs.read_char_devices(host),
        'device_nodes': gpu_sysfs.read_device_nodes(host),
        'dma_faults': events,
        'dma_faults_dropped': dropped,
        'xid_events': xids,
        'xid_events_dropped': xids_dropped,
        'identity_units': gpu_sysfs.scan_identity_units(host),
    }
    facts.update(log_info)
    if with_next_boot:
        facts['next_boot'] = gather_next_boot(module, host, facts['kernel_release'], driver)
    return facts, log_lines


def gather(module, root, kernel_log, with_next_boot=True):
    """The ``gpu_host`` facts of the host below ``root``."""
    return collect(module, root, kernel_log, with_next_boot=with_next_boot)[0]


def capture_host(module, root, kernel_log, dest):
    """Gather the facts while recording what was read, and write (or, in check mode, plan) the bundle."""
    if not os.path.isabs(dest):
        module.fail_json(msg='capture must be an absolute file path, got %s' % dest)
    if os.path.isdir(dest):
        module.fail_json(msg='capture %s is a directory; give the path of the tar file to write' % dest)
    recorder = gpu_sysfs.HostRecorder()
    facts, log_lines = collect(module, root, kernel_log, recorder=recorder, with_next_boot=module.params['next_boot'])
    kept, omitted = faults.relevant_lines(log_lines, host_capture.KERNEL_LOG_MAX_LINES,
                                          host_capture.KERNEL_LOG_MAX_CHARS)
    info = {
        'format': host_capture.FORMAT,
        'tool': 'llmserve.sglang.gpu_host_facts',
        'created': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'),
        'kernel_release': facts['kernel_release'],
        'kernel_log': {'source': facts['kernel_log_source'], 'lines_read': len(log_lines), 'lines_kept': len(kept),
                       'lines_omitted': omitted, 'max_line_chars': host_capture.KERNEL_LOG_MAX_CHARS},
    }
    keep = host_capture.capture_filter(facts['identity_units'], NVIDIA_SMI_PATHS)
    try:
        entries, truncated = host_capture.plan_entries(recorder, keep, kept, info)
    except host_capture.CaptureError as exc:
        module.fail_json(msg='capture %s: %s' % (dest, exc))
    result = host_capture.summarize(entries)
    result.update(path=dest, written=False, size=None, truncated=truncated, kernel_log_lines=len(kept),
                  kernel_log_lines_omitted=omitted,
                  device_nodes=len([d for d in recorder.devices if gpu_sysfs.is_nvidia_device_path(d)]))
    if not module.check_mode:
        try:
            result['size'] = host_capture.write_bundle(dest, entries)
        except (host_capture.CaptureError, IOError, OSError) as exc:
            module.fail_json(msg='capture %s cannot be written: %s' % (dest, exc))
        result['written'] = True
    return facts, result


def main():
    module = build_module()
    module.run_command_environ_update = {'LANG': 'C', 'LC_ALL': 'C', 'LC_MESSAGES': 'C'}
    params = module.params
    if params['capture']:
        facts, capture = capture_host(module, params['root'], params['kernel_log'], params['capture'])
        module.exit_json(changed=True, capture=capture, ansible_facts={'gpu_host': facts})
    facts = gather(module, params['root'], params['kernel_log'], params['next_boot'])
    module.exit_json(changed=False, ansible_facts={'gpu_host': facts})


if __name__ == '__main__':
    main()
