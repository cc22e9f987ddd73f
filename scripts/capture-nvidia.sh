#!/bin/bash
# Captures an NVIDIA host's sysfs and nvidia-smi outputs into $OUT (read-only: nothing is written to a
# card), then runs the project's NVIDIA driver discovery on it (scripts/nvidia-discover.ts) when this
# checkout's node_modules are installed. How test/fixtures/captures/h100-vm/ was made.
set -u
O=${OUT:?}
mkdir -p "$O/smi" "$O/sysfs"
exec > >(tee "$O/capture.log") 2>&1
date -u; uname -r; head -2 /etc/os-release
cat /proc/driver/nvidia/version > "$O/smi/driver-version.txt" 2>&1
run() { local name=$1; shift; timeout 60 "$@" > "$O/smi/$name" 2> "$O/smi/$name.err"; echo "$* -> rc=$?"; }
run version.txt nvidia-smi --version
run L.txt nvidia-smi -L
run query.xml nvidia-smi -q -x
run query.txt nvidia-smi -q
run lgip.txt nvidia-smi mig -lgip
run lgi.txt nvidia-smi mig -lgi
run lci.txt nvidia-smi mig -lci
run query-gpu.csv nvidia-smi --query-gpu=index,pci.bus_id,name,uuid,pci.device_id,pci.sub_device_id,mig.mode.current,mig.mode.pending,temperature.gpu,power.draw,utilization.gpu,memory.used,memory.total,ecc.errors.uncorrected.volatile.total,clocks_throttle_reasons.active --format=csv
run vgpu.txt nvidia-smi vgpu
run vgpu-supported.txt nvidia-smi vgpu -s
run topo.txt nvidia-smi topo -m
run smi-plain.txt nvidia-smi
lspci -nn -D > "$O/lspci.txt" 2>&1 || true
for d in /sys/bus/pci/devices/*; do
  [ "$(cat "$d/vendor" 2>/dev/null)" = "0x10de" ] || continue
  a=$(basename "$d"); t="$O/sysfs/bus/pci/devices/$a"; mkdir -p "$t"
  for f in vendor device subsystem_vendor subsystem_device class revision numa_node boot_vga sriov_totalvfs sriov_numvfs sriov_vf_device driver_override current_link_speed current_link_width max_link_speed max_link_width local_cpulist enable; do
    [ -r "$d/$f" ] && cat "$d/$f" > "$t/$f" 2>/dev/null
  done
  for l in driver iommu_group physfn; do [ -L "$d/$l" ] && readlink "$d/$l" > "$t/$l.link"; done
  ls -la "$d/" > "$t/.listing" 2>&1
  if [ -d "$d/mdev_supported_types" ]; then
    for ty in "$d"/mdev_supported_types/*; do
      n=$(basename "$ty"); mkdir -p "$t/mdev_supported_types/$n"
      for f in name available_instances device_api description; do cat "$ty/$f" > "$t/mdev_supported_types/$n/$f" 2>/dev/null; done
    done
  fi
  ls -la "$d/nvidia" > "$t/.nvidia-listing" 2>/dev/null
done
ls /sys/class/mdev_bus > "$O/mdev_bus.txt" 2>&1
if [ -x node_modules/.bin/tsx ]; then
  timeout 120 node_modules/.bin/tsx scripts/nvidia-discover.ts /sys > "$O/discovered.json" 2> "$O/discovered.err"; echo "discover rc=$?"
else
  echo "discovery skipped: run npm ci in this checkout first"
fi
(dmesg 2>/dev/null || journalctl -k --no-pager 2>/dev/null) | grep -i -E "NVRM|xid" | tail -100 > "$O/kernel-nvrm.txt"
echo done
