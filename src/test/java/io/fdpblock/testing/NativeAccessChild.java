package io.fdpblock.testing;

import io.fdpblock.linux.EventFd;
import io.fdpblock.linux.NativeLibrary;
import io.fdpblock.uring.Uring;

/**
 * Run in a child JVM by {@code io.fdpblock.linux.NativeAccessTest}, with or without native access:
 * prints what each entry point reports, one {@code key=value} line each, and always exits 0. It lives
 * outside the library's packages so that it also runs from the class path next to the module
 * {@code io.fdpblock} on the module path.
 */
public final class NativeAccessChild {
    private NativeAccessChild() {}

    public static void main(String[] args) {
        System.out.println("module=" + NativeLibrary.class.getModule().getName());
        System.out.println("loaded=" + NativeLibrary.isLoaded());
        Throwable f = NativeLibrary.loadFailure();
        System.out.println("loadFailure=" + (f == null ? "" : f.getClass().getSimpleName() + ": " + f.getMessage()));
        Throwable u = Uring.unavailabilityCause();
        System.out.println("uringCause=" + (u == null ? "" : u.getMessage()));
        try (EventFd e = EventFd.create()) {
            System.out.println("eventfd=ok " + (e.fd() >= 0));
        } catch (Throwable t) { // ExceptionInInitializerError of a class that touches the bindings
            StringBuilder chain = new StringBuilder();
            for (Throwable c = t; c != null; c = c.getCause()) {
                chain.append(chain.isEmpty() ? "" : " <- ").append(c.getClass().getSimpleName()).append(": ")
                        .append(c.getMessage());
            }
            System.out.println("eventfd=" + chain);
        }
    }
}
