package org.quickscorer;

/** A failed call of libquickscorer: its status (quickscorer.h's QS_E_ codes) and message. */
public class QuickScorerException extends RuntimeException {
    /** A NULL pointer, a negative count, an unknown flag. */
    public static final int ARGUMENT = 1;
    /** The file could not be opened, read or mapped. */
    public static final int IO = 2;
    /** Not a sound model file: the message names the section at fault. */
    public static final int FORMAT = 3;
    /** An allocation failed. */
    public static final int MEMORY = 4;
    /** A model or request the library does not score. */
    public static final int UNSUPPORTED = 5;
    /** A worker thread could not be started. */
    public static final int THREAD = 6;

    private static final long serialVersionUID = 1L;
    private final int status;

    public QuickScorerException(int status, String message) {
        super(message);
        this.status = status;
    }

    /** The library's status code (one of the constants above). */
    public int status() {
        return status;
    }
}
