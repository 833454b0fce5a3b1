// Java consumer peer for perf/run's latency case (kafka-clients, the release perf/run's Java rows
// use). Assigns every partition of a topic being produced, from the beginning, no group, and for
// each of the first N records takes poll time - CreateTime; prints one JSON line with p50/p99/p99.9
// like the other peers' latency mode. Every value is touched (its bytes summed) as they do.
//
//   java -cp KAFKA-JARS:DIR LatencyConsumer BROKERS TOPIC N low|default WARMUP
//
// low: fetch.min.bytes 1 and fetch.max.wait.ms 10; default: the client's own fetch settings. The
// first WARMUP records (the producer's warm-up) are left out of the percentiles.
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class LatencyConsumer {
    public static void main(String[] args) {
        if (args.length != 5 || !(args[3].equals("low") || args[3].equals("default"))) {
            System.err.println("usage: LatencyConsumer BROKERS TOPIC N low|default WARMUP");
            System.exit(2);
        }
        int want = Integer.parseInt(args[2]);
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        if (args[3].equals("low")) {
            p.put("fetch.min.bytes", "1");
            p.put("fetch.max.wait.ms", "10");
        }
        long[] lat = new long[want];
        int n = 0;
        long sum = 0;
        long start = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(args[1]))
                tps.add(new TopicPartition(pi.topic(), pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            long lastData = System.nanoTime();
            while (n < want) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(1000));
                if (recs.isEmpty()) {
                    if (System.nanoTime() - lastData > 120_000_000_000L) {
                        System.err.println("LatencyConsumer: no record for 120 s after " + n);
                        System.exit(1);
                    }
                    continue;
                }
                lastData = System.nanoTime();
                long nowUs = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    byte[] v = r.value();
                    if (v != null)
                        for (byte b : v)
                            sum += b & 0xff;
                    if (n < want)
                        lat[n++] = nowUs - r.timestamp() * 1000;
                }
            }
        }
        double wall = (System.nanoTime() - start) / 1e9;
        // In delivery order: the producer's warm-up; a warm-up of every record leaves no
        // percentiles.
        int w = Math.max(0, Math.min(Integer.parseInt(args[4]), n));
        int m = n - w;
        Arrays.sort(lat, w, n);
        StringBuilder line = new StringBuilder(String.format(
            "{\"client\":\"java\",\"version\":\"%s\",\"mode\":\"assign\",\"topic\":\"%s\","
                + "\"records\":%d,\"value_sum\":%d,\"wall_s\":%.3f",
            org.apache.kafka.common.utils.internals.AppInfoParser.getVersion(), args[1], n, sum, wall));
        if (m > 0)
            line.append(String.format(
                ",\"lat_records\":%d,\"lat_p50_ms\":%.2f,\"lat_p99_ms\":%.2f,\"lat_p999_ms\":%.2f",
                m, lat[w + m / 2] / 1000.0, lat[w + (int) ((long) m * 99 / 100)] / 1000.0,
                lat[w + (int) ((long) m * 999 / 1000)] / 1000.0));
        System.out.println(line.append('}'));
    }
}
