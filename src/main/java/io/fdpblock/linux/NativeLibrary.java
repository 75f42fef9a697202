package io.fdpblock.linux;

import io.fdpblock.ffi.FdpNative;

import java.io.IOException;

/**
 * The native side of fdpblock: the jextract bindings ({@code io.fdpblock.ffi}), which look up
 * liburing.so.2 and libc when they are first used. Loaded once; if that fails, the cause is recorded
 * and every later use reports the same cause (like Netty's availability probes), in words that say
 * what to do:
 * <ul>
 *   <li>native access denied: the JVM refused this module's FFM calls ({@link IllegalCallerException},
 *       e.g. {@code --illegal-native-access=deny} without {@code --enable-native-access}); the message
 *       names the flag for the way fdpblock was loaded ({@link #enableNativeAccessOption()});</li>
 *   <li>anything else: liburing.so.2 (or a libc symbol) could not be loaded.</li>
 * </ul>
 * Classes whose static initialisers touch the bindings call {@link #ensureLoaded()} first, so their
 * initialisation error carries this message instead of the JDK's bare one.
 */
public final class NativeLibrary {
    private NativeLibrary() {}

    private static final class Load {
        static final Throwable FAILURE = load();

        private static Throwable load() {
            try {
                FdpNative.IORING_OP_NOP(); // initialises the bindings, which look up liburing.so.2
                FdpNative.io_uring_queue_init_params$address();
                return null;
            } catch (Throwable t) {
                IllegalCallerException denied = find(t, IllegalCallerException.class);
                if (denied != null) {
                    return new IllegalCallerException("native access is not enabled for " + moduleName()
                            + ", so the JVM refused to load fdpblock's bindings: start java with "
                            + enableNativeAccessOption() + " (" + denied.getMessage() + ")", t);
                }
                return new IOException("liburing.so.2 could not be loaded: install it (Debian: apt-get install"
                        + " liburing2, or `make deps`)", t);
            }
        }

        private static <T extends Throwable> T find(Throwable t, Class<T> type) {
            for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
                if (type.isInstance(c)) {
                    return type.cast(c);
                }
            }
            return null;
        }
    }

    /**
     * The option that grants fdpblock native access as it is loaded here:
     * {@code --enable-native-access=io.fdpblock} on the module path,
     * {@code --enable-native-access=ALL-UNNAMED} on the class path.
     */
    public static String enableNativeAccessOption() {
        Module m = NativeLibrary.class.getModule();
        return "--enable-native-access=" + (m.isNamed() ? m.getName() : "ALL-UNNAMED");
    }

    private static String moduleName() {
        Module m = NativeLibrary.class.getModule();
        return m.isNamed() ? "module " + m.getName() : "the class path (the unnamed module)";
    }

    public static boolean isLoaded() {
        return Load.FAILURE == null;
    }

    /**
     * @return why the bindings could not be loaded ({@link IllegalCallerException} when native access
     *         is denied, an {@link IOException} when the library is missing), or null when they are loaded
     */
    public static Throwable loadFailure() {
        return Load.FAILURE;
    }

    /**
     * Throws, unchecked, when the bindings could not be loaded: an {@link IllegalCallerException} naming
     * the {@code --enable-native-access} option, or an {@link IllegalStateException} saying to install
     * liburing; the recorded failure is the cause.
     */
    public static void ensureLoaded() {
        Throwable f = Load.FAILURE;
        if (f instanceof IllegalCallerException) {
            throw new IllegalCallerException(f.getMessage(), f);
        }
        if (f != null) {
            throw new IllegalStateException(f.getMessage(), f);
        }
    }
}
