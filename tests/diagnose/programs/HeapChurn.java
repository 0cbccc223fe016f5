// A live set near the heap's limit, replaced piece by piece: the collector runs all the time.
// Usage: java -Xmx64m HeapChurn SECONDS LIVE_MB
public class HeapChurn {
    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 10;
        int liveMb = args.length > 1 ? Integer.parseInt(args[1]) : 50;
        int slots = liveMb * 1024;  // 1 KB objects
        byte[][] live = new byte[slots][];
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        java.util.Random random = new java.util.Random(1);
        long sum = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                byte[] block = new byte[1024];
                block[0] = (byte) i;
                live[random.nextInt(slots)] = block;
                sum += block[0];
            }
        }
        System.out.println(sum);
    }
}
