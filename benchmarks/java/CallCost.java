import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.quickscorer.Model;

/**
 * The time of one predict call from Java (benchmarks/capi.py --java runs it):
 * {@code java CallCost MODEL.qsm ROWS.f32 BATCH CALLS ROUNDS} prints, per round, the seconds a
 * call took, CALLS calls of BATCH float32 rows each (windows of ROWS taken in turn).
 */
public final class CallCost {
    public static void main(String[] args) throws Exception {
        byte[] raw = Files.readAllBytes(Paths.get(args[1]));
        float[] all = new float[raw.length / 4];
        ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(all);
        int batch = Integer.parseInt(args[2]);
        int calls = Integer.parseInt(args[3]);
        int rounds = Integer.parseInt(args[4]);
        try (Model m = Model.open(args[0])) {
            int f = m.numFeatures();
            int nRows = all.length / f;
            int windows = nRows / batch;
            float[][] rows = new float[windows][];
            for (int w = 0; w < windows; w++) {
                rows[w] = java.util.Arrays.copyOfRange(all, w * batch * f, (w + 1) * batch * f);
            }
            double sink = 0;
            for (int r = -2; r < rounds; r++) {      // two rounds of warm-up (the JIT)
                long t0 = System.nanoTime();
                for (int c = 0; c < calls; c++) {
                    sink += m.predict(rows[c % windows], batch, 1)[0];
                }
                long t1 = System.nanoTime();
                if (r >= 0) {
                    System.out.println((t1 - t0) * 1e-9 / calls);
                }
            }
            if (sink == 42.0) {
                System.out.println("");
            }
        }
    }
}
