// A transactional producer for tests/kafka/test_consumer_txn.c, compiled at test time against the
// testkit's Kafka jars: args BOOTSTRAP TOPIC TXN_ID. Ten transactions of 20 records to partition
// 0; even ones commit ("c-T-I" values), odd ones abort ("a-T-I").
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

public class TxnProducer {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("transactional.id", a[2]);
        p.put("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
        try (KafkaProducer<String, String> pr = new KafkaProducer<>(p)) {
            pr.initTransactions();
            for (int t = 0; t < 10; t++) {
                pr.beginTransaction();
                for (int i = 0; i < 20; i++)
                    pr.send(new ProducerRecord<>(a[1], 0, null, (t % 2 == 0 ? "c-" : "a-") + t + "-" + i));
                pr.flush();
                if (t % 2 == 0)
                    pr.commitTransaction();
                else
                    pr.abortTransaction();
            }
        }
    }
}
