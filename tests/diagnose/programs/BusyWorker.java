// One busy thread ("hot-worker") among idle ones, for hone diagnose's hot-thread test.
// Usage: java BusyWorker SECONDS
public class BusyWorker {
    static volatile long sink;

    static long spin(long seed) {
        long x = seed;
        for (int i = 0; i < 1_000_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        Object never = new Object();
        for (int i = 0; i < 4; i++) {
            Thread idle = new Thread(() -> {
                synchronized (never) {
                    try {
                        never.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "idle-worker-" + i);
            idle.setDaemon(true);
            idle.start();
        }
        Thread hot = new Thread(() -> {
            long x = 1;
            while (true) {
                x = spin(x);
                sink = x;
            }
        }, "hot-worker");
        hot.setDaemon(true);
        hot.start();
        Thread.sleep(seconds * 1000);
    }
}
