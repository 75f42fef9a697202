package io.fdpblock.docs;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The README's Java examples as code that compiles and runs. The rules, which README authors rely on:
 * <ul>
 *   <li>Every fenced block opened with {@code ```java} is an example; other fences are not looked at.</li>
 *   <li>An example is the body of a method {@code run() throws Exception} of a class extending
 *       {@link ReadmeExample}, in a file that imports {@link #IMPORTS}. Its {@code import} lines move to
 *       the top of that file (so an example may import what the list lacks, or settle an ambiguous
 *       name). Local classes and records are fine; methods and fields are not.</li>
 *   <li>It may use the placeholders of {@link ReadmeExample} without declaring them: {@code keys},
 *       {@code chunks}, {@code payload}, {@code destination}, {@code kvRank}, {@code chunkHash}.</li>
 *   <li>Absolute paths under {@code /var /tmp /srv /data /mnt /home /opt} become a file of the same
 *       name in a fresh directory on a disk-backed file system (O_DIRECT works there); nothing is
 *       created for it. {@code /dev/...} paths are left alone.</li>
 *   <li>Every example is compiled; it also runs unless a line contains {@value #COMPILE_ONLY}, for
 *       an example that cannot run on a test machine (e.g. it needs an NVMe namespace): the README says
 *       so next to such a block.</li>
 * </ul>
 */
public final class ReadmeExamples {
    private ReadmeExamples() {}

    /** The marker that keeps an example from running (it is still compiled). */
    public static final String COMPILE_ONLY = "readme-test: compile only";

    /** What every example's file imports. */
    public static final List<String> IMPORTS = List.of(
            "io.fdpblock.l2.*", "io.fdpblock.core.*", "io.fdpblock.device.*", "io.fdpblock.nvme.*",
            "io.fdpblock.uring.*", "io.fdpblock.linux.*", "io.fdpblock.controller.*", "io.fdpblock.adapter.*",
            "io.fdpblock.cache.*", "io.fdpblock.core.tools.*",
            "java.io.*", "java.lang.foreign.*", "java.nio.file.*", "java.time.*", "java.util.*",
            "java.util.concurrent.*");

    private static final Pattern FENCE_OPEN = Pattern.compile("^(\\s*)```java\\s*$");
    private static final Pattern FENCE = Pattern.compile("^\\s*```.*$");
    private static final Pattern IMPORT = Pattern.compile("^\\s*import\\s+(static\\s+)?[\\w.*]+\\s*;\\s*$");
    private static final Pattern HOST_PATH =
            Pattern.compile("/(?:var|tmp|srv|data|mnt|home|opt)(?:/[A-Za-z0-9._-]+)+");

    /**
     * One example: the document it is in (e.g. {@code README.md}, {@code docs/store.md}), where it starts
     * there (1-based line of its first code line) and its code.
     */
    public record Example(String document, int firstLine, List<String> lines, boolean compileOnly) {
        public String className() {
            return document.replaceAll("\\.md$", "").replaceAll("[^A-Za-z0-9]", "_") + "_line" + firstLine;
        }

        public String name() {
            return where(firstLine) + (compileOnly ? " (compile only)" : "");
        }

        String where(long line) {
            return document + " line " + line;
        }
    }

    /** The examples of README.md's text, in order. */
    public static List<Example> extract(String readme) {
        return extract("README.md", readme);
    }

    /** The examples of a document's text, in order; {@code document} names it in every message. */
    public static List<Example> extract(String document, String readme) {
        List<Example> out = new ArrayList<>();
        String[] lines = readme.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            Matcher open = FENCE_OPEN.matcher(lines[i]);
            if (!open.matches()) {
                continue;
            }
            int indent = open.group(1).length();
            int first = i + 1;
            List<String> body = new ArrayList<>();
            int j = first;
            while (j < lines.length && !FENCE.matcher(lines[j]).matches()) {
                String l = lines[j];
                int strip = 0;
                while (strip < indent && strip < l.length() && l.charAt(strip) == ' ') {
                    strip++;
                }
                body.add(l.substring(strip));
                j++;
            }
            if (j == lines.length) {
                throw new IllegalArgumentException(document + " line " + (i + 1) + ": ```java block is never closed");
            }
            boolean compileOnly = body.stream().anyMatch(l -> l.contains(COMPILE_ONLY));
            out.add(new Example(document, first + 1, List.copyOf(body), compileOnly));
            i = j;
        }
        return out;
    }

    /**
     * The compilation unit of an example. Its lines match the README's: line {@code n} of the body is
     * line {@link #HEADER_LINES} + n of the file, import lines hoisted (left blank in the body).
     *
     * @param dir where the example's host paths point (see the class comment)
     */
    public static String source(Example e, Path dir) {
        List<String> imports = new ArrayList<>();
        List<String> body = new ArrayList<>();
        for (String l : e.lines()) {
            if (IMPORT.matcher(l).matches()) {
                imports.add(l.strip());
                body.add("");
            } else {
                body.add(HOST_PATH.matcher(l).replaceAll(m -> Matcher.quoteReplacement(
                        dir.resolve(Path.of(m.group()).getFileName()).toString())));
            }
        }
        StringBuilder s = new StringBuilder();
        s.append("package readme;");
        for (String i : IMPORTS) {
            s.append(" import ").append(i).append(';');
        }
        for (String i : imports) {
            s.append(' ').append(i);
        }
        s.append('\n');
        s.append("public final class ").append(e.className()).append(" extends ")
                .append(ReadmeExample.class.getName()).append(" {\n");
        s.append("@Override public void run() throws Exception {\n");
        for (String l : body) {
            s.append(l).append('\n');
        }
        s.append("}\n}\n");
        return s.toString();
    }

    /** Lines before an example's first line in {@link #source}. */
    public static final int HEADER_LINES = 3;

    /** What compiling examples gave: each example's errors (empty when it compiled), and its classes. */
    public record Compiled(Map<Example, List<String>> errors, Path classes) {
        public List<String> errorsOf(Example e) {
            return errors.getOrDefault(e, List.of());
        }

        /** A new instance of the example's class (its loader sees the test class path). */
        public ReadmeExample instantiate(Example e) throws ReflectiveOperationException, IOException {
            URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()},
                    ReadmeExample.class.getClassLoader());
            return (ReadmeExample) loader.loadClass("readme." + e.className()).getDeclaredConstructor().newInstance();
        }
    }

    /**
     * Compiles the examples in-process (javax.tools) against the test class path, into {@code work}.
     * An example's errors name its README line: {@code README.md line N: message}.
     */
    public static Compiled compile(List<Example> examples, Path work, Path hostPathDir) throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) {
            throw new IllegalStateException("no system Java compiler: run the tests on a JDK, not a JRE");
        }
        Path src = Files.createDirectories(work.resolve("src/readme"));
        Path classes = Files.createDirectories(work.resolve("classes"));
        Map<Path, Example> byFile = new LinkedHashMap<>();
        for (Example e : examples) {
            Path f = src.resolve(e.className() + ".java");
            Files.writeString(f, source(e, hostPathDir), StandardCharsets.UTF_8);
            byFile.put(f.toAbsolutePath().normalize(), e);
        }
        Map<Example, List<String>> errors = new LinkedHashMap<>();
        if (examples.isEmpty()) {
            return new Compiled(errors, classes);
        }
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fm = javac.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
            List<String> options = List.of("-proc:none", "-d", classes.toString(),
                    "-cp", System.getProperty("java.class.path"), "--release", "25", "-encoding", "UTF-8");
            javac.getTask(null, fm, diagnostics, options, null, fm.getJavaFileObjectsFromPaths(byFile.keySet())).call();
        }
        for (Diagnostic<? extends JavaFileObject> d : diagnostics.getDiagnostics()) {
            if (d.getKind() != Diagnostic.Kind.ERROR) {
                continue;
            }
            Example e = d.getSource() == null ? null
                    : byFile.get(Path.of(d.getSource().toUri()).toAbsolutePath().normalize());
            if (e == null) {
                throw new IllegalStateException("javac error outside the examples: " + d.getMessage(Locale.ROOT));
            }
            long readmeLine = e.firstLine() + d.getLineNumber() - HEADER_LINES - 1;
            errors.computeIfAbsent(e, k -> new ArrayList<>())
                    .add(e.where(readmeLine) + ": " + d.getMessage(Locale.ROOT));
        }
        return new Compiled(errors, classes);
    }
}
