#!/bin/sh
# Runs inside `docker build` (see Dockerfile): installs QEMU and the guest's tools from Debian, and
# prepares the boot files of the two guests (README.md): /opt/fdp/boot/<guest>/vmlinux (PVH entry),
# initramfs.cpio and kernel-version, plus the shared /opt/fdp/boot/qboot.rom.
#   base     Debian's 6.12 kernel (bookworm-backports on bookworm, main on trixie)
#   streams  the newest kernel >= 6.16 of trixie-backports: block-layer write streams (FDP on nvmeXnY)
set -eu
SUITE=$1
cd /opt/fdp
chmod 755 guest-init run-guest

mirror=$(sed -n 's/^deb \(http[^ ]*\) .*/\1/p' /etc/apt/sources.list | head -n1)
mirror=${mirror:-http://deb.debian.org/debian}
case "$SUITE" in
  bookworm)
    # Debian 12's own QEMU is 7.2 (no FDP) and its kernel 6.1: both come from bookworm-backports.
    echo "deb $mirror bookworm-backports main" >/etc/apt/sources.list.d/backports.list
    BP="bookworm-backports" ;;
  *) BP="" ;;
esac
apt-get update -qq

# Packages: QEMU, the initramfs' parts, and what the guest's user space (this root, over 9p) needs
# (fio: the reference side of `make bench-guest`, with its io_uring_cmd engine for NVMe passthru).
T=${BP:+-t $BP}
apt-get install -y -qq --no-install-recommends $T \
    qemu-system-x86 busybox-static kmod xz-utils zstd cpio liburing2 nvme-cli fio >/dev/null
qemu-system-x86_64 --version | head -n1
qver=$(qemu-system-x86_64 --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
[ "${qver:-0}" -ge 8 ] || { echo "prepare-image: QEMU $qver < 8 has no FDP" >&2; exit 1; }

mkdir -p /opt/fdp/boot
# qboot instead of SeaBIOS (faster under TCG)
for f in /usr/share/qemu/qboot.rom /usr/share/seabios/qboot.rom; do
  [ -f "$f" ] && cp "$f" /opt/fdp/boot/qboot.rom && break
done
[ -f /opt/fdp/boot/qboot.rom ] || echo "prepare-image: no qboot.rom: the launcher falls back to the default BIOS"

# boot_files GUEST ROOT VMLINUZ: from a kernel unpacked (not installed: no initramfs-tools, no hooks)
# under ROOT, /opt/fdp/boot/GUEST/{vmlinux,initramfs.cpio,kernel-version}.
boot_files() {
  guest=$1 root=$2 vmlinuz=$3
  out=/opt/fdp/boot/$guest
  mkdir -p "$out"
  # Debian's packages ship /usr/lib/modules (merged /usr); depmod and modprobe -d look in lib/modules
  [ -e "$root/lib" ] || ln -s usr/lib "$root/lib"
  kver=$(ls "$root/lib/modules" | head -n1)
  depmod -b "$root" "$kver"

  # vmlinux: the uncompressed ELF inside the bzImage (QEMU boots it through its PVH entry point).
  for magic in '\xfd7zXZ\x00' '\x28\xb5\x2f\xfd' '\x1f\x8b\x08'; do
    for off in $(LC_ALL=C grep -obUaP "$magic" "$vmlinuz" | cut -d: -f1); do
      case "$magic" in
        *zXZ*) dec="xz -dc" ;; *b5*) dec="zstd -dcq" ;; *) dec="gzip -dc" ;;
      esac
      tail -c +$((off + 1)) "$vmlinuz" | $dec >"$out/vmlinux" 2>/dev/null || true
      if [ "$(head -c 4 "$out/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then break 2; fi
    done
  done
  [ "$(head -c 4 "$out/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] \
    || { echo "prepare-image: no ELF vmlinux found inside $vmlinuz" >&2; exit 1; }
  echo "$kver" >"$out/kernel-version"

  # The initramfs: busybox, the modules for the virtio console, NVMe and 9p (decompressed, in load order; none when
  # built in), /init.
  ir=/tmp/initramfs-$guest
  mkdir -p $ir/bin $ir/lib/modules $ir/dev $ir/proc $ir/sys $ir/newroot
  cp /bin/busybox $ir/bin/busybox
  : >$ir/modules
  for want in virtio_pci virtio_console nvme 9pnet_virtio 9p; do
    modprobe -d "$root" -S "$kver" --show-depends "$want" | while read -r kind path _; do
      [ "$kind" = insmod ] || continue
      name=$(basename "$path"); name=${name%.ko*}
      grep -qx "$name" $ir/modules && continue
      case "$path" in
        *.xz) xz -dc "$path" ;; *.zst) zstd -dcq "$path" ;; *.gz) gzip -dc "$path" ;; *) cat "$path" ;;
      esac >"$ir/lib/modules/$name.ko"
      echo "$name" >>$ir/modules
    done
  done
  echo "prepare-image: guest $guest: kernel $kver, initramfs modules: $(tr '\n' ' ' <$ir/modules)"
  cp /opt/fdp/guest-init $ir/init
  (cd $ir && find . | cpio -o -H newc --quiet) >"$out/initramfs.cpio"
  rm -rf $ir
  ls -l "$out"
}

