// Records with chosen CreateTime timestamps, for tests/kafka/test_consumer_seek_ts.c; compiled at
// test time against the testkit's Kafka jars. Args: BOOTSTRAP TOPIC FROM COUNT BASE_MS STEP_MS.
// Record i (FROM <= i < FROM + COUNT) goes to partition 0 with value "v<i>" and timestamp
// BASE_MS + i * STEP_MS; one flush at the end, so most of them share a batch (the broker then
// has to find the timestamp inside a batch, not just between batches).
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public class TsProducer {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("acks", "all");
        p.put("linger.ms", "20");
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        int from = Integer.parseInt(a[2]), count = Integer.parseInt(a[3]);
        long base = Long.parseLong(a[4]), step = Long.parseLong(a[5]);
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            for (int i = from; i < from + count; i++)
                pr.send(new ProducerRecord<>(a[1], 0, base + i * step, null, "v" + i));
            pr.flush();
        }
    }
}
