package io.fdpblock.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code fdpblock} command line. */
@Command(name = "fdpblock", mixinStandardHelpOptions = true, version = "fdpblock 0.1.0",
        description = "io_uring, NVMe passthru with FDP placement, and a KV-cache block store for the JVM.",
        subcommands = {RunCommand.class, EnginesCommand.class, BenchCommand.class, FdpCommand.class, InspectCommand.class, SelftestCommand.class,
                SimulateCommand.class, WafCommand.class,
                CommandLine.HelpCommand.class},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:success", "1:a check failed (e.g. bytes read back differ)", "2:bad arguments",
                "3:an I/O or setup error (the message names the call and the errno)"})
public final class FdpblockCommand implements Runnable {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        CommandLine cl = new CommandLine(new FdpblockCommand());
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("fdpblock: " + ex.getMessage());
            if (System.getenv("FDPBLOCK_DEBUG") != null) {
                ex.printStackTrace(commandLine.getErr());
            }
            return ex instanceof IllegalArgumentException ? 2 : 3;
        });
        System.exit(cl.execute(args));
    }
}
