# Summarises a `make fuzz` log (Maven + Jazzer/libFuzzer output): one line per fuzz target with the
# executions libFuzzer ran, the seconds, its final coverage (cov: edges, ft: features), the corpus and
# whether the target had a finding.
/Running io\.fdpblock\./ {
    if (target != "") report()
    target = $NF; sub(/^io\.fdpblock\./, "", target)
    runs = "-"; secs = "-"; cov = "-"; ft = "-"; corp = "-"; first = ""; result = "no finding"
}
/INITED cov:/ && first == "" { for (i = 1; i <= NF; i++) if ($i == "cov:") first = $(i + 1) }
/(DONE|NEW|REDUCE|pulse) +cov:/ {
    for (i = 1; i <= NF; i++) {
        if ($i == "cov:") cov = $(i + 1)
        if ($i == "ft:") ft = $(i + 1)
        if ($i == "corp:") corp = $(i + 1)
    }
}
/^Done [0-9]+ runs in [0-9]+ second/ { runs = $2; secs = $5 }
/FuzzTestFinding|ERROR: libFuzzer: timeout/ && result == "no finding" { result = "FINDING (see the log)" }
END {
    if (target != "") report()
    printf "%-36s %12s %6s %14s %8s %12s  %s\n", "target", "executions", "s", "cov (start->end)", "ft", "corpus", "result"
    for (n = 1; n <= count; n++) print lines[n]
}
function report() {
    lines[++count] = sprintf("%-36s %12s %6s %14s %8s %12s  %s", target, runs, secs, first "->" cov, ft, corp, result)
}