# Guest "base": the newest linux-image-6.12.*-amd64 of the suite (backports on bookworm), generic
# flavour (not -rt, -cloud, -dbg or -unsigned: nvme and 9p are modules there).
kpkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+[^-]*-amd64$' | awk '{print $1}' \
       | sort -V | tail -n1)
[ -n "$kpkg" ] || { echo "prepare-image: no linux-image-6.12.*-amd64 in $SUITE${BP:+ / $BP}" >&2; exit 1; }
echo "prepare-image: guest base: kernel package $kpkg"
mkdir -p /tmp/k && chown _apt /tmp/k 2>/dev/null; cd /tmp/k
apt-get download "$kpkg" >/dev/null
dpkg-deb -x ./*.deb root
boot_files base /tmp/k/root "$(ls /tmp/k/root/boot/vmlinuz-* | head -n1)"
cd / && rm -rf /tmp/k

# Guest "streams": a kernel >= 6.16 (block-layer write streams) from trixie-backports, through an
# apt configuration of its own, used for this download only: QEMU and the tools above stay on the
# suite's packages. bookworm's archive keyring verifies trixie's suites. From 7.x on linux-image-<ver>
# is a metapackage: the kernel is in linux-binary-<ver> (usr/lib/modules/<ver>/vmlinuz), the modules
# in linux-modules-<ver>, modules.builtin (which modprobe needs) in linux-base-<ver>.
ka=/tmp/kapt
mkdir -p $ka/lists/partial $ka/archives/partial /tmp/k2
echo "deb $mirror trixie-backports main" >$ka/sources.list
KAPT="-o Dir::Etc::SourceList=$ka/sources.list -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists=$ka/lists -o Dir::Cache::Archives=$ka/archives"
apt-get $KAPT update -qq
# (generic flavour, e.g. linux-binary-7.3.4+deb13-amd64: not -rt or -cloud)
kbin=$(apt-cache $KAPT search --names-only '^linux-binary-[0-9]+\.[0-9]+(\.[0-9]+)?(\+[^-]*)?-amd64$' \
       | awk '{print $1}' | sort -V | tail -n1)
kv=${kbin#linux-binary-}
kup=${kv%%[+-]*}
[ -n "$kbin" ] && dpkg --compare-versions "$kup" ge 6.16 \
  || { echo "prepare-image: no linux-binary-<version>-amd64 >= 6.16 in trixie-backports (newest: '${kbin:-none}')" >&2; exit 1; }
echo "prepare-image: guest streams: kernel packages linux-binary/modules/base-$kv"
chown _apt /tmp/k2 2>/dev/null; cd /tmp/k2
apt-get $KAPT download "linux-binary-$kv" "linux-modules-$kv" "linux-base-$kv" >/dev/null
for d in ./*.deb; do dpkg-deb -x "$d" root; done
boot_files streams /tmp/k2/root "/tmp/k2/root/usr/lib/modules/$kv/vmlinuz"
cd / && rm -rf /tmp/k2 $ka

# Mount points for the shares (the container binds them; the guest mounts them over 9p here too).
mkdir -p /fdp/project /fdp/jdk /fdp/work
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
