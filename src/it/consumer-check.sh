#!/usr/bin/env bash
# make consumer-check: is the artifact that `mvn install` put in the local repository usable by a service?
# Copies src/it/consumer (a project that depends on io.fdpblock:fdpblock) to a temp dir outside the
# repository, then checks:
#   1. `mvn dependency:tree` of it shows the library and no CLI, chart, benchmark or test library, and the
#      library jar holds none of the tools' classes (src/tools);
#   2. its Main (open a RawBlockCore on a file, put a key, load it, reopen) runs on the module path with
#      --enable-native-access=io.fdpblock and on the class path with ALL-UNNAMED;
#      and a consumer module cannot compile against the generated bindings (not exported);
#   3. on the module path without the flag (and --illegal-native-access=deny) it fails naming the flag.
# Needs: JAVA_HOME = a JDK >= 25, the artifact installed (`make consumer-check` runs `mvn install` first).
# MVN overrides the Maven command (default: mvn -B; e.g. MVN='mvn -B -o' offline).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
read -r -a mvn_cmd <<<"${MVN:-mvn -B}"
java="${JAVA_HOME:?set JAVA_HOME to a JDK >= 25}/bin/java"
javac="$JAVA_HOME/bin/javac"
version=$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' "$repo/pom.xml" | head -1)
[ -n "$version" ] || { echo "consumer-check: no <version> in $repo/pom.xml" >&2; exit 1; }
installed="$HOME/.m2/repository/io/fdpblock/fdpblock/$version/fdpblock-$version.jar"
[ -f "$installed" ] || { echo "consumer-check: $installed is missing: run mvn install (make consumer-check does)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/fdpblock-consumer.XXXXXX")
# the device file needs O_DIRECT, which tmpfs lacks: /var/tmp is disk-backed by convention
data=$(mktemp -d /var/tmp/fdpblock-consumer-data.XXXXXX)
trap 'rm -rf "$work" "$data"' EXIT
cp -r "$repo/src/it/consumer/." "$work/"
sed -i "s|@FDPBLOCK_VERSION@|$version|" "$work/pom.xml"
cd "$work"
fail() { echo "consumer-check: FAILED: $*" >&2; exit 1; }

# 1. what a service gets
"${mvn_cmd[@]}" -q dependency:tree -DoutputFile="$work/tree.txt" >/dev/null
"${mvn_cmd[@]}" -q dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$work/cp.txt" >/dev/null
echo "consumer-check: dependency tree of a project that depends on io.fdpblock:fdpblock:$version"
sed 's/^/  /' tree.txt
grep -q "io.fdpblock:fdpblock:jar:$version" tree.txt || fail "the library is not in the tree"
forbidden='info\.picocli|me\.tongfei|org\.knowm|org\.hdrhistogram|jline|org\.openjdk\.jmh|junit|assertj|testcontainers'
if grep -Eq "$forbidden" tree.txt; then
  fail "the tree has CLI, chart, benchmark or test libraries: $(grep -E "$forbidden" tree.txt | tr -d '\n')"
fi
if unzip -l "$installed" | grep -Eq 'io/fdpblock/(cli|bench|sim|tools)/'; then
  fail "the installed library jar contains the command line, the benchmarks or the WAF model"
fi
cp=$(cat cp.txt)

# 2. module path and class path
mkdir -p out/mod out/cp
"$javac" -d out/mod --module-path "$cp" src/main/java/module-info.java src/main/java/consumer/Main.java
"$javac" -d out/cp -cp "$cp" src/main/java/consumer/Main.java
echo "consumer-check: module path, --enable-native-access=io.fdpblock"
"$java" --enable-native-access=io.fdpblock --module-path "out/mod:$cp" -m consumer/consumer.Main "$data" \
  | tee out/mod.txt
grep -q "consumer: OK.*module io.fdpblock$" out/mod.txt || fail "the module-path run did not report OK from module io.fdpblock"
rm -f "$data/consumer.img"
echo "consumer-check: class path, --enable-native-access=ALL-UNNAMED"
"$java" --enable-native-access=ALL-UNNAMED -cp "out/cp:$cp" consumer.Main "$data" | tee out/cp.txt
grep -q "consumer: OK.*module null$" out/cp.txt || fail "the class-path run did not report OK from the unnamed module"
rm -f "$data/consumer.img"

# the generated bindings and internals are not exported: a module that uses them does not compile
mkdir -p internal/consumer out/internal
cp src/main/java/module-info.java internal/
printf 'package consumer;\nclass UsesBindings { int nop = io.fdpblock.ffi.FdpNative.IORING_OP_NOP(); }\n' \
  >internal/consumer/UsesBindings.java
if "$javac" -d out/internal --module-path "$cp" internal/module-info.java internal/consumer/UsesBindings.java \
    >out/internal.txt 2>&1; then
  fail "a consumer module compiled against io.fdpblock.ffi, which must not be exported"
fi
grep -q "package io.fdpblock.ffi is declared in module io.fdpblock, which does not export it" out/internal.txt \
  || fail "compiling against io.fdpblock.ffi failed for another reason: $(cat out/internal.txt)"
echo "consumer-check: io.fdpblock.ffi is not exported (javac: declared in module io.fdpblock, which does not export it)"

# 3. the flag forgotten
echo "consumer-check: module path without the flag, --illegal-native-access=deny (must fail naming the flag)"
if "$java" --illegal-native-access=deny --module-path "out/mod:$cp" -m consumer/consumer.Main "$data" \
    >out/denied.txt 2>&1; then
  fail "the run without native access succeeded"
fi
grep -q -- "start java with --enable-native-access=io.fdpblock" out/denied.txt \
  || fail "the failure does not name --enable-native-access=io.fdpblock: $(head -5 out/denied.txt)"
grep -m1 -o "native access is not enabled for module io.fdpblock[^(]*" out/denied.txt | sed 's/^/  /'
echo "consumer-check: OK"
