package io.fdpblock.linux;

import java.io.IOException;
import java.nio.file.Path;

/** A device or file that another owner holds: only one store may have a device open at a time. */
public final class DeviceInUseException extends IOException {
    private static final long serialVersionUID = 1L;

    private final transient Path path;

    public DeviceInUseException(Path path, String why) {
        super(path + " is in use: " + why + "; close the other store first, or use another device");
        this.path = path;
    }

    public Path path() {
        return path;
    }
}
