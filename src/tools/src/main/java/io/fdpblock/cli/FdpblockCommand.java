package io.fdpblock.cli;

import io.fdpblock.core.StoreRefusedException;

import picocli.CommandLine.Command;
import picocli.CommandLine;

import java.io.UncheckedIOException;

/** The {@code fdpblock} command line. */
@Command(name = "fdpblock", mixinStandardHelpOptions = true, version = "fdpblock 0.1.0",
        description = "io_uring, NVMe passthru with FDP placement, and a KV-cache block store for the JVM.",
        subcommands = {RunCommand.class, EnginesCommand.class, BenchCommand.class, BenchScaleCommand.class, FdpCommand.class, InspectCommand.class,
                MigrateCommand.class, SelftestCommand.class, SimulateCommand.class, WafCommand.class,
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
        int code;
        try {
            code = commandLine().execute(args);
        } catch (OutOfMemoryError e) { // picocli hands only Exceptions to the handler
            System.err.println("fdpblock: " + Cli.describe(e));
            code = 3;
        }
        System.exit(code);
    }

    /**
     * The command line with its error handling: an exception a command lets through is printed as one
     * line ({@code FDPBLOCK_DEBUG=1} adds the stack trace) and mapped to the documented exit code: 2
     * for a bad argument ({@link IllegalArgumentException}), 3 for an I/O or setup error.
     */
    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new FdpblockCommand());
        // A bad argument: the message and where to read more, not the whole usage (exit 2).
        cl.setParameterExceptionHandler((ex, args) -> {
            CommandLine c = ex.getCommandLine();
            c.getErr().println("fdpblock: " + ex.getMessage());
            if (!CommandLine.UnmatchedArgumentException.printSuggestions(ex, c.getErr())) {
                c.getErr().println("see: fdpblock " + commandPath(c) + "--help");
            }
            return 2;
        });
        cl.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("fdpblock: " + describe(ex));
            for (Throwable t = ex; t != null; t = t.getCause()) {
                if (t instanceof StoreRefusedException) { // every reason is one that "format" overrides
                    commandLine.getErr().println("fdpblock: from the command line, \"format\": true is --format (run);"
                            + " fdpblock inspect DEVICE shows what the device holds first");
                    break;
                }
            }
            if (System.getenv("FDPBLOCK_DEBUG") != null) {
                ex.printStackTrace(commandLine.getErr());
            }
            return ex instanceof IllegalArgumentException ? 2 : 3;
        });
        return cl;
    }

    /** "run " for `fdpblock run`, "" for the top level. */
    private static String commandPath(CommandLine c) {
        String path = c.getCommandSpec().qualifiedName(" ");
        int space = path.indexOf(' ');
        return space < 0 ? "" : path.substring(space + 1) + " ";
    }

    private static String describe(Exception ex) {
        if (ex instanceof IllegalCallerException) {
            return "native access is not enabled for fdpblock (" + ex.getMessage() + "): run java with"
                    + " --enable-native-access=ALL-UNNAMED, as the launcher target/fdpblock does";
        }
        if (ex instanceof UncheckedIOException u && u.getCause() != null) {
            return Cli.describe(u.getCause());
        }
        return Cli.describe(ex);
    }
}
