package io.fdpblock.cli;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * Test child: runs one `fdpblock` command per stdin line (arguments separated by tabs) in this JVM,
 * printing each exit code on its own line, so that a test can check what a batch of commands leaves
 * in a private java.io.tmpdir.
 */
public final class CliBatch {
    private CliBatch() {}

    public static void main(String[] ignored) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            int code = FdpblockCommand.commandLine().execute(line.split("\t"));
            System.out.println("exit " + code);
            System.out.flush();
        }
    }
}
