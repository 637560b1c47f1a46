// A JVM service as lockwarden's users run one: it takes a lock with Apache Curator's InterProcessMutex
// (the recipe, unchanged) and writes each hold to a log it shares with lockwarden sessions.
//   java CuratorContender <connect string> <lock path> <name> <log file> <holds> <hold ms> <pause ms>
// It prints "asking <n>" before it asks for its n-th hold and "held <n>" once it holds, so a test
// can act while Curator waits or holds.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorContender {
  public static void main(String[] args) throws Exception {
    String connect = args[0], path = args[1], name = args[2];
    Path log = Path.of(args[3]);
    int holds = Integer.parseInt(args[4]);
    long holdMs = Long.parseLong(args[5]), pauseMs = Long.parseLong(args[6]);
    Random random = new Random();
    try (CuratorFramework client = CuratorFrameworkFactory.newClient(connect, new ExponentialBackoffRetry(200, 10))) {
      client.start();
      client.blockUntilConnected();
      InterProcessMutex mutex = new InterProcessMutex(client, path);
      for (int i = 1; i <= holds; i++) {
        System.out.println("asking " + i);
        System.out.flush();
        mutex.acquire();
        try {
          // Appended (O_APPEND) while holding: the log's order is the holds' order.
          append(log, "acquired " + name);
          System.out.println("held " + i);
          System.out.flush();
          Thread.sleep(holdMs);
          append(log, "released " + name);
        } finally {
          mutex.release();
        }
        if (pauseMs > 0) Thread.sleep(pauseMs / 2 + random.nextInt((int) pauseMs));
      }
    }
  }

  private static void append(Path log, String line) throws Exception {
    Files.write(log, (line + "\n").getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }
}
