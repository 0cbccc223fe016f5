// Four threads that take turns in one synchronized block, for hone diagnose's Java lock test:
// most of their time is spent waiting to enter it. Usage: java MonitorContend SECONDS
public class MonitorContend {
    static final Object LEDGER = new Object();
    static long total;

    static long post(long x) {
        for (int i = 0; i < 20_000; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        for (int t = 0; t < 4; t++) {
            Thread poster = new Thread(() -> {
                long x = 1;
                while (true) {
                    synchronized (LEDGER) {
                        x = post(x);
                        total += x;
                    }
                }
            }, "ledger-poster-thread-" + t);  // longer than a kernel thread name (15)
            poster.setDaemon(true);
            poster.start();
        }
        Thread.sleep(seconds * 1000);
    }
}
