package org.quickscorer;

import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A prepared model file (.qsm) opened by libquickscorer, scored from Java with no Python.
 *
 * <pre>{@code
 * try (Model model = Model.open("model.qsm")) {
 *     double[] scores = model.predict(rows, nRows, 1);   // rows: nRows x numFeatures()
 * }
 * }</pre>
 *
 * <p>Rows are row-major, {@link #numFeatures()} values each, NaN a missing value; scores are
 * {@link #numOutputs(boolean)} a row, the same bit for bit as quickscorer's Python {@code
 * predict}. One model may be used by any number of threads at once; {@link #close()} waits
 * for the calls in progress and later calls throw {@link IllegalStateException}.
 *
 * <p>The native code is {@code libquickscorer_jni}, loaded from the path in the system property
 * {@code quickscorer.jni} where it is set, else from {@code java.library.path}.
 */
public final class Model implements AutoCloseable {
    static {
        String path = System.getProperty("quickscorer.jni");
        if (path != null) {
            System.load(path);
        } else {
            System.loadLibrary("quickscorer_jni");
        }
    }

    private long handle;
    private final int nFeatures;
    private final int nOutputs;
    private final int nOutputsRaw;
    private final int nTrees;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

    private Model(long handle) {
        this.handle = handle;
        long[] counts = nativeCounts(handle);
        this.nFeatures = (int) counts[0];
        this.nOutputs = (int) counts[1];
        this.nOutputsRaw = (int) counts[2];
        this.nTrees = (int) counts[3];
    }

    /** Maps the prepared model file at {@code path} and checks it (qs_open). */
    public static Model open(String path) {
        if (path == null) {
            throw new IllegalArgumentException("path is null");
        }
        return new Model(nativeOpen(path));
    }

    /** Opens a prepared model file held in memory (qs_open_memory: the bytes are copied). */
    public static Model fromBytes(byte[] data) {
        if (data == null) {
            throw new IllegalArgumentException("data is null");
        }
        return new Model(nativeOpenMemory(data));
    }

    /** libquickscorer's version (quickscorer's). */
    public static String version() {
        return nativeVersion();
    }

    /** Columns of an input row. */
    public int numFeatures() {
        return nFeatures;
    }

    /** Scores a row of {@code predict}: the model's outputs (raw), or what its transform gives. */
    public int numOutputs(boolean rawScore) {
        return rawScore ? nOutputsRaw : nOutputs;
    }

    /** Scores a row of {@code predict} without rawScore. */
    public int numOutputs() {
        return nOutputs;
    }

    /** Trees: the values a row of {@link #predictLeaf}. */
    public int numTrees() {
        return nTrees;
    }

    /** The outputs (probabilities, ...) of nRows float32 rows, on nThreads threads. */
    public double[] predict(float[] rows, int nRows, int nThreads) {
        return predict(rows, nRows, nThreads, false);
    }

    /** The outputs, or with rawScore the margins, of nRows float32 rows. */
    public double[] predict(float[] rows, int nRows, int nThreads, boolean rawScore) {
        checkRows(rows == null ? -1 : rows.length, nRows);
        double[] out = new double[Math.multiplyExact(nRows, numOutputs(rawScore))];
        lock.readLock().lock();
        try {
            nativePredict(live(), rows, nRows, rawScore ? 1 : 0, nThreads, out);
        } finally {
            lock.readLock().unlock();
        }
        return out;
    }

    /** The same for float64 rows. */
    public double[] predict(double[] rows, int nRows, int nThreads, boolean rawScore) {
        checkRows(rows == null ? -1 : rows.length, nRows);
        double[] out = new double[Math.multiplyExact(nRows, numOutputs(rawScore))];
        lock.readLock().lock();
        try {
            nativePredictF64(live(), rows, nRows, rawScore ? 1 : 0, nThreads, out);
        } finally {
            lock.readLock().unlock();
        }
        return out;
    }

    /** Each tree's exit leaf (in-order within its tree) for nRows float32 rows: numTrees() a row. */
    public int[] predictLeaf(float[] rows, int nRows, int nThreads) {
        checkRows(rows == null ? -1 : rows.length, nRows);
        int[] out = new int[Math.multiplyExact(nRows, nTrees)];
        lock.readLock().lock();
        try {
            nativePredictLeaf(live(), rows, nRows, nThreads, out);
        } finally {
            lock.readLock().unlock();
        }
        return out;
    }

    /** Releases the model once the calls in progress end. */
    @Override
    public void close() {
        lock.writeLock().lock();
        try {
            if (handle != 0) {
                nativeClose(handle);
                handle = 0;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    private long live() {
        if (handle == 0) {
            throw new IllegalStateException("the model is closed");
        }
        return handle;
    }

    private void checkRows(int length, int nRows) {
        if (length < 0) {
            throw new IllegalArgumentException("rows is null");
        }
        if (nRows < 0) {
            throw new IllegalArgumentException("nRows is " + nRows);
        }
        if ((long) nRows * nFeatures > length) {
            throw new IllegalArgumentException(nRows + " rows of " + nFeatures
                    + " features need " + (long) nRows * nFeatures + " values, rows has "
                    + length);
        }
    }

    private static native String nativeVersion();

    private static native long nativeOpen(String path);

    private static native long nativeOpenMemory(byte[] data);

    private static native long[] nativeCounts(long handle);

    private static native void nativePredict(long handle, float[] rows, int nRows, int flags,
            int nThreads, double[] out);

    private static native void nativePredictF64(long handle, double[] rows, int nRows,
            int flags, int nThreads, double[] out);

    private static native void nativePredictLeaf(long handle, float[] rows, int nRows,
            int nThreads, int[] out);

    private static native void nativeClose(long handle);
}
