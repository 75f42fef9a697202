# fdpblock: `make run` (the main job on an embedded default) and `make test`.
# The Makefile picks a JDK >= 25 by itself: JAVA_HOME when it is one, else the newest under /usr/lib/jvm.
SHELL := /bin/bash
.DEFAULT_GOAL := help

JDK := $(shell for d in "$$JAVA_HOME" $$(ls -d /usr/lib/jvm/*/ 2>/dev/null | sort -rV); do \
	d=$${d%/}; [ -n "$$d" ] && [ -x "$$d/bin/javac" ] && [ -f "$$d/release" ] || continue; \
	v=$$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$$d/release"); \
	if [ "$${v:-0}" -ge 25 ]; then echo "$$d"; break; fi; done)

MVN := JAVA_HOME=$(JDK) MAVEN_OPTS="$(MAVEN_OPTS) --sun-misc-unsafe-memory-access=allow" mvn -B
JAVA := $(JDK)/bin/java --enable-native-access=ALL-UNNAMED
# Two Maven projects: the library (pom.xml, artifact io.fdpblock:fdpblock) and the tools on it (src/tools: the
# command line, the benchmarks, the WAF model, the device tier's host side). The tools build against the
# library installed in the local repository, so every target that builds them installs the library first.
TOOLS := src/tools
TOOLS_MVN := $(MVN) -f $(TOOLS)/pom.xml
JAR := target/fdpblock.jar
# System packages the project needs at run time (Debian names).
DEB_PACKAGES := liburing2
# What the Python tier needs (python/: the LMCache adapter plugin and its tests). Installed by `make deps`
# when possible; where not, `make test` skips that tier and says why.
PYTHON_PACKAGES := python3-jpype python3-pytest python3-numpy
# Debian's packages install for the system interpreter; a python3 earlier on the PATH (pyenv, a venv)
# does not see them.
PYTHON ?= $(shell if [ -x /usr/bin/python3 ]; then echo /usr/bin/python3; else command -v python3; fi)
# The headers `make bindings` reads (Debian names, the same on Debian 12 and 13): liburing.h and its copy
# of the io_uring uapi header, the kernel's uapi headers (linux/nvme_ioctl.h, linux/fs.h), glibc's.
BINDINGS_PACKAGES := liburing-dev linux-libc-dev libc6-dev
# jextract: on the PATH, or given as `make bindings JEXTRACT=/path/to/jextract/bin/jextract`.
JEXTRACT ?= $(shell command -v jextract 2>/dev/null)

# $(call apt-install,PACKAGES): installs those of the Debian PACKAGES that are missing (as root, or through
# sudo); fails with one line naming them when it cannot.
define apt-install
missing=""; for p in $(1); do \
  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
  if ! command -v apt-get >/dev/null; then \
    echo "fdpblock: no apt-get here ($$(. /etc/os-release 2>/dev/null; echo "$${PRETTY_NAME:-unknown system}")): install the equivalents of the Debian packages$$missing yourself" >&2; exit 1; fi; \
  echo "fdpblock: installing$$missing"; \
  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else \
    echo "fdpblock: missing packages:$$missing; install them as root (apt-get install$$missing)" >&2; exit 1; fi; \
  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
fi
endef

# The Python tier (docs/lmcache-python.md): python/tests against the runnable jar, in the JDK the Makefile
# chose; skipped with one line when $(PYTHON) lacks a module it needs. pytest's faulthandler would take
# the JVM's SIGSEGV handler over, so it is off.
define python-tier
py="$(PYTHON)"; reason=""; \
if [ -z "$$py" ]; then reason="no python3 found"; \
else missing=$$("$$py" -c 'import importlib.util as u; print(" ".join(m for m in ("jpype", "numpy", "pytest") if u.find_spec(m) is None))' 2>&1) \
  || missing="(it does not run: $$missing)"; [ -z "$$missing" ] || reason="$$py lacks $$missing"; fi; \
if [ -n "$$reason" ]; then \
  echo "fdpblock: Python tier skipped: $$reason (Debian: $(PYTHON_PACKAGES); make deps installs them)"; \
else \
  JAVA_HOME=$(JDK) FDPBLOCK_JAR=$(abspath $(JAR)) PYTHONDONTWRITEBYTECODE=1 \
    "$$py" -m pytest -p no:faulthandler -p no:cacheprovider -q python/tests; \
fi
endef

.PHONY: help jdk deps build test test-python soak fuzz test-image device-env test-hardware run waf bench bench-scale bench-guest jmh bindings jshell clean consumer-check

help:
	@echo "make run       the main job on the embedded default (a file-backed device in a temp dir); RUN_ARGS=... to pass options"
	@echo "make test      all test tiers this machine can run: the library's tests, then the tools' and the device tier (brings up its guest image itself), then the Python adapter's"
	@echo "make test-python  the Python tier alone: the LMCache adapter plugin of python/ (docs/lmcache-python.md)"
	@echo "make soak      the long runs of the store for minutes: SOAK_OPS operations, SOAK_LAPS log laps a reopen (docs/reliability.md)"
	@echo "make fuzz      fuzz every decoder for FUZZ_SECONDS each (default $(FUZZ_SECONDS)); FUZZ_TEST=Class for one (docs/fuzzing.md)"
	@echo "make test-image build the emulated NVMe FDP guest's container image (test-images/; reused when present)"
	@echo "make test-hardware  the device tests on a real FDP SSD: FDPBLOCK_NVME_DEVICE=/dev/ngXnY make test-hardware"
	@echo "make deps      install missing system packages ($(DEB_PACKAGES); for the Python tier, when possible: $(PYTHON_PACKAGES))"
	@echo "make bindings  regenerate bindings/ with jextract (on the PATH, or JEXTRACT=...; installs $(BINDINGS_PACKAGES))"
	@echo "make jshell    jshell with fdpblock on the class path and $(TOOLS)/src/main/jshell/fdpblock.jsh loaded"
	@echo "make waf       placement and eviction policies compared: WAF in the FDP SSD model and L2 hit ratio (WAF_ARGS=...)"
	@echo "make bench     fdpblock bench: ours vs fio side by side (installs fio when missing); BENCH_ARGS=... to pass options"
	@echo "make bench-scale  the store at scale: 10M entries (fdpblock_v2) and 2M (lmcache_v1), 5-10 min, root; SCALE_ARGS=... to pass options"
	@echo "make bench-guest  fdpblock bench in the emulated FDP guest: the NVMe passthru cases vs fio io_uring_cmd, then the placement cases (write streams vs plain vs passthru); BENCH_GUEST_SUITES=passthru|placement, BENCH_GUEST_ARGS=..."
	@echo "make jmh       the JMH microbenchmarks (src/test/java/io/fdpblock/jmh), briefly; JMH_ARGS=... to change"
	@echo "make consumer-check  mvn install, then a service project outside the repo uses the installed library (src/it/)"

jdk:
	@if [ -z "$(JDK)" ]; then \
	  echo "fdpblock: no JDK >= 25 found (JAVA_HOME='$(JAVA_HOME)', /usr/lib/jvm): install one, e.g. Temurin 25, or set JAVA_HOME to it" >&2; \
	  exit 1; fi

deps:
	@$(call apt-install,$(DEB_PACKAGES))
	@($(call apt-install,$(PYTHON_PACKAGES))) || echo "fdpblock: the Python tier's packages ($(PYTHON_PACKAGES)) are not installed: make test skips that tier"

# The runnable jar: the tools, the library and every dependency (src/tools/src/assembly/cli.xml), built in
# src/tools/target and copied here beside the launcher. The library jar, target/fdpblock-<version>.jar, and
# its test jar are what `mvn install` installs (the tools' build and tests need both).
$(JAR): jdk $(shell find src/main bindings $(TOOLS)/src/main $(TOOLS)/src/assembly -type f 2>/dev/null) pom.xml $(TOOLS)/pom.xml
	$(MVN) -DskipTests install
	$(TOOLS_MVN) -DskipTests package
	install -m 644 $(TOOLS)/target/fdpblock.jar $(JAR)
	install -m 755 $(TOOLS)/src/main/scripts/fdpblock target/fdpblock

build: deps $(JAR)

# The library's tests first, ending with the fuzz part (docs/fuzzing.md): every fuzz target replays its
# inputs, then one combined target fuzzes all decoders for 25 s (MVN_ARGS=-Dfdpblock.fuzz.short=60s to
# change); then it is installed, and the tools' tests run on it, the device tier among them, whose guests
# run the device tests of both (the tools' test classes and the library's test jar). `package` runs those
# tests and then makes the runnable jar of what they tested, which the Python tier runs on last.
test: jdk deps device-env
	$(MVN) $(MVN_ARGS) install
	$(TOOLS_MVN) $(MVN_ARGS) package
	install -m 644 $(TOOLS)/target/fdpblock.jar $(JAR)
	@$(python-tier)

# The Python tier alone, on a freshly built jar.
test-python: $(JAR)
	@$(python-tier)

# The store's long runs, for minutes instead of seconds (make test runs them small): SoakTest (a model of
# every key, byte for byte, over reopens) and ConcurrentChurnReopenTest (fdpblock run's shape on the store;
# the index at close against the reopened one, entry for entry), both with the log wrapping many times.
SOAK_OPS ?= 3000000
SOAK_LAPS ?= 12
soak: jdk deps
	$(MVN) $(MVN_ARGS) test -Dtest='SoakTest,ConcurrentChurnReopenTest' -Dfdpblock.fuzz.skip=true \
	  -Dsurefire.failIfNoSpecifiedTests=false -Dfdpblock.soak.ops=$(SOAK_OPS) -Dfdpblock.soak.laps=$(SOAK_LAPS)

# The longer fuzzing run: each fuzz target for FUZZ_SECONDS in a JVM of its own, then a table of
# executions, coverage and findings per target (also in target/fuzz-summary.txt). A finding fails the run
# and is written next to the target's seeds (src/test/resources/<package>/<Class>Inputs/<method>/).
FUZZ_SECONDS ?= 40
FUZZ_TEST ?=
fuzz: jdk deps
	@mkdir -p target
	@set -o pipefail; $(MVN) $(MVN_ARGS) -Pfuzz test -Dfdpblock.fuzz.seconds=$(FUZZ_SECONDS) \
	  $(if $(FUZZ_TEST),-Dtest=$(FUZZ_TEST)) 2>&1 | tee target/fuzz.log; rc=$$?; \
	awk -f src/test/scripts/fuzz-summary.awk target/fuzz.log | tee target/fuzz-summary.txt; exit $$rc

# The device tier's guest image: installs and starts a container engine if needed, builds the image
# when missing, reuses it when present. Fails when the build fails.
test-image:
	bash test-images/build.sh

# The same for `make test`, which it never stops: where the tier cannot run (not root, no engine can
# run here) or its build failed, build.sh says why and records it in target/device-tier/status; the
# tier's host test (io.fdpblock.devicetier.EmulatedFdpDeviceTierTest, in $(TOOLS)) then skips (cannot run) or fails
# (build failed) with that reason.
device-env:
	@bash test-images/build.sh --if-possible

# The opt-in hardware tier: the `device` tests straight on this machine against a real FDP SSD
# (its generic char device /dev/ngXnY; FDPBLOCK_NVME_BLOCK=/dev/nvmeXnY if not derivable). Destroys its data.
test-hardware: jdk deps
	@if [ -z "$$FDPBLOCK_NVME_DEVICE" ]; then \
	  echo "fdpblock: set FDPBLOCK_NVME_DEVICE to the FDP SSD's generic char device, e.g. FDPBLOCK_NVME_DEVICE=/dev/ng0n1 make test-hardware (its data is overwritten)" >&2; exit 1; fi
	$(MVN) $(MVN_ARGS) install -Dfdpblock.test.groups=device -Dfdpblock.fuzz.skip=true
	$(TOOLS_MVN) $(MVN_ARGS) test -Dfdpblock.test.groups=device

# The main job; RUN_ARGS=... passes options, e.g. RUN_ARGS="--load-deadline-ms 50" (docs/cli.md).
RUN_ARGS ?=
run: build
	$(JAVA) -jar $(JAR) run $(RUN_ARGS)

# The comparison of placement and eviction policies (docs/waf-model.md) (fdpblock waf; about 10 minutes here):
# traces, waf.json and waf.png in target/waf.
WAF_ARGS ?=
waf: build
	$(JAVA) -jar $(JAR) waf $(WAF_ARGS)

jshell: build
	$(JDK)/bin/jshell --class-path $(JAR) -R--enable-native-access=ALL-UNNAMED --startup DEFAULT --startup $(TOOLS)/src/main/jshell/fdpblock.jsh

# fdpblock bench compares against fio (Debian package fio); its chart needs a font (fontconfig + DejaVu).
# Then the store's puts beside its metadata snapshots at 2M entries (fdpblock bench-scale: under a minute,
# a 2.7 GB file removed after; figures in target/bench/scale-2m.json); BENCH_SCALE_ARGS= skips it.
BENCH_ARGS ?=
BENCH_SCALE_ARGS ?= --entries 2000000 --meta-format fdpblock_v2 --keys-per-put 64 --json target/bench/scale-2m.json
bench: build
	@missing=""; command -v fio >/dev/null || missing=" fio"; \
	if ! command -v fc-list >/dev/null || [ -z "$$(fc-list 2>/dev/null | head -1)" ]; then missing="$$missing fontconfig fonts-dejavu-core"; fi; \
	if [ -n "$$missing" ]; then \
	  echo "fdpblock: installing$$missing (apt-get install -y$$missing)"; \
	  if [ "$$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else SUDO="-"; fi; \
	  if [ "$$SUDO" = "-" ]; then echo "fdpblock: not root and no sudo: install$$missing as root; the bench runs without them" >&2; \
	  else ($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq$$missing) \
	    || echo "fdpblock: installing$$missing failed; the bench runs without them" >&2; fi; \
	fi
	target/fdpblock bench $(BENCH_ARGS)
	@if [ -n "$(strip $(BENCH_SCALE_ARGS))" ]; then echo "target/fdpblock bench-scale $(BENCH_SCALE_ARGS)"; \
	  target/fdpblock bench-scale $(BENCH_SCALE_ARGS); fi

# The scale benchmark of the store (fdpblock bench-scale, docs/scale.md): fills a store on a file
# behind a loop device (root; --no-loop: the file itself, 8 KiB slots) with 10M entries, then 2M in
# lmcache_v1; a 12.5 GiB file at most, removed after. Never run by make test or CI.
SCALE_ARGS ?=
bench-scale: build
	target/fdpblock bench-scale $(SCALE_ARGS)

# fdpblock bench in the device tier's emulated FDP guest, one suite per guest boot (src/test/scripts/bench-guest.sh):
#   passthru   the NVMe passthru cases (uring_cmd on /dev/ng0n1) vs fio's io_uring_cmd engine, in the `base` guest;
#   placement  the placement cases (write streams on /dev/nvme0n1 vs plain io_uring vs passthru, same job), in the
#              `streams` guest (a kernel >= 6.16).
# Both run by default, each even when the other failed (exit 1 if any did); BENCH_GUEST_SUITES picks, and
# BENCH_GUEST_ARGS replaces the bench options of each suite run. Output: target/bench-guest/<suite>/.
BENCH_GUEST_SUITES ?= passthru placement
BENCH_GUEST_ARGS ?=
bench-guest: build
	@rc=0; for suite in $(BENCH_GUEST_SUITES); do \
	  bash src/test/scripts/bench-guest.sh $(JDK) $$suite $(BENCH_GUEST_ARGS) || rc=1; done; exit $$rc

# JMH runs from the test classes (the benchmarks are test-scoped), each in a forked JVM with native access
# (JMH 1.37 still calls sun.misc.Unsafe: allowed, as for Maven).
JMH_ARGS ?= -f 1 -wi 2 -i 3 -w 1s -r 1s
JMH_FILTER ?= io.fdpblock.jmh
jmh: jdk deps
	$(MVN) -q -DskipTests test-compile org.apache.maven.plugins:maven-dependency-plugin:3.9.0:build-classpath \
	  -Dmdep.outputFile=target/jmh.classpath -Dmdep.includeScope=test
	$(JAVA) --sun-misc-unsafe-memory-access=allow -cp "target/classes:target/test-classes:$$(cat target/jmh.classpath)" \
	  org.openjdk.jmh.Main $(JMH_ARGS) -jvmArgsAppend "--enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow" \
	  -rf json -rff target/jmh-result.json $(JMH_FILTER)

# Is the installed library what a service needs? Installs it (tests skipped: `make test` runs them), then
# src/it/consumer-check.sh builds a project outside the repository that depends on it: no CLI or chart
# libraries in its dependency tree, a RawBlockCore put/load on the module path and on the class path,
# and the missing --enable-native-access named when it is forgotten. MVN_ARGS (e.g. -o, offline) goes to
# both Maven runs, the install and the consumer's.
consumer-check: jdk deps
	$(MVN) $(MVN_ARGS) -DskipTests install
	JAVA_HOME=$(JDK) MAVEN_OPTS="$(MAVEN_OPTS) --sun-misc-unsafe-memory-access=allow" MVN="mvn -B $(MVN_ARGS)" bash src/it/consumer-check.sh

# Regenerates bindings/ from headers/fdpblock.h and jextract.conf (bindings/GENERATED.md: the recipe that
# reproduces the committed files byte for byte). jextract writes into target/ first: bindings/ is replaced
# only by a complete output. The two known traps get their own messages: a jextract on libclang >= 16
# (it fails on anonymous unions), and a jextract image that carries a copy of clang's headers
# (<image>/runtime/conf/jextract/*.h) while its libclang also finds the system's, which reads stdint.h
# twice and glibc's never ("unknown type name 'intmax_t'").
JEXTRACT_OUT := target/jextract-out
bindings:
	@if [ -z "$(JEXTRACT)" ]; then \
	  echo "fdpblock: jextract not found (not on the PATH, JEXTRACT unset): build it from openjdk/jextract master with JDK 25 and Debian's libclang-14-dev (docs/bindings.md), then run make bindings JEXTRACT=/path/to/jextract/bin/jextract" >&2; exit 1; fi; \
	if [ ! -x "$(JEXTRACT)" ]; then echo "fdpblock: JEXTRACT=$(JEXTRACT) is not an executable file: give the jextract launcher, e.g. JEXTRACT=/path/to/jextract/bin/jextract" >&2; exit 1; fi
	@clang=$$("$(JEXTRACT)" --version 2>&1 | sed -n 's/^LibClang version .*clang version \([0-9][0-9]*\)\..*/\1/p'); \
	if [ "$${clang:-0}" -ge 16 ]; then \
	  echo "fdpblock: $(JEXTRACT) runs on libclang $$clang, and jextract fails on anonymous unions (liburing's SQE) with libclang 16 and later: use one built against libclang 13 to 15, e.g. Debian 12's libclang-14-dev (Debian 13 packages only 17 and later: build and run jextract on Debian 12, in a container or chroot if need be)" >&2; exit 1; fi
	@$(call apt-install,$(BINDINGS_PACKAGES))
	@rm -rf $(JEXTRACT_OUT) && mkdir -p $(JEXTRACT_OUT)
	@echo "$(JEXTRACT) @jextract.conf --output $(JEXTRACT_OUT) headers/fdpblock.h"
	@"$(JEXTRACT)" @jextract.conf --output $(JEXTRACT_OUT) headers/fdpblock.h 2>&1 | tee $(JEXTRACT_OUT).log; \
	rc=$${PIPESTATUS[0]}; \
	if grep -q "unknown type name '\(u\)\?intmax_t'" $(JEXTRACT_OUT).log; then \
	  conf="$$(dirname "$$(readlink -f "$(JEXTRACT)")")/../runtime/conf/jextract"; \
	  if [ -d "$$conf" ]; then conf="$$(cd "$$conf" && pwd)"; else conf="<jextract image>/runtime/conf/jextract"; fi; \
	  echo "fdpblock: this jextract reads clang's stdint.h twice and glibc's never: its image carries a copy of clang's headers ($$conf/*.h) while its libclang also finds the system's; remove the copy (rm $$conf/*.h; nothing else reads it), then run make bindings again" >&2; exit 1; fi; \
	if [ "$$rc" -ne 0 ] || [ ! -f $(JEXTRACT_OUT)/io/fdpblock/ffi/FdpNative.java ]; then \
	  echo "fdpblock: jextract failed (exit $$rc) and bindings/ is unchanged; see its messages above" >&2; exit 1; fi
	rm -rf bindings/io && mv $(JEXTRACT_OUT)/io bindings/io
	@if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  if [ -z "$$(git status --porcelain -- bindings/io)" ]; then echo "fdpblock: bindings/ regenerated, identical to the committed files"; \
	  else echo "fdpblock: bindings/ differs from the committed files (git status bindings/). Unless headers/ or jextract.conf changed, the header versions did: here $$(dpkg-query -W -f='$${Package} $${Version}, ' $(BINDINGS_PACKAGES) 2>/dev/null)on $$(. /etc/os-release 2>/dev/null; echo "$$PRETTY_NAME"); the committed files come from those in bindings/GENERATED.md"; fi; \
	fi

clean:
	rm -rf target $(TOOLS)/target
