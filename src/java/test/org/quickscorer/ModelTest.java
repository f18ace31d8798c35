package org.quickscorer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/** The binding against the scores Python gives (src/java/test/make_fixtures.py writes them). */
class ModelTest {
    static final Path FIXTURES = Paths.get(System.getProperty("quickscorer.fixtures"));

    static Stream<String> models() throws IOException {
        try (Stream<Path> s = Files.list(FIXTURES)) {
            return s.filter(Files::isDirectory).map(p -> p.getFileName().toString()).sorted()
                    .toList().stream();
        }
    }

    static ByteBuffer read(String model, String file) throws IOException {
        return ByteBuffer.wrap(Files.readAllBytes(FIXTURES.resolve(model).resolve(file)))
                .order(ByteOrder.LITTLE_ENDIAN);
    }

    static float[] floats(ByteBuffer b) {
        float[] out = new float[b.remaining() / 4];
        b.asFloatBuffer().get(out);
        return out;
    }

    static double[] doubles(ByteBuffer b) {
        double[] out = new double[b.remaining() / 8];
        b.asDoubleBuffer().get(out);
        return out;
    }

    static int[] ints(ByteBuffer b) {
        int[] out = new int[b.remaining() / 4];
        b.asIntBuffer().get(out);
        return out;
    }

    static String qsm(String model) {
        return FIXTURES.resolve(model).resolve("model.qsm").toString();
    }

    @ParameterizedTest
    @MethodSource("models")
    void scoresArePythonsBitForBit(String name) throws IOException {
        float[] rows = floats(read(name, "rows.f32"));
        try (Model m = Model.open(qsm(name))) {
            int n = rows.length / m.numFeatures();
            assertEquals(0, rows.length % m.numFeatures());
            // assertArrayEquals on doubles compares their bits
            assertArrayEquals(doubles(read(name, "scores.f64")), m.predict(rows, n, 1));
            assertArrayEquals(doubles(read(name, "scores.f64")), m.predict(rows, n, 3));
            assertArrayEquals(doubles(read(name, "raw.f64")), m.predict(rows, n, 2, true));
            assertArrayEquals(ints(read(name, "leaves.i32")), m.predictLeaf(rows, n, 2));
            double[] wide = new double[rows.length];
            for (int i = 0; i < rows.length; i++) {
                wide[i] = rows[i];
            }
            assertArrayEquals(doubles(read(name, "scores64.f64")), m.predict(wide, n, 1, false));
            // one row at a time, as a per-document ranker calls it
            int k = m.numOutputs();
            double[] want = doubles(read(name, "scores.f64"));
            for (int i = 0; i < n; i += 37) {
                float[] row = Arrays.copyOfRange(rows, i * m.numFeatures(),
                        (i + 1) * m.numFeatures());
                assertArrayEquals(Arrays.copyOfRange(want, i * k, (i + 1) * k),
                        m.predict(row, 1, 1));
            }
        }
    }

    @ParameterizedTest
    @MethodSource("models")
    void aModelFromBytesScoresAsItsFile(String name) throws IOException {
        float[] rows = floats(read(name, "rows.f32"));
        byte[] data = Files.readAllBytes(Paths.get(qsm(name)));
        try (Model a = Model.fromBytes(data); Model b = Model.open(qsm(name))) {
            int n = rows.length / a.numFeatures();
            assertArrayEquals(b.predict(rows, n, 1), a.predict(rows, n, 1));
        }
    }

    @Test
    void oneModelScoresFromManyThreads() throws Exception {
        String name = "lightgbm-multiclass";
        float[] rows = floats(read(name, "rows.f32"));
        double[] want = doubles(read(name, "scores.f64"));
        try (Model m = Model.open(qsm(name))) {
            int n = rows.length / m.numFeatures();
            ExecutorService pool = Executors.newFixedThreadPool(8);
            List<Future<Boolean>> calls = new ArrayList<>();
            for (int t = 0; t < 64; t++) {
                calls.add(pool.submit(() -> Arrays.equals(want, m.predict(rows, n, 2))));
            }
            for (Future<Boolean> f : calls) {
                assertTrue(f.get());
            }
            pool.shutdown();
        }
    }

    @Test
    void badFilesAndCallsThrowClearErrors() throws IOException {
        QuickScorerException absent = assertThrows(QuickScorerException.class,
                () -> Model.open(FIXTURES.resolve("absent.qsm").toString()));
        assertEquals(QuickScorerException.IO, absent.status());
        assertTrue(absent.getMessage().contains("No such file"), absent.getMessage());
        byte[] data = Files.readAllBytes(Paths.get(qsm("lightgbm-binary")));
        QuickScorerException cut = assertThrows(QuickScorerException.class,
                () -> Model.fromBytes(Arrays.copyOf(data, data.length / 2)));
        assertEquals(QuickScorerException.FORMAT, cut.status());
        assertTrue(cut.getMessage().contains("truncated"), cut.getMessage());
        byte[] flipped = data.clone();
        flipped[flipped.length / 2] ^= 0x40;
        QuickScorerException damaged = assertThrows(QuickScorerException.class,
                () -> Model.fromBytes(flipped));
        assertTrue(damaged.getMessage().contains("section"), damaged.getMessage());
        Model m = Model.open(qsm("lightgbm-binary"));
        assertThrows(IllegalArgumentException.class, () -> m.predict(new float[3], 1, 1));
        assertThrows(IllegalArgumentException.class, () -> m.predict(new float[0], -1, 1));
        assertThrows(IllegalArgumentException.class, () -> m.predict((float[]) null, 0, 1));
        assertEquals(0, m.predict(new float[0], 0, 1).length);
        m.close();
        m.close();
        assertThrows(IllegalStateException.class,
                () -> m.predict(new float[m.numFeatures()], 1, 1));
        assertTrue(Model.version().matches("\\d+\\.\\d+.*"), Model.version());
    }
}
